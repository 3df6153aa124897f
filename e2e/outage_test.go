package e2e

// This file's tests stop lab processes (the management API server stays
// stopped): suite in main_test.go runs them last, in phase outage.

import (
	"context"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// staleTTL is the TTL our Corefile's cache gives answers it serves while
// etcd cannot be read (serve_stale).
const staleTTL = 5

// testManagementDown: with the management API server stopped,
// cluster-b keeps answering; with serve killed by SIGKILL our DNS server
// answers from its cache (stale, short TTL), and serve restarted while the
// management cluster is still down answers from its etcd on disk.
func testManagementDown(t *testing.T) {
	server := clusterDNS(t)
	b := theLab.DNS[lab.ClusterB]
	kuardA := lab.GatewayHost("kuard", lab.ClusterA)
	want := theLab.Gateways[lab.ClusterA].IPs
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, want...)

	theLab.Management.Stop()
	t.Log("management API server stopped")
	for end := time.Now().Add(steadyFor); time.Now().Before(end); time.Sleep(pollInterval) {
		r, err := lab.Query(server, kuardA, dns.TypeA)
		if err != nil || r.Rcode != dns.RcodeSuccess || strings.Join(lab.Values(r, dns.TypeA), ",") != strings.Join(want, ",") {
			t.Fatalf("with the management cluster down: %v %v", summary(r), err)
		}
	}

	b.KillServe()
	t.Logf("serve of cluster-b killed (SIGKILL); its etcd data dir %s stays", b.EtcdDataDir)
	// With serve and its etcd down, our DNS server answers from its cache:
	// once the cached answer expires, stale, with a 5 s TTL, and quickly.
	gone := time.Now()
	for {
		asked := time.Now()
		r, err := lab.Query(b.XCCDNSAddr, kuardA, dns.TypeA)
		if err != nil || r.Rcode != dns.RcodeSuccess || strings.Join(lab.Values(r, dns.TypeA), ",") != strings.Join(want, ",") {
			t.Fatalf("our DNS with serve and its etcd down: %s", summaryErr(r, err))
		}
		if r.Answer[0].Header().Ttl <= staleTTL {
			t.Logf("our DNS answers %s stale (TTL %d) in %s, %s after serve was killed", kuardA, r.Answer[0].Header().Ttl,
				time.Since(asked).Round(time.Millisecond), time.Since(gone).Round(10*time.Millisecond))
			break
		}
		if time.Since(gone) > answerTimeout {
			t.Fatalf("our DNS never turned to stale answers: %s", summary(r))
		}
		time.Sleep(pollInterval)
	}
	restarted := time.Now()
	if err := b.RestartServe(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("serve restarted and ready after %s", time.Since(restarted).Round(10*time.Millisecond))
	// Our DNS server, asked directly, answers from serve's etcd again: a
	// fresh answer carries the record's TTL, not the stale one.
	for end := time.Now().Add(answerTimeout); ; time.Sleep(pollInterval) {
		r, err := lab.Query(b.XCCDNSAddr, kuardA, dns.TypeA)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 && r.Answer[0].Header().Ttl > staleTTL {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("our DNS did not answer from etcd again after serve's restart: %s", summaryErr(r, err))
		}
	}
	expect(t, b.XCCDNSAddr, kuardA, dns.TypeA, dns.RcodeSuccess, want...)
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, want...)
	if _, err := os.Stat(b.EtcdDataDir); err != nil {
		t.Errorf("etcd data dir: %v", err)
	}
}

// testWorkloadAPIServerDown: serve of cluster-b, killed and restarted while
// cluster-b's own API server is down, is ready within seconds and answers
// from its etcd on disk; when the API server is back it syncs again.
func testWorkloadAPIServerDown(t *testing.T) {
	b := theLab.DNS[lab.ClusterB]
	kuardA := lab.GatewayHost("kuard", lab.ClusterA)
	want := theLab.Gateways[lab.ClusterA].IPs
	expect(t, b.XCCDNSAddr, kuardA, dns.TypeA, dns.RcodeSuccess, want...)

	apiServer := theLab.Workload(lab.ClusterB)
	apiServer.Stop()
	t.Log("cluster-b API server stopped")
	b.KillServe()
	restarted := time.Now()
	if err := b.RestartServe(ctxFor(t)); err != nil {
		t.Fatalf("serve restarted without its API server: %v", err)
	}
	t.Logf("serve restarted without its API server, ready after %s", time.Since(restarted).Round(10*time.Millisecond))
	expect(t, b.XCCDNSAddr, kuardA, dns.TypeA, dns.RcodeSuccess, want...)
	if body := readyz(t, b); !strings.Contains(body, "from disk") {
		t.Errorf("/readyz of serve without its API server: %q, want it to say it serves from disk", body)
	}

	if err := theLab.RestartCluster(ctxFor(t), apiServer); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(answerTimeout); ; time.Sleep(pollInterval) {
		if body := readyz(t, b); strings.TrimSpace(body) == "ok" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("serve did not sync after its API server came back: /readyz %q", readyz(t, b))
		}
	}
	expect(t, b.XCCDNSAddr, kuardA, dns.TypeA, dns.RcodeSuccess, want...)
}

func readyz(t *testing.T, d *lab.WorkloadDNS) string {
	t.Helper()
	resp, err := http.Get("http://" + d.ServeHTTP + "/readyz")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func summaryErr(r *dns.Msg, err error) string {
	if err != nil {
		return err.Error()
	}
	return summary(r)
}

// testHeadlessDown exports a headless Service of cluster-a and cluster-b
// (policy All) and stops cluster-a's API server: cluster-b keeps
// answering cluster-a's pods, by the name across clusters, the
// per-cluster and the per-pod names, never with SERVFAIL (the controller
// keeps a cluster's last slices while it cannot read it). Then cluster-a's
// Cluster turns Available=False: by the health rules of the gateway
// names its pods leave the name across clusters, while its per-cluster
// and per-pod names keep their last answers (they answer whatever the
// health). cluster-a's API server is started again and everything made
// is removed, so the outage tests after it find the lab as before.
func testHeadlessDown(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsB := theLab.DNS[lab.ClusterB].ClusterDNSAddr
	ourDNSA := theLab.DNS[lab.ClusterA].XCCDNSAddr
	const gd = "dev-team-db-down"
	podsA, podsB := []string{"198.51.100.121", "198.51.100.122"}, []string{"198.51.100.131", "198.51.100.132"}
	x := lab.HeadlessHost(gd)
	stopped := false
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, ""); err != nil {
			t.Error(err)
		}
		if err := deleteHeadlessExport(ctx, gd); err != nil {
			t.Error(err)
		}
		for _, w := range []*lab.Cluster{a, b} {
			if err := lab.DeleteHeadless(ctx, w); err != nil {
				t.Error(err)
			}
		}
	})
	// Runs before the removals above (cleanups run last first): they need
	// cluster-a's API server.
	t.Cleanup(func() {
		if !stopped {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := theLab.RestartCluster(ctx, a); err != nil {
			t.Errorf("start cluster-a's API server again: %v", err)
		}
	})
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	createHeadless(ctx, t, map[*lab.Cluster][]string{a: podsA, b: podsB})
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, headlessYAML(gd, lab.HeadlessNamespace+"/"+lab.HeadlessService, "All")); err != nil {
		t.Fatal(err)
	}
	both := append(slices.Clone(podsA), podsB...)
	// What cluster-b answers for cluster-a's pods, and must keep answering.
	names := []struct {
		name string
		want []string
	}{
		{x, both},
		{"cluster-a." + x, podsA},
		{"db-0.cluster-a." + x, podsA[:1]},
		{"db-1.cluster-a." + x, podsA[1:]},
	}
	for _, n := range names {
		expect(t, dnsB, n.name, dns.TypeA, dns.RcodeSuccess, n.want...)
	}
	waitPods(t, gd, map[string]lab.HeadlessStatus{
		lab.ClusterA: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
		lab.ClusterB: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
	})

	a.Stop()
	stopped = true
	t.Log("cluster-a API server stopped")
	// The controller loses its watches of cluster-a and cannot reach it
	// again: every answer stays, every time it is asked.
	for end := time.Now().Add(3 * steadyFor); time.Now().Before(end); time.Sleep(pollInterval) {
		for _, n := range names {
			steady(t, dnsB, n.name, n.want)
		}
		// cluster-a's own DNS answers from its serve's etcd.
		steady(t, ourDNSA, "cluster-b."+x, podsB)
	}
	got, err := lab.GatewayDNSPods(ctx, mgmt, lab.ClusterNamespace, gd)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status with cluster-a's API server down: %+v", got)

	// cluster-a's Cluster says it is not available: its pods leave the
	// name across clusters; its own names keep their last answers.
	if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, "False"); err != nil {
		t.Fatal(err)
	}
	took := expect(t, dnsB, x, dns.TypeA, dns.RcodeSuccess, podsB...)
	t.Logf("cluster-a's pods left %s %s after Available=False", x, took.Round(10*time.Millisecond))
	for end := time.Now().Add(steadyFor); time.Now().Before(end); time.Sleep(pollInterval) {
		steady(t, dnsB, x, podsB)
		for _, n := range names[1:] {
			steady(t, dnsB, n.name, n.want)
		}
	}

	// Back: the API server, then the condition.
	if err := theLab.RestartCluster(ctx, a); err != nil {
		t.Fatal(err)
	}
	stopped = false
	if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		expect(t, dnsB, n.name, dns.TypeA, dns.RcodeSuccess, n.want...)
	}
	waitPods(t, gd, map[string]lab.HeadlessStatus{
		lab.ClusterA: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
		lab.ClusterB: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
	})
}

// steady fails unless server answers name (A) with exactly want now.
func steady(t *testing.T, server, name string, want []string) {
	t.Helper()
	r, err := lab.Query(server, name, dns.TypeA)
	if err != nil || r.Rcode != dns.RcodeSuccess || !slices.Equal(lab.Values(r, dns.TypeA), slices.Sorted(slices.Values(want))) {
		t.Fatalf("A %s @%s: want %v, got %s", name, server, want, summaryErr(r, err))
	}
}

// testHeadlessForgedRecovery: what the controller keeps for a cluster it
// cannot reach, across its own restart, comes from its state on the
// management cluster and never from a target cluster. A headless export
// of cluster-a and cluster-b, published to cluster-c too; cluster-a's
// admin forges a managed slice in its own cluster as cluster-b's, with an
// address of its choosing; cluster-b's API server stops and the
// controller restarts. cluster-c keeps answering cluster-b's real pods
// and never the forged address.
func testHeadlessForgedRecovery(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsC := theLab.DNS[lab.ClusterC].ClusterDNSAddr
	const gd, forgedName, forged = "dev-team-db-forged", "forged-headless", "198.51.100.166"
	podsA, podsB := []string{"198.51.100.141"}, []string{"198.51.100.151", "198.51.100.152"}
	x := lab.HeadlessHost(gd)
	stopped := false
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := deleteHeadlessExport(ctx, gd); err != nil {
			t.Error(err)
		}
		if err := lab.DeleteEndpointSlice(ctx, a, lab.SliceNamespace, forgedName); err != nil {
			t.Error(err)
		}
		for _, w := range []*lab.Cluster{a, b} {
			if err := lab.DeleteHeadless(ctx, w); err != nil {
				t.Error(err)
			}
		}
		if err := lab.LabelCluster(ctx, mgmt, lab.ClusterC, lab.SelectorLabel, ""); err != nil {
			t.Error(err)
		}
	})
	// Runs before the removals above (cleanups run last first).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if theLab.Controller == nil {
			if err := theLab.StartController(ctx); err != nil {
				t.Errorf("start the controller again: %v", err)
			}
		}
		if stopped {
			if err := theLab.RestartCluster(ctx, b); err != nil {
				t.Errorf("start cluster-b's API server again: %v", err)
			}
		}
	})
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lab.LabelCluster(ctx, mgmt, lab.ClusterC, lab.SelectorLabel, lab.SelectorValue); err != nil {
		t.Fatal(err)
	}
	createHeadless(ctx, t, map[*lab.Cluster][]string{a: podsA, b: podsB})
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, headlessYAML(gd, lab.HeadlessNamespace+"/"+lab.HeadlessService, "All")); err != nil {
		t.Fatal(err)
	}
	both := append(slices.Clone(podsA), podsB...)
	expect(t, dnsC, x, dns.TypeA, dns.RcodeSuccess, both...)
	expect(t, dnsC, "cluster-b."+x, dns.TypeA, dns.RcodeSuccess, podsB...)
	waitPodsOf(t, gd, map[string]lab.HeadlessStatus{
		lab.ClusterA: {Reason: "Published", Pods: 1, Healthy: true, Answered: true},
		lab.ClusterB: {Reason: "Published", Pods: 2, Healthy: true, Answered: true},
	})

	// The forgery, as the controller would write cluster-b's slice.
	ref := lab.ClusterNamespace + "/" + gd
	forgery := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: forgedName, Namespace: lab.SliceNamespace,
			Labels: map[string]string{labelManagedBy: managedByController, labelRecord: "headless", labelSourceCluster: lab.ClusterB,
				discoveryv1.LabelServiceName: gd},
			Annotations: map[string]string{annotationHostname: "cluster-b." + x, annotationGatewayRef: ref}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(5432))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{forged}, Hostname: ptr.To("db-9"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}},
	}
	if err := lab.WriteEndpointSlice(ctx, a.Client, a.Name, forgery); err != nil {
		t.Fatal(err)
	}
	b.Stop()
	stopped = true
	theLab.StopController()
	t.Log("cluster-b's API server stopped; controller stopped, forged slice in cluster-a")
	if err := theLab.StartController(ctx); err != nil {
		t.Fatal(err)
	}
	t.Log("controller started again")
	waitPodsOf(t, gd, map[string]lab.HeadlessStatus{
		lab.ClusterA: {Reason: "Published", Pods: 1, Healthy: true, Answered: true},
		lab.ClusterB: {Reason: "ClusterUnreachable", Pods: 2, Healthy: true, Answered: true},
	})
	for end := time.Now().Add(3 * steadyFor); time.Now().Before(end); time.Sleep(pollInterval) {
		steady(t, dnsC, x, both)
		steady(t, dnsC, "cluster-b."+x, podsB)
		r, err := lab.Query(dnsC, "db-9.cluster-b."+x, dns.TypeA)
		if err != nil || slices.Contains(lab.Values(r, dns.TypeA), forged) {
			t.Fatalf("cluster-c answers the forged pod: %s", summaryErr(r, err))
		}
	}
}

// waitPodsOf waits until the status of the headless export name reports
// want for the clusters in want; others may say anything.
func waitPodsOf(t *testing.T, name string, want map[string]lab.HeadlessStatus) {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		got, err := lab.GatewayDNSPods(ctx, theLab.Management, lab.ClusterNamespace, name)
		for c := range got {
			if _, ok := want[c]; !ok {
				delete(got, c)
			}
		}
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
