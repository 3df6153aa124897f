package main

import (
	"fmt"
	"testing"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

// BenchmarkGuardedQuery asks, with 1,000 gateways in etcd, names whose
// random first label passes every cache: names the guard refuses (a '/',
// an `any` label, a shape too deep), an unknown name of a valid shape
// (NXDOMAIN from etcd) and a name below a gateway. The time is the whole
// round trip to CoreDNS and etcd in this process; ranges/op counts etcd
// reads per query.
func BenchmarkGuardedQuery(b *testing.B) {
	const gateways = 1000
	var published []*discoveryv1.EndpointSlice
	for i := range gateways {
		published = append(published, testfixture.IPv4Slice(fmt.Sprintf("gw-%d", i), fmt.Sprintf("*.gateway.c%d.dev-team.clusters.xcc.test", i),
			fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)))
	}
	w := startZone(b, world{zone: dnsworld.Zone, directives: coredns.Directives}, published)
	for _, c := range []struct {
		what  string
		name  func(i int) string
		rcode int
	}{
		{"refused-slash", func(i int) string { return fmt.Sprintf("r%d/x.dev-team.clusters.xcc.test.", i) }, dns.RcodeNameError},
		{"refused-any", func(i int) string { return fmt.Sprintf("r%d.x.any.clusters.xcc.test.", i) }, dns.RcodeNameError},
		{"refused-depth", func(i int) string { return fmt.Sprintf("r%d.api.c1.dev-team.clusters.xcc.test.", i) }, dns.RcodeNameError},
		{"nxdomain", func(i int) string { return fmt.Sprintf("r%d.gateway.nosuch%d.dev-team.clusters.xcc.test.", i, i) }, dns.RcodeNameError},
		{"gateway-miss", func(i int) string { return fmt.Sprintf("r%d.gateway.c%d.dev-team.clusters.xcc.test.", i, i%gateways) }, dns.RcodeSuccess},
	} {
		// i goes on from one run to the next (-count), so no name is asked
		// twice and none is answered from the cache.
		i := 0
		b.Run(c.what, func(b *testing.B) {
			before, start := rangeRequests(b), i
			for b.Loop() {
				i++
				if r := w.Ask(b, "udp", c.name(i), dns.TypeA, 0); r.Rcode != c.rcode {
					b.Fatalf("rcode %s, want %s\n%s", dns.RcodeToString[r.Rcode], dns.RcodeToString[c.rcode], r)
				}
			}
			b.ReportMetric((rangeRequests(b)-before)/float64(i-start), "ranges/op")
		})
	}
}
