package lab

import (
	"fmt"
	"net"
	"strings"

	"github.com/miekg/dns"
)

const (
	// upstreamTTL is the TTL of the stand-in upstream's answers.
	upstreamTTL = 30
	// labDomain holds the names of the lab's API servers; the stand-in
	// upstream answers 127.0.0.1 for every name below it.
	labDomain = "lab.example.net"
)

// upstream is the lab's stand-in for the resolvers of /etc/resolv.conf: a
// DNS server on 127.0.0.1 that knows a few names, so that no query of the
// lab ever leaves the machine.
type upstream struct {
	Addr    string
	records map[string]string
	udp     *dns.Server
	tcp     *dns.Server
}

func startUpstream(records map[string]string) (*upstream, error) {
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("%s:%d", loopback, port)
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			lastErr = fmt.Errorf("upstream UDP %s: %w", addr, err)
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			pc.Close()
			lastErr = fmt.Errorf("upstream TCP %s: %w", addr, err)
			continue
		}
		u := &upstream{Addr: addr, records: records}
		u.udp = &dns.Server{PacketConn: pc, Handler: u}
		u.tcp = &dns.Server{Listener: l, Handler: u}
		go func() { _ = u.udp.ActivateAndServe() }()
		go func() { _ = u.tcp.ActivateAndServe() }()
		return u, nil
	}
	return nil, lastErr
}

func (u *upstream) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) == 1 {
		q := r.Question[0]
		name := strings.ToLower(q.Name)
		ip, ok := u.records[name]
		if strings.HasSuffix(name, "."+labDomain+".") {
			ip, ok = loopback, true
		}
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY:
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: upstreamTTL},
				A:   net.ParseIP(ip),
			})
		}
	}
	_ = w.WriteMsg(m)
}

func (u *upstream) stop() {
	_ = u.udp.Shutdown()
	_ = u.tcp.Shutdown()
}
