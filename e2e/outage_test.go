package e2e

// This file's tests stop lab processes (the management API server stays
// stopped): suite in main_test.go runs them last, in phase outage.

import (
	"io"
	"net/http"
	"os"
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
