package contract

import (
	"fmt"
	"net"
	"testing"

	"github.com/miekg/dns"
)

// srvAnswer is an SRV answer at srvName as the etcd plugin makes it: one
// SRV record per target, each target's A record in the additional
// section, and an OPT record.
func srvAnswer(srvName string, targets []string) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(srvName), dns.TypeSRV)
	m.Response = true
	for i, target := range targets {
		m.Answer = append(m.Answer, &dns.SRV{Hdr: dns.RR_Header{Name: dns.Fqdn(srvName), Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: 5},
			Priority: 10, Weight: 10, Port: 5432, Target: dns.Fqdn(target)})
		m.Extra = append(m.Extra, &dns.A{Hdr: dns.RR_Header{Name: dns.Fqdn(target), Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5},
			A: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i))})
	}
	m.SetEdns0(4096, false)
	return m
}

// SRV targets are packed whole, and the budget is never below what
// miekg/dns packs: an answer of as many targets as the budget allows is
// sent whole over TCP, additional section and all, for short and long
// names.
func TestSRVAnswerSize(t *testing.T) {
	// Two SRV records of one target: the second target is not compressed.
	x := "db.dev-team.services.xcc.test"
	one, two := srvAnswer("_pg._tcp."+x, []string{"db-0.cluster-a." + x}), srvAnswer("_pg._tcp."+x, []string{"db-0.cluster-a." + x, "db-0.cluster-a." + x})
	one.Compress, two.Compress = true, true
	one.Extra, two.Extra = nil, nil
	if got, want := two.Len()-one.Len(), 2+rrFixed+srvFixed+nameWireLength("db-0.cluster-a."+x); got != want {
		t.Errorf("a second SRV record of the same target costs %d bytes, want %d (target uncompressed)", got, want)
	}

	for _, x := range []string{x, "a-rather-long-gateway-dns-name.some-long-namespace-name.services.cluster-set.example.com"} {
		for _, cluster := range []string{"a", "cluster-with-a-long-name-of-forty-chars"} {
			srvName := "_postgresql._tcp." + x
			budget := SRVAnswerBudget(srvName)
			var targets []string
			var bound int
			for i := 0; ; i++ {
				target := fmt.Sprintf("db-%d.%s.%s", i, cluster, x)
				size := SRVTargetSize(x, target, 1, 0)
				if bound+size > budget {
					break
				}
				bound += size
				targets = append(targets, target)
			}
			m := srvAnswer(srvName, targets)
			m.Compress = true
			if packed := m.Len(); packed > MaxMessageSize-headerSize-nameWireLength(srvName)-4-messageReserve+bound {
				t.Errorf("%s: %d targets pack to %d bytes, more than the bound", srvName, len(targets), packed)
			}
			m.Compress = false
			m.Truncate(dns.MaxMsgSize)
			if m.Truncated || len(m.Answer) != len(targets) || len(m.Extra) != len(targets)+1 {
				t.Errorf("%s, cluster %s: %d targets truncated to %d answers, %d additional", x, cluster, len(targets), len(m.Answer), len(m.Extra))
			}
			t.Logf("%s, cluster %s: %d targets fit the budget, %d bytes packed, bound %d", x, cluster, len(targets), m.Len(), bound)
		}
	}
}
