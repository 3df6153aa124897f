package e2e

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testHeadless exports a headless Service of cluster-a and cluster-b (a
// StatefulSet's pods db-0 and db-1 in each, EndpointSlices written as the
// endpoint slice controller would) with resolutionType headless and
// locality Local, and asks the clusters' DNS for its names: the service
// across clusters (the asking cluster's own pods), per cluster, per pod
// and the SRV records of its named port. A pod turning not ready leaves;
// a Service that is not headless is refused. Everything it makes is
// removed at the end.
func testHeadless(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsA, dnsB := theLab.DNS[lab.ClusterA].ClusterDNSAddr, theLab.DNS[lab.ClusterB].ClusterDNSAddr
	const gd, refused = "dev-team-db", "dev-team-not-headless"
	// Pod addresses of a flat network, in a documentation range the lab's
	// serve accepts and that lies outside its reverse CIDRs.
	podsA, podsB := []string{"198.51.100.101", "198.51.100.102"}, []string{"198.51.100.111", "198.51.100.112"}
	x := lab.HeadlessHost(gd)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range []string{gd, refused} {
			if err := lab.DeleteGatewayDNS(ctx, mgmt, lab.ClusterNamespace, n); err != nil {
				t.Error(err)
			}
		}
		for _, w := range []*lab.Cluster{a, b} {
			if err := lab.DeleteHeadless(ctx, w); err != nil {
				t.Error(err)
			}
		}
	})
	if err := theLab.ApplyWalkthrough(ctx); err != nil { // labels the Clusters
		t.Fatal(err)
	}
	createHeadless(ctx, t, map[*lab.Cluster][]string{a: podsA, b: podsB})
	applied := time.Now()
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, headlessYAML(gd, lab.HeadlessNamespace+"/"+lab.HeadlessService, "Local")); err != nil {
		t.Fatal(err)
	}

	// The service across clusters: each cluster's DNS answers its own pods.
	expect(t, dnsB, x, dns.TypeA, dns.RcodeSuccess, podsB...)
	t.Logf("headless: cluster-b resolves %s %s after the GatewayDNS was applied", x, time.Since(applied).Round(10*time.Millisecond))
	expect(t, dnsA, x, dns.TypeA, dns.RcodeSuccess, podsA...)
	// One cluster's pods, whatever the policy; one pod by its hostname.
	expect(t, dnsB, "cluster-a."+x, dns.TypeA, dns.RcodeSuccess, podsA...)
	expect(t, dnsB, "cluster-b."+x, dns.TypeA, dns.RcodeSuccess, podsB...)
	expect(t, dnsB, "db-0.cluster-a."+x, dns.TypeA, dns.RcodeSuccess, podsA[0])
	expect(t, dnsB, "db-1.cluster-a."+x, dns.TypeA, dns.RcodeSuccess, podsA[1])
	expect(t, dnsB, "db-2.cluster-a."+x, dns.TypeA, dns.RcodeNameError)
	// SRV of the named port: the asking cluster's own pods, by pod name.
	srv := func(cluster string, pods ...string) []string {
		var out []string
		for i := range pods {
			// Priority 10, weights sharing 100, as CoreDNS's etcd plugin answers.
			out = append(out, fmt.Sprintf("10 %d 5432 db-%d.%s.%s.", 100/len(pods), i, cluster, x))
		}
		return out
	}
	expect(t, dnsB, "_pg._tcp."+x, dns.TypeSRV, dns.RcodeSuccess, srv("cluster-b", podsB...)...)
	expect(t, dnsA, "_pg._tcp."+x, dns.TypeSRV, dns.RcodeSuccess, srv("cluster-a", podsA...)...)
	waitPods(t, gd, map[string]lab.HeadlessStatus{
		lab.ClusterA: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
		lab.ClusterB: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
	})

	// db-1 of cluster-b turns not ready: it leaves every name.
	if err := lab.SetHeadlessEndpoints(ctx, b, podsB, podsB[1]); err != nil {
		t.Fatal(err)
	}
	took := expect(t, dnsB, x, dns.TypeA, dns.RcodeSuccess, podsB[0])
	t.Logf("headless: a pod not ready leaves cluster-b's answer after %s", took.Round(10*time.Millisecond))
	expect(t, dnsA, "cluster-b."+x, dns.TypeA, dns.RcodeSuccess, podsB[0])
	expect(t, dnsA, "db-1.cluster-b."+x, dns.TypeA, dns.RcodeNameError)
	expect(t, dnsB, "_pg._tcp."+x, dns.TypeSRV, dns.RcodeSuccess, srv("cluster-b", podsB[0])...)
	waitPods(t, gd, map[string]lab.HeadlessStatus{
		lab.ClusterA: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
		lab.ClusterB: {Reason: "Published", Pods: 1, Healthy: true, Answered: true},
	})

	// The gateway Service (a LoadBalancer, clusterIP set) exported as
	// headless: refused in every cluster, nothing published.
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, headlessYAML(refused, lab.GatewayNamespace+"/"+lab.GatewayName, "Local")); err != nil {
		t.Fatal(err)
	}
	waitPods(t, refused, map[string]lab.HeadlessStatus{
		lab.ClusterA: {Reason: "ServiceNotHeadless"},
		lab.ClusterB: {Reason: "ServiceNotHeadless"},
	})
	expect(t, dnsB, "cluster-a."+lab.HeadlessHost(refused), dns.TypeA, dns.RcodeNameError)

	// The export goes: its names with it.
	if err := lab.DeleteGatewayDNS(ctx, mgmt, lab.ClusterNamespace, gd); err != nil {
		t.Fatal(err)
	}
	expect(t, dnsB, x, dns.TypeA, dns.RcodeNameError)
	expect(t, dnsB, "db-0.cluster-a."+x, dns.TypeA, dns.RcodeNameError)
}

// createHeadless creates the headless postgres Service in each cluster
// given, with the pods at its addresses, as a StatefulSet's endpoints.
func createHeadless(ctx context.Context, t *testing.T, pods map[*lab.Cluster][]string) {
	t.Helper()
	for w, addrs := range pods {
		if err := lab.CreateHeadlessService(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := lab.SetHeadlessEndpoints(ctx, w, addrs); err != nil {
			t.Fatal(err)
		}
	}
}

// headlessYAML is a GatewayDNS exporting service (<ns>/<name>) of the
// walkthrough's clusters as headless, with locality policy (Local: the
// asking cluster's own pods first; All: every healthy cluster's).
func headlessYAML(name, service, policy string) string {
	return fmt.Sprintf(`apiVersion: connectivity.tanzu.vmware.com/v1alpha1
kind: GatewayDNS
metadata:
  name: %s
  namespace: %s
spec:
  clusterSelector:
    matchLabels:
      %s: "%s"
  service: %s
  resolutionType: headless
  locality:
    policy: %s
`, name, lab.ClusterNamespace, lab.SelectorLabel, lab.SelectorValue, service, policy)
}

// waitPods waits until the status of the headless export name reports want.
func waitPods(t *testing.T, name string, want map[string]lab.HeadlessStatus) {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		got, err := lab.GatewayDNSPods(ctx, theLab.Management, lab.ClusterNamespace, name)
		if err == nil && reflect.DeepEqual(got, want) {
			t.Logf("status of %s: %+v", name, got)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status of %s: got %+v (%v), want %+v", name, got, err, want)
		}
		time.Sleep(pollInterval)
	}
}
