package lab

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// queryTimeout bounds one DNS exchange.
const queryTimeout = 2 * time.Second

// Query asks server (host:port) for name and type over UDP, the way a pod's
// resolver asks its cluster DNS.
func Query(server, name string, qtype uint16) (*dns.Msg, error) {
	return exchange("udp", server, name, qtype)
}

// QueryTCP asks as Query does, over TCP: what a resolver does after a
// truncated answer, for answers larger than a UDP message.
func QueryTCP(server, name string, qtype uint16) (*dns.Msg, error) {
	return exchange("tcp", server, name, qtype)
}

func exchange(network, server, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = true
	c := &dns.Client{Net: network, Timeout: queryTimeout}
	r, _, err := c.Exchange(m, server)
	if err != nil {
		return nil, fmt.Errorf("%s %s @%s (%s): %w", dns.TypeToString[qtype], name, server, network, err)
	}
	return r, nil
}

// Values returns the data of the answer records of type qtype (addresses
// for A and AAAA, the target for CNAME), sorted.
func Values(r *dns.Msg, qtype uint16) []string {
	var out []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype != qtype {
			continue
		}
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		case *dns.CNAME:
			out = append(out, v.Target)
		default:
			out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	sort.Strings(out)
	return out
}

// Summary is a one-line form of an answer: rcode and answer records.
func Summary(r *dns.Msg) string {
	var rrs []string
	for _, rr := range r.Answer {
		rrs = append(rrs, strings.Join(strings.Fields(rr.String()), " "))
	}
	return fmt.Sprintf("%s [%s]", dns.RcodeToString[r.Rcode], strings.Join(rrs, "; "))
}
