package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testGatewaysLocal is the walkthrough's step "one name, the asking
// cluster's own gateway first": the walkthrough's GatewayDNS with
// locality Local, envoy endpoints in cluster-a and cluster-b, and
// kuard.<gatewaydns>.dev-team.gateways.xcc.test asked from both clusters'
// cluster DNS. Each gets its own gateway; cluster-a's answer moves to
// cluster-b's gateway while cluster-a's envoy has no ready endpoint or its
// Cluster is not Available, and comes back; with no gateway healthy,
// every one is answered. Everything it changes is undone at the end.
func testGatewaysLocal(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsA, dnsB := theLab.DNS[lab.ClusterA].ClusterDNSAddr, theLab.DNS[lab.ClusterB].ClusterDNSAddr
	gwA, gwB := theLab.Gateways[lab.ClusterA].IPs, theLab.Gateways[lab.ClusterB].IPs
	name := lab.GatewaysHost("kuard")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, w := range []*lab.Cluster{a, b} {
			if err := lab.DeleteGatewayEndpoints(ctx, w); err != nil {
				t.Error(err)
			}
		}
		if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, ""); err != nil {
			t.Error(err)
		}
		if err := setLocality(ctx, ""); err != nil {
			t.Error(err)
		}
	})

	// kubectl -n dev-team patch gatewaydns dev-team-gateway-dns --type merge -p '{"spec":{"locality":{"policy":"Local"}}}'
	if err := setLocality(ctx, "Local"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*lab.Cluster{a, b} {
		if err := lab.SetGatewayEndpoints(ctx, w, true); err != nil {
			t.Fatal(err)
		}
	}
	// Each cluster's DNS answers its own gateway.
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipv4(gwA)...)
	expect(t, dnsB, name, dns.TypeA, dns.RcodeSuccess, ipv4(gwB)...)
	expect(t, dnsB, name, dns.TypeAAAA, dns.RcodeSuccess, ipv6(gwB)...)
	expect(t, dnsA, name, dns.TypeAAAA, dns.RcodeSuccess) // NODATA: cluster-a's gateway is IPv4 only
	waitHealth(t, map[string]string{lab.ClusterA: "Healthy", lab.ClusterB: "Healthy"}, true, true)

	// cluster-a's envoy loses its ready endpoints: cluster-a's DNS answers
	// cluster-b's gateway, within the multi-cluster name's TTL of 5 s.
	if err := lab.SetGatewayEndpoints(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	took := expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipv4(gwB)...)
	t.Logf("endpoints unready -> cluster-a answers cluster-b's gateway after %s", took.Round(10*time.Millisecond))
	waitHealth(t, map[string]string{lab.ClusterA: "NoReadyEndpoints", lab.ClusterB: "Healthy"}, false, true)
	if err := lab.SetGatewayEndpoints(ctx, a, true); err != nil {
		t.Fatal(err)
	}
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipv4(gwA)...)

	// Cluster API says cluster-a is not available: it leaves.
	if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, "False"); err != nil {
		t.Fatal(err)
	}
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipv4(gwB)...)
	waitHealth(t, map[string]string{lab.ClusterA: "ClusterNotAvailable", lab.ClusterB: "Healthy"}, false, true)

	// No gateway healthy: every one is answered rather than none.
	if err := lab.SetGatewayEndpoints(ctx, b, false); err != nil {
		t.Fatal(err)
	}
	all := append(ipv4(gwA), ipv4(gwB)...)
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, all...)
	expect(t, dnsB, name, dns.TypeA, dns.RcodeSuccess, all...)
	waitHealth(t, map[string]string{lab.ClusterA: "ClusterNotAvailable", lab.ClusterB: "NoReadyEndpoints"}, true, true)

	// Both back.
	if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, "True"); err != nil {
		t.Fatal(err)
	}
	if err := lab.SetGatewayEndpoints(ctx, b, true); err != nil {
		t.Fatal(err)
	}
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipv4(gwA)...)
	expect(t, dnsB, name, dns.TypeA, dns.RcodeSuccess, ipv4(gwB)...)
}

// setLocality sets spec.locality.policy of the walkthrough's GatewayDNS;
// "" removes spec.locality.
func setLocality(ctx context.Context, policy string) error {
	patch := `{"spec":{"locality":null}}`
	if policy != "" {
		patch = fmt.Sprintf(`{"spec":{"locality":{"policy":%q}}}`, policy)
	}
	_, err := theLab.Management.Dynamic.Resource(lab.GatewayDNSGVR).Namespace(lab.ClusterNamespace).
		Patch(ctx, lab.GatewayDNSName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("set locality %q: %w", policy, err)
	}
	return nil
}

// waitHealth waits until the walkthrough GatewayDNS's status reports the
// health reasons want and whether cluster-a and cluster-b are answered.
func waitHealth(t *testing.T, want map[string]string, answeredA, answeredB bool) {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		got, err := lab.GatewayDNSHealth(ctx, theLab.Management, lab.ClusterNamespace, lab.GatewayDNSName)
		ok := err == nil && got[lab.ClusterA].Answered == answeredA && got[lab.ClusterB].Answered == answeredB
		for c, r := range want {
			ok = ok && got[c].Reason == r && got[c].Healthy == (r == "Healthy")
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status health: got %+v (%v), want %v answered a=%v b=%v", got, err, want, answeredA, answeredB)
		}
		time.Sleep(pollInterval)
	}
}
