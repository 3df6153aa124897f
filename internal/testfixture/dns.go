package testfixture

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Ask sends one question to the DNS server at addr over network ("udp" or
// "tcp") and fails the test if no answer comes. bufsize > 0 adds an EDNS0
// record with that UDP buffer size.
func Ask(t testing.TB, network, addr, name string, qtype uint16, bufsize uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if bufsize > 0 {
		m.SetEdns0(bufsize, false)
	}
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return r
}

// Lines renders RRs as sorted zone-file lines, with TTLs and single
// spaces; the OPT pseudo-record is left out.
func Lines(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeOPT {
			continue
		}
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	slices.Sort(out)
	return out
}

// ZoneLines parses zone-file lines and renders them as Lines does, so an
// expected answer written by hand compares with Lines of a real one. A
// line that does not parse panics: it is a mistake in the test.
func ZoneLines(zoneLines ...string) []string {
	var out []string
	for _, l := range zoneLines {
		rr, err := dns.NewRR(l)
		if err != nil {
			panic(fmt.Sprintf("bad expected line %q: %v", l, err))
		}
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	slices.Sort(out)
	return out
}

// StripTTL replaces the TTL of each of Lines' lines with "TTL", for
// answers a cache may have counted down.
func StripTTL(ls []string) []string {
	var out []string
	for _, l := range ls {
		f := strings.Fields(l)
		f[1] = "TTL"
		out = append(out, strings.Join(f, " "))
	}
	return out
}

// StartUpstream starts a resolver on UDP and TCP of one loopback port,
// standing in for the resolvers of /etc/resolv.conf, and returns its
// address. It answers type A of target with addr (other types of target:
// NODATA), refuses every name below arpa. (so a REFUSED reverse answer
// shows the server under test passed the name on), and lets miekg/dns
// refuse the rest.
func StartUpstream(t testing.TB, target, addr string) string {
	t.Helper()
	target = dns.Fqdn(target)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(target, func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR(target + " 300 IN A " + addr)
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})
	mux.HandleFunc("arpa.", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeRefused)
		_ = w.WriteMsg(m)
	})
	s := &dns.Server{PacketConn: pc, Handler: mux}
	go func() { _ = s.ActivateAndServe() }()
	t.Cleanup(func() { _ = s.Shutdown() })
	// TCP on the same port: forward asks over the protocol it was asked with.
	if l, err := net.Listen("tcp", pc.LocalAddr().String()); err == nil {
		ts := &dns.Server{Listener: l, Handler: mux}
		go func() { _ = ts.ActivateAndServe() }()
		t.Cleanup(func() { _ = ts.Shutdown() })
	}
	return pc.LocalAddr().String()
}
