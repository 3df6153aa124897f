package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testNames is the README's step "a name of your own": the walkthrough
// GatewayDNS with spec.names enabled, and a LoadBalancer Service shop/web
// annotated connectivity.tanzu.vmware.com/fqdn: web in cluster-a and in
// cluster-b. web.dev-team.names.xcc.test is one name answering both
// Services through each cluster's DNS (policy All), each cluster's own
// with Local, the other's when its own has no ready endpoint. A Service
// claiming another namespace's name is refused (status NameRefused and a
// Warning Event) and its name is not served. Everything it changes is
// undone at the end.
func testNames(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsA, dnsB := theLab.DNS[lab.ClusterA].ClusterDNSAddr, theLab.DNS[lab.ClusterB].ClusterDNSAddr
	const ns, ipA, ipB, ipEvil = "shop", "192.0.2.50", "198.51.100.50", "192.0.2.51"
	name := lab.NamesHost("web", lab.ClusterNamespace)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, w := range []*lab.Cluster{a, b} {
			if err := lab.DeleteNamespace(ctx, w, ns); err != nil {
				t.Error(err)
			}
		}
		if err := setNames(ctx, false); err != nil {
			t.Error(err)
		}
		if err := setLocality(ctx, ""); err != nil {
			t.Error(err)
		}
	})

	// kubectl -n dev-team patch gatewaydns dev-team-gateway-dns --type merge -p '{"spec":{"names":{"enabled":true}}}'
	if err := setNames(ctx, true); err != nil {
		t.Fatal(err)
	}
	// kubectl -n shop annotate service web connectivity.tanzu.vmware.com/fqdn=web (in both clusters)
	if err := lab.CreateClaimingService(ctx, a, ns, "web", "web", ipA); err != nil {
		t.Fatal(err)
	}
	if err := lab.CreateClaimingService(ctx, b, ns, "web", "web", ipB); err != nil {
		t.Fatal(err)
	}
	took := expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipA, ipB)
	t.Logf("annotated Services -> one name answering both after %s", took.Round(10*time.Millisecond))
	expect(t, dnsB, name, dns.TypeA, dns.RcodeSuccess, ipA, ipB)
	waitName(t, name, "Published", 2)

	// Local: each cluster's DNS answers its own Service.
	if err := setLocality(ctx, "Local"); err != nil {
		t.Fatal(err)
	}
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipA)
	expect(t, dnsB, name, dns.TypeA, dns.RcodeSuccess, ipB)

	// cluster-a's Service loses its ready endpoint: cluster-a's DNS
	// answers cluster-b's, and again its own when it is back.
	if err := lab.SetClaimingEndpointsReady(ctx, a, ns, "web", false); err != nil {
		t.Fatal(err)
	}
	took = expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipB)
	t.Logf("endpoint unready -> cluster-a answers cluster-b's Service after %s", took.Round(10*time.Millisecond))
	waitName(t, name, "Published", 1)
	if err := lab.SetClaimingEndpointsReady(ctx, a, ns, "web", true); err != nil {
		t.Fatal(err)
	}
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipA)

	// Another namespace's name is refused, with a reason and an Event,
	// and never served; web is not affected.
	evil := lab.NamesHost("web", "other-team")
	if err := lab.CreateClaimingService(ctx, a, ns, "evil", evil, ipEvil); err != nil {
		t.Fatal(err)
	}
	waitName(t, evil, "NameRefused", 0)
	waitEvent(t, "NameRefused", evil)
	expect(t, dnsA, evil, dns.TypeA, dns.RcodeNameError)
	expect(t, dnsB, evil, dns.TypeA, dns.RcodeNameError)
	expect(t, dnsA, name, dns.TypeA, dns.RcodeSuccess, ipA)
}

// setNames sets spec.names.enabled of the walkthrough's GatewayDNS.
func setNames(ctx context.Context, enabled bool) error {
	patch := `{"spec":{"names":null}}`
	if enabled {
		patch = `{"spec":{"names":{"enabled":true}}}`
	}
	_, err := theLab.Management.Dynamic.Resource(lab.GatewayDNSGVR).Namespace(lab.ClusterNamespace).
		Patch(ctx, lab.GatewayDNSName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("set names enabled=%v: %w", enabled, err)
	}
	return nil
}

// waitName waits until the walkthrough GatewayDNS's status.names reports
// name with reason and that many healthy sources.
func waitName(t *testing.T, name, reason string, healthy int64) {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		got, err := lab.GatewayDNSNames(ctx, theLab.Management, lab.ClusterNamespace, lab.GatewayDNSName)
		if err == nil && got[name].Reason == reason && got[name].HealthySources == healthy {
			t.Logf("status.names %s: %+v", name, got[name])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status.names: got %+v (%v), want %s %s with %d healthy sources", got, err, name, reason, healthy)
		}
		time.Sleep(pollInterval)
	}
}

// waitEvent waits for an Event of reason on the walkthrough GatewayDNS
// whose message mentions what.
func waitEvent(t *testing.T, reason, what string) {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		list, err := theLab.Management.Client.CoreV1().Events(lab.ClusterNamespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, ev := range list.Items {
				if ev.InvolvedObject.Name == lab.GatewayDNSName && ev.Reason == reason && strings.Contains(ev.Message, what) {
					t.Logf("Event %s %s: %s", ev.Type, ev.Reason, ev.Message)
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Event %s mentioning %s on GatewayDNS %s (%v)", reason, what, lab.GatewayDNSName, err)
		}
		time.Sleep(pollInterval)
	}
}
