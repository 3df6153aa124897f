package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/serve"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

const answerGateway = "gateway.cluster-a.dev-team.clusters.xcc.test."

// fakeClusterDNS is a cluster DNS on one UDP and TCP port of 127.0.0.1:
// it answers the gateway NXDOMAIN (as one that does not forward the
// zone), truncates a big TXT over UDP and answers it over TCP, and holds
// the questions for slow names until released.
type fakeClusterDNS struct {
	addr    string
	held    atomic.Int32
	release chan struct{}
}

func startFakeClusterDNS(t *testing.T) *fakeClusterDNS {
	t.Helper()
	f := &fakeClusterDNS{release: make(chan struct{})}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	f.addr = pc.LocalAddr().String()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch {
		case strings.HasPrefix(q.Name, "slow."):
			f.held.Add(1)
			<-f.release
			return
		case strings.HasPrefix(q.Name, "big.") && w.LocalAddr().Network() == "udp":
			m.Truncated = true
		case strings.HasPrefix(q.Name, "big."):
			for i := range 3 {
				rr, _ := dns.NewRR(fmt.Sprintf("%s 7 IN TXT \"%d%s\"", q.Name, i, strings.Repeat("x", 200)))
				m.Answer = append(m.Answer, rr)
			}
		default:
			m.Rcode = dns.RcodeNameError
			soa, _ := dns.NewRR("xcc.test. 60 IN SOA ns.upstream. hostmaster.upstream. 1 7200 1800 86400 15")
			m.Ns = append(m.Ns, soa)
		}
		_ = w.WriteMsg(m)
	})
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: l, Handler: h}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
	})
	return f
}

// startAnswering runs serve beside a real CoreDNS (the shipped Corefile,
// answering from the same etcd) and a fake cluster DNS behind the Service
// kube-system/kube-dns, and returns serve's base URL.
func startAnswering(t *testing.T) (string, *fakeClusterDNS) {
	t.Helper()
	slice := testfixture.WithTTL(testfixture.IPv4Slice("gw-a-ipv4", "*."+strings.TrimSuffix(answerGateway, "."), "192.0.2.10"), "42")
	w := dnsworld.Start(t, dnsworld.Config{Corefile: testfixture.ShippedCorefile(t), Slices: []*discoveryv1.EndpointSlice{slice}})
	f := startFakeClusterDNS(t)
	_, port, _ := net.SplitHostPort(f.addr)
	var p int32
	_, _ = fmt.Sscan(port, &p)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec: corev1.ServiceSpec{ClusterIP: "127.0.0.1", Ports: []corev1.ServicePort{
			{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: p}, {Name: "dns", Protocol: corev1.ProtocolUDP, Port: p}}}}
	if _, err := w.Kube.CoreV1().Services("kube-system").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := runServe(t, serve.Options{
		Client: w.Kube, Namespace: testfixture.SliceNamespace, Domain: dnsworld.Zone, ClusterSetZone: "clusterset.local",
		EtcdEndpoints:    strings.Join(w.EtcdServer.Endpoints(), ","),
		AnswerDNSAddress: w.DNS.UDP, AnswerClusterDNSService: serve.DefaultAnswerClusterDNSService,
	})
	waitReady(t, base)
	return base, f
}

func getAnswer(t *testing.T, base, name, qtype string) (int, string, serve.AnswerResponse) {
	t.Helper()
	code, body := testfixture.HTTPGet(t, base+serve.AnswerPath+"?name="+url.QueryEscape(name)+"&type="+url.QueryEscape(qtype))
	var out serve.AnswerResponse
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("/answer body %q: %v", body, err)
		}
	}
	return code, body, out
}

// TestAnswer: /answer says what serve's own CoreDNS and the cluster DNS
// answer now, with TTLs and the negative TTL; the TCP retry of a
// truncated answer.
func TestAnswer(t *testing.T) {
	base, _ := startAnswering(t)
	code, body, out := getAnswer(t, base, answerGateway, "A")
	if code != http.StatusOK || len(out.Answers) != 2 {
		t.Fatalf("/answer %d %s", code, body)
	}
	local, cluster := out.Answers[0], out.Answers[1]
	if local.Server != "xcc-dns" || local.Rcode != "NOERROR" || len(local.Answer) != 1 || local.Answer[0] != answerGateway+" 42 IN A 192.0.2.10" || local.TTL == nil || *local.TTL != 42 {
		t.Errorf("xcc-dns answer: %+v", local)
	}
	if local.TookMillis <= 0 {
		t.Errorf("xcc-dns answer took %v ms", local.TookMillis)
	}
	if cluster.Server != "cluster DNS" || cluster.Rcode != "NXDOMAIN" || cluster.NegativeTTL == nil || *cluster.NegativeTTL != 15 || cluster.Address == "" {
		t.Errorf("cluster DNS answer: %+v", cluster)
	}

	// A name of the zone xcc-dns does not publish: its own negative TTL.
	_, _, out = getAnswer(t, base, "nothing.xcc.test", "aaaa")
	if l := out.Answers[0]; l.Rcode != "NXDOMAIN" || l.NegativeTTL == nil || len(l.Authority) != 1 || !strings.Contains(l.Authority[0], "SOA") {
		t.Errorf("xcc-dns answer of an unpublished name: %+v", l)
	}

	// Truncated over UDP: asked again over TCP.
	_, _, out = getAnswer(t, base, "big.xcc.test", "TXT")
	if c := out.Answers[1]; c.Rcode != "NOERROR" || len(c.Answer) != 3 || c.Truncated || c.TTL == nil || *c.TTL != 7 {
		t.Errorf("truncated answer not retried over TCP: %+v", c)
	}
}

// TestAnswerRefusesHostileInput: every bad request gets 400 with why;
// nothing outside the zones, no ANY or AXFR, no other method.
func TestAnswerRefusesHostileInput(t *testing.T) {
	base, _ := startAnswering(t)
	long := strings.Repeat("a.", 126) + "xcc.test"
	for _, tc := range []struct{ name, qtype, want string }{
		{"", "A", "no name"},
		{"example.com", "A", "in none of the zones"},
		{"xcc.test.evil.example", "A", "in none of the zones"},
		{"a..xcc.test", "A", "not a domain name"},
		{long, "A", "longer than 253"},
		{`a\046b.xcc.test`, "A", "escape"},
		{"x y.xcc.test", "A", "escape"},
		{answerGateway, "ANY", "want one of"},
		{answerGateway, "AXFR", "want one of"},
		{answerGateway, "IXFR", "want one of"},
		{answerGateway, "65535", "want one of"},
	} {
		code, body, _ := getAnswer(t, base, tc.name, tc.qtype)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("name %q type %q: %d %q, want 400 saying %q", tc.name, tc.qtype, code, body, tc.want)
		}
	}
	resp, err := http.Post(base+serve.AnswerPath+"?name="+answerGateway, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
	// The clusterset zone is one of serve's.
	if code, body, _ := getAnswer(t, base, "svc.ns.svc.clusterset.local", "SRV"); code != http.StatusOK {
		t.Errorf("clusterset name: %d %s", code, body)
	}
}

// TestAnswerBoundsInFlight: while the in-flight questions are all held,
// another request gets 429 at once; a held question ends at its timeout.
func TestAnswerBoundsInFlight(t *testing.T) {
	base, f := startAnswering(t)
	var wg sync.WaitGroup
	codes := make(chan int, 8)
	for range 4 {
		wg.Go(func() {
			code, _, out := getAnswer(t, base, "slow.xcc.test", "A")
			if code == http.StatusOK && out.Answers[1].Error == "" {
				t.Errorf("a held question answered: %+v", out.Answers[1])
			}
			codes <- code
		})
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for f.held.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if f.held.Load() < 4 {
		t.Fatalf("only %d questions reached the cluster DNS", f.held.Load())
	}
	code, body, _ := getAnswer(t, base, answerGateway, "A")
	if code != http.StatusTooManyRequests {
		t.Errorf("a fifth request while four are held: %d %s, want 429", code, body)
	}
	start := time.Now()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("held request: %d", c)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("held questions took %s to end", took)
	}
	if code, body, _ := getAnswer(t, base, answerGateway, "A"); code != http.StatusOK {
		t.Errorf("after the held questions: %d %s", code, body)
	}
}
