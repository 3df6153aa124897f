// Package dnsanswer asks one DNS server one question and says what it
// answered, in a form an operator reads: the rcode, the records as zone
// file lines with their TTLs, and the negative TTL of an NXDOMAIN or
// NODATA. serve's /answer and `xcc-syncer explain --dns` share it, so both
// print the same thing.
package dnsanswer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Bounds of one question.
const (
	// DefaultTimeout is each exchange's deadline (UDP, then TCP).
	DefaultTimeout = 2 * time.Second
	// MaxRecords is the most records of a section returned; the rest are
	// counted in a last line.
	MaxRecords = 32
	// maxLine cuts one record's zone-file line (a long TXT).
	maxLine = 512
	// udpSize is the EDNS0 buffer advertised: the DNS flag day's size,
	// which no path fragments; a longer answer comes back truncated and
	// is asked again over TCP.
	udpSize = 1232
)

// Types are the query types that may be asked: what a name of xcc-dns
// answers, and never ANY or a zone transfer.
var Types = []string{"A", "AAAA", "SRV", "TXT", "PTR", "CNAME", "SOA", "NS"}

// Answer is one server's answer to one question.
type Answer struct {
	// Server says which server: "xcc-dns", "cluster DNS", "--dns".
	Server  string `json:"server"`
	Address string `json:"address,omitempty"`
	// Rcode is NOERROR, NXDOMAIN, SERVFAIL, ...; empty with Error.
	Rcode     string   `json:"rcode,omitempty"`
	Answer    []string `json:"answer,omitempty"`
	Authority []string `json:"authority,omitempty"`
	// TTL is the smallest TTL of the answer's records: how long a cache
	// may keep the answer; nil without records.
	TTL *uint32 `json:"ttl,omitempty"`
	// NegativeTTL is how long a cache may keep an NXDOMAIN or NODATA:
	// the smaller of the authority SOA's TTL and its minimum (RFC 2308
	// section 5); nil for an answer with records, or without SOA.
	NegativeTTL *uint32 `json:"negativeTTL,omitempty"`
	// Truncated: the answer came truncated even over TCP, or a section
	// had more than MaxRecords records.
	Truncated bool `json:"truncated,omitempty"`
	// TookMillis is the time the exchanges took.
	TookMillis float64 `json:"tookMillis"`
	Error      string  `json:"error,omitempty"`
}

// Records are the answer records as present: rcode NOERROR with
// records.
func (a Answer) Records() bool { return a.Error == "" && a.Rcode == "NOERROR" && len(a.Answer) > 0 }

// Negative is NXDOMAIN, or NOERROR without records (NODATA).
func (a Answer) Negative() bool {
	return a.Error == "" && (a.Rcode == "NXDOMAIN" || (a.Rcode == "NOERROR" && len(a.Answer) == 0))
}

// Outcome is the answer in one word: NOERROR, NODATA, NXDOMAIN,
// SERVFAIL, ..., or "error".
func (a Answer) Outcome() string {
	switch {
	case a.Error != "":
		return "error"
	case a.Rcode == "NOERROR" && len(a.Answer) == 0:
		return "NODATA"
	}
	return a.Rcode
}

// Words are the answer on one line: "NOERROR, <rr>; <rr>" or
// "NXDOMAIN, negative TTL 5" or "error: why".
func (a Answer) Words() string {
	if a.Error != "" {
		return "error: " + a.Error
	}
	out := a.Outcome()
	if len(a.Answer) > 0 {
		out += ", " + strings.Join(a.Answer, "; ")
	}
	if a.NegativeTTL != nil {
		out += fmt.Sprintf(", negative TTL %d s", *a.NegativeTTL)
	}
	if a.Truncated {
		out += " (truncated)"
	}
	return out
}

// ParseType returns the type of an allowed name (Types, any case);
// empty is A.
func ParseType(t string) (uint16, error) {
	if t == "" {
		return dns.TypeA, nil
	}
	u := strings.ToUpper(t)
	if !slices.Contains(Types, u) {
		return 0, fmt.Errorf("type %q: want one of %s", t, strings.Join(Types, " "))
	}
	return dns.StringToType[u], nil
}

// CheckName returns name as a lower-case FQDN when it is a domain name of
// at most 253 octets (255 on the wire) inside one of zones; else why not.
func CheckName(name string, zones []string) (string, error) {
	if name == "" {
		return "", errors.New("no name")
	}
	fqdn := strings.ToLower(dns.Fqdn(name))
	if len(fqdn) > 254 {
		return "", fmt.Errorf("name of %d octets: longer than 253", len(fqdn)-1)
	}
	if _, ok := dns.IsDomainName(fqdn); !ok {
		return "", fmt.Errorf("name %q: not a domain name", name)
	}
	for _, l := range dns.SplitDomainName(fqdn) {
		if strings.ContainsAny(l, "\\ \t\"();@$") {
			return "", fmt.Errorf("name %q: label %q holds an escape or a zone-file character", name, l)
		}
	}
	for _, z := range zones {
		if z != "" && dns.IsSubDomain(strings.ToLower(dns.Fqdn(z)), fqdn) {
			return fqdn, nil
		}
	}
	return "", fmt.Errorf("name %s: in none of the zones %s", fqdn, strings.Join(zones, ", "))
}

// Ask asks addr (host:port) for name and qtype: over UDP, and again over
// TCP when the answer comes truncated, each exchange within timeout (and
// ctx). It never returns an error: a failure is the answer's Error.
func Ask(ctx context.Context, server, addr, name string, qtype uint16, timeout time.Duration) (a Answer) {
	a = Answer{Server: server, Address: addr}
	start := time.Now()
	defer func() { a.TookMillis = float64(time.Since(start).Microseconds()) / 1000 }()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(udpSize, false)
	resp, err := exchange(ctx, "udp", addr, m, timeout)
	if err == nil && resp.Truncated {
		resp, err = exchange(ctx, "tcp", addr, m, timeout)
	}
	if err != nil {
		a.Error = err.Error()
		return a
	}
	a.fill(resp)
	return a
}

// exchange is one exchange over network within timeout.
func exchange(ctx context.Context, network, addr string, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &dns.Client{Net: network, Timeout: timeout, UDPSize: udpSize}
	resp, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("%s %s: no answer within %s", network, addr, timeout)
		}
		return nil, fmt.Errorf("%s %s: %w", network, addr, err)
	}
	if resp.Id != m.Id {
		return nil, fmt.Errorf("%s %s: answer of another question", network, addr)
	}
	return resp, nil
}

// fill sets a's rcode, sections and TTLs from resp.
func (a *Answer) fill(resp *dns.Msg) {
	a.Rcode = dns.RcodeToString[resp.Rcode]
	if a.Rcode == "" {
		a.Rcode = fmt.Sprintf("RCODE%d", resp.Rcode)
	}
	a.Truncated = resp.Truncated
	a.Answer = a.lines(resp.Answer)
	a.Authority = a.lines(resp.Ns)
	for _, rr := range resp.Answer {
		if t := rr.Header().Ttl; a.TTL == nil || t < *a.TTL {
			a.TTL = &t
		}
	}
	if a.Negative() {
		for _, rr := range resp.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				n := min(soa.Hdr.Ttl, soa.Minttl)
				a.NegativeTTL = &n
				break
			}
		}
	}
}

// lines are rrs as zone-file lines (tabs made spaces), at most
// MaxRecords of them.
func (a *Answer) lines(rrs []dns.RR) []string {
	var out []string
	for i, rr := range rrs {
		if i == MaxRecords {
			out = append(out, fmt.Sprintf("... %d more", len(rrs)-MaxRecords))
			a.Truncated = true
			break
		}
		s := strings.Join(strings.Fields(rr.String()), " ")
		if len(s) > maxLine {
			s = s[:maxLine] + "..."
		}
		out = append(out, s)
	}
	return out
}
