package e2e

// This file's tests stop lab processes (the management API server stays
// stopped): suite in main_test.go runs them last, in phase outage.

import (
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

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
	for w, pods := range map[*lab.Cluster][]string{a: podsA, b: podsB} {
		if err := lab.CreateHeadlessService(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := lab.SetHeadlessEndpoints(ctx, w, pods); err != nil {
			t.Fatal(err)
		}
	}
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
