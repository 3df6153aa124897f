package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
)

func u32(n uint32) *uint32 { return &n }

const gatewayName = "kuard.gateway.cluster-a.dev-team.clusters.xcc.test."

func xccRecords() dnsanswer.Answer {
	return dnsanswer.Answer{Server: ServerXccDNS, Address: "127.0.0.1:5353", Rcode: "NOERROR",
		Answer: []string{gatewayName + " 30 IN A 172.18.255.200"}, TTL: u32(30)}
}

func clusterAnswer(rcode string, answer ...string) dnsanswer.Answer {
	a := dnsanswer.Answer{Server: ServerClusterDNS, Address: "10.96.0.10:53", Rcode: rcode, Answer: answer}
	if len(answer) > 0 {
		a.TTL = u32(30)
	} else {
		a.Authority, a.NegativeTTL = []string{"xcc.test. 5 IN SOA ns.dns.xcc.test. hostmaster.xcc.test. 1 7200 1800 86400 5"}, u32(5)
	}
	return a
}

func patchedForward() *Forward {
	return &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true,
		ForwardTo: []string{"10.96.0.53:53"}, Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53"},
		Cache: &corefile.Cache{Success: 30, MinSuccess: 5, Denial: 30, MinDenial: 5}}
}

// What the asking cluster's DNS does now decides the reason once its
// block forwards the zone to xcc-dns: a pod not reloaded first, then a
// cluster DNS answering otherwise than xcc-dns; equal answers keep the
// management cluster's reason.
func TestBuildLive(t *testing.T) {
	cfg := testConfig(t)
	n := Classify(gatewayName, "A", cfg)
	older := &Reload{ConfigMap: "kube-system/coredns", Changed: now.Add(-3 * time.Minute), Pods: []PodReload{
		{Pod: "kube-system/coredns-1", State: ReloadRunning}, {Pod: "kube-system/coredns-2", State: ReloadOlder}}}
	running := &Reload{ConfigMap: "kube-system/coredns", Pods: []PodReload{{Pod: "kube-system/coredns-1", State: ReloadRunning}}}
	for _, tt := range []struct {
		name    string
		answers []dnsanswer.Answer
		reload  *Reload
		forward *Forward
		reason  string
	}{
		{"equal", []dnsanswer.Answer{xccRecords(), clusterAnswer("NOERROR", gatewayName+" 30 IN A 172.18.255.200")}, running, patchedForward(),
			"Published: cluster-a is published"},
		{"not reloaded", []dnsanswer.Answer{xccRecords(), clusterAnswer("NXDOMAIN")}, older, patchedForward(),
			"NotReloaded: cluster DNS pod(s) kube-system/coredns-2 of cluster-c still run a Corefile older than ConfigMap kube-system/coredns, changed 3m0s ago: pods load it again within about 1m40s"},
		{"cluster DNS NXDOMAIN", []dnsanswer.Answer{xccRecords(), clusterAnswer("NXDOMAIN")}, running, patchedForward(),
			"ClusterDNSDiffers: the cluster DNS answers NXDOMAIN while xcc-dns answers records: it may still hold an earlier NXDOMAIN in its cache (up to its negative TTL, 5 s)"},
		{"cluster DNS NODATA", []dnsanswer.Answer{xccRecords(), clusterAnswer("NOERROR")}, nil, patchedForward(),
			"ClusterDNSDiffers: the cluster DNS answers NODATA while xcc-dns answers records"},
		{"cluster DNS SERVFAIL", []dnsanswer.Answer{xccRecords(), {Server: ServerClusterDNS, Rcode: "SERVFAIL"}}, running, patchedForward(),
			"ClusterDNSDiffers: the cluster DNS answers SERVFAIL while xcc-dns answers records: its forward to xcc-dns gets no answer; check that the block forwards to the xcc-dns Service's ClusterIP and port, and that the workload chart's NetworkPolicy admits the cluster DNS pods"},
		{"cluster DNS silent", []dnsanswer.Answer{xccRecords(), {Server: ServerClusterDNS, Error: "udp 10.96.0.10:53: no answer within 2s"}}, nil, patchedForward(),
			"ClusterDNSDiffers: the cluster DNS does not answer (udp 10.96.0.10:53: no answer within 2s)"},
		{"xcc-dns unread", []dnsanswer.Answer{{Server: ServerXccDNS, Error: "refused"}, clusterAnswer("NXDOMAIN")}, nil, patchedForward(),
			"Published: "},
		{"not forwarded comes first", []dnsanswer.Answer{xccRecords(), clusterAnswer("NXDOMAIN")}, older, &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test"},
			"NotForwarded: "},
	} {
		rep := Build(n, Facts{GatewayDNS: []v1alpha1.GatewayDNS{walkthrough()}, From: "cluster-c", Forward: tt.forward, Answers: tt.answers, Reload: tt.reload}, now)
		if got := rep.Reason + ": " + rep.Why; !strings.HasPrefix(got, tt.reason) {
			t.Errorf("%s: reason\n%s\nwant it to begin\n%s", tt.name, got, tt.reason)
		}
		if rep.Reason == ReasonClusterDNSDiffers || rep.Reason == ReasonNotReloaded {
			if !strings.HasSuffix(rep.Why, "; xcc-dns itself answers records (Published: cluster-a is published in every target: 172.18.255.200)") {
				t.Errorf("%s: the management cluster's reason is lost: %s", tt.name, rep.Why)
			}
		}
	}
}

// A pod's reload state: its reload hash against the ConfigMap's, else its
// start against the ConfigMap's last change; a failed reload leaves a
// matching hash unknown.
func TestJudge(t *testing.T) {
	h, other := strings.Repeat("a", 128), strings.Repeat("b", 128)
	changed := now.Add(-time.Hour)
	for _, tt := range []struct {
		name        string
		e           PodEvidence
		hash        string
		state, why  string
		hashUnknown string
	}{
		{"reloaded to it", PodEvidence{Hashes: []string{h}}, h, ReloadRunning, "its reload plugin reports the hash of the ConfigMap's Corefile", ""},
		{"reloaded to another", PodEvidence{Hashes: []string{other}}, h, ReloadOlder, "its reload plugin reports another Corefile's hash (bbbbbbbbbbbb, the ConfigMap's aaaaaaaaaaaa)", ""},
		{"started after the change", PodEvidence{Started: changed.Add(time.Minute)}, h, ReloadRunning, "started 2026-11-26T11:02:30Z, after the ConfigMap's last change 2026-11-26T11:01:30Z, and not reloaded since", ""},
		{"started before, never reloaded", PodEvidence{Started: changed.Add(-time.Minute)}, h, ReloadOlder, "started 2026-11-26T11:00:30Z, before the ConfigMap's last change 2026-11-26T11:01:30Z (1h0m0s ago), and has not reloaded since (no reload hash)", ""},
		{"no start time", PodEvidence{}, h, ReloadUnknown, "no reload hash", ""},
		{"metrics unread", PodEvidence{Unread: "connection refused"}, h, ReloadUnknown, "metrics unread: connection refused", ""},
		{"import", PodEvidence{Hashes: []string{h}}, "", ReloadUnknown, "the ConfigMap's hash cannot be computed: the Corefile imports other files", "the Corefile imports other files"},
		{"failed reload", PodEvidence{Hashes: []string{h}, Failed: 2}, h, ReloadUnknown, "its reload plugin reports the hash of the ConfigMap's Corefile; 2 reload(s) failed", ""},
	} {
		tt.e.Pod = "kube-system/coredns-1"
		p := Judge(tt.e, tt.hash, tt.hashUnknown, changed, now)
		if p.State != tt.state || !strings.HasPrefix(p.Why, tt.why) || p.Pod != tt.e.Pod {
			t.Errorf("%s: %+v, want %s: %s...", tt.name, p, tt.state, tt.why)
		}
	}
}

// The text says what each server answers now, the TTLs and how long a
// pod keeps an answer, and each cluster DNS pod's reload state; the JSON
// report has them as fields.
func TestWriteTextLive(t *testing.T) {
	cfg := testConfig(t)
	for _, tt := range []struct {
		name    string
		answers []dnsanswer.Answer
		fw      *Forward
		want    []string
		keep    Keep
	}{
		{"records", []dnsanswer.Answer{xccRecords(), clusterAnswer("NOERROR", gatewayName+" 30 IN A 172.18.255.200"),
			{Server: "--dns", Address: "192.0.2.53:53", Error: "udp 192.0.2.53:53: no answer within 2s"}}, patchedForward(),
			[]string{
				"xcc-dns answers now: NOERROR, " + gatewayName + " 30 IN A 172.18.255.200\n",
				"cluster DNS answers now: NOERROR, " + gatewayName + " 30 IN A 172.18.255.200\n",
				"DNS 192.0.2.53:53 answers now: error: udp 192.0.2.53:53: no answer within 2s\n",
				"ttl:     record TTL 30 s; the cluster DNS block caches answers 5..30 s, denials 5..30 s; a pod may keep an answer up to 30 s; an NXDOMAIN or NODATA up to 30 s\n",
				"cluster DNS pod kube-system/coredns-1: running the ConfigMap's Corefile: its reload plugin reports the hash of the ConfigMap's Corefile\n",
			}, Keep{TTL: u32(30), Positive: u32(30), Negative: u32(30)}},
		{"nxdomain, long TTL capped, stale", []dnsanswer.Answer{{Server: ServerXccDNS, Rcode: "NXDOMAIN", NegativeTTL: u32(3)}},
			&Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", ForwardTo: []string{"10.96.0.53"},
				Cache: &corefile.Cache{Success: 3600, MinSuccess: 5, Denial: 1800, MinDenial: 5, ServeStale: "1h"}},
			[]string{
				"xcc-dns answers now: NXDOMAIN, negative TTL 3 s\n",
				"ttl:     negative TTL 3 s; the cluster DNS block caches answers 5..3600 s, denials 5..1800 s; a pod may keep an answer up to 3600 s; an NXDOMAIN or NODATA up to 5 s; and an expired one 1h more while xcc-dns does not answer (serve_stale)\n",
			}, Keep{NegativeTTL: u32(3), Positive: u32(3600), Negative: u32(5), ServeStale: "1h"}},
	} {
		rep := Build(Classify(gatewayName, "A", cfg), Facts{GatewayDNS: []v1alpha1.GatewayDNS{walkthrough()}, From: "cluster-c", Forward: tt.fw, Answers: tt.answers,
			Reload: &Reload{ConfigMap: "kube-system/coredns", Pods: []PodReload{{Pod: "kube-system/coredns-1", State: ReloadRunning, Why: "its reload plugin reports the hash of the ConfigMap's Corefile"}}}}, now)
		var out strings.Builder
		if err := rep.WriteText(&out, now); err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: text lacks %q:\n%s", tt.name, w, out.String())
			}
		}
		if rep.Keep == nil || !equalKeep(*rep.Keep, tt.keep) {
			t.Errorf("%s: keep %+v, want %+v", tt.name, rep.Keep, tt.keep)
		}
	}
}

func equalKeep(a, b Keep) bool {
	eq := func(x, y *uint32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.TTL, b.TTL) && eq(a.NegativeTTL, b.NegativeTTL) && eq(a.Positive, b.Positive) && eq(a.Negative, b.Negative) && a.ServeStale == b.ServeStale
}
