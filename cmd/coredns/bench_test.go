package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

var (
	// wildcardGuard are the expressions of the Corefile's template for
	// names with an `any` or `*` label.
	wildcardGuard = []string{`^(\*|any)\.`, `\.(\*|any)\.`}
	// oneExpressionGuard is the same test in one expression, for comparison.
	oneExpressionGuard = `(^|\.)(\*|any)\.`
)

// anyTypeMatches returns the `match` expressions of the shipped Corefile's
// `template ANY ANY` blocks in their order: the ones the template plugin
// tries on an A query before passing it on (the others stop at the type).
func anyTypeMatches(tb testing.TB) []string {
	tb.Helper()
	text := testfixture.ShippedCorefile(tb)
	var out []string
	anyType := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "template":
			anyType = f[2] == "ANY"
		case len(f) >= 2 && f[0] == "match" && anyType:
			out = append(out, f[1:]...)
		}
	}
	return out
}

// BenchmarkTemplateMatch is the template plugin's work on an A query that
// misses the cache and goes on to the etcd plugin: every ANY-type block's
// expression tried against the name, with the wildcard-label guard as
// shipped, without it, and with it as one expression.
func BenchmarkTemplateMatch(b *testing.B) {
	shipped := anyTypeMatches(b)
	without := slices.DeleteFunc(slices.Clone(shipped), func(e string) bool { return slices.Contains(wildcardGuard, e) })
	if len(without) != len(shipped)-len(wildcardGuard) {
		b.Fatalf("the Corefile's templates %q lack the guard %q", shipped, wildcardGuard)
	}
	for _, bc := range []struct {
		what  string
		exprs []string
	}{
		{"shipped", shipped},
		{"without-guard", without},
		{"one-expression-guard", append([]string{oneExpressionGuard}, without...)},
	} {
		var res []*regexp.Regexp
		for _, e := range bc.exprs {
			res = append(res, regexp.MustCompile(e))
		}
		// Names as the template plugin sees them: below gateway. already
		// rewritten onto the gateway.
		for _, q := range []struct{ what, name string }{
			{"gateway", "gateway.cluster-0042.dev-team.clusters.xcc.test."},
			{"api", "api.cluster-0042.dev-team.clusters.xcc.test."},
		} {
			b.Run(bc.what+"/"+q.what, func(b *testing.B) {
				for b.Loop() {
					for _, re := range res {
						if re.MatchString(q.name) {
							b.Fatalf("%s matches %s", re, q.name)
						}
					}
				}
			})
		}
	}
}

// BenchmarkWildcardLabelQuery asks, with 1,000 gateways in etcd, names whose
// random first label passes every cache and whose `any` label the etcd
// plugin takes for a wildcard over all of clusters.: with the shipped
// Corefile, and with its guard taken out. The time is the whole round trip
// to CoreDNS and etcd in this process; B/op and allocs/op are the process's.
func BenchmarkWildcardLabelQuery(b *testing.B) {
	const gateways = 1000
	var published []*discoveryv1.EndpointSlice
	for i := range gateways {
		published = append(published, testfixture.IPv4Slice(fmt.Sprintf("gw-%d", i), fmt.Sprintf("*.gateway.c%d.dev-team.clusters.xcc.test", i),
			fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)))
	}
	shipped := testfixture.ShippedCorefile(b)
	// A name is never empty: the guard matches nothing and falls through.
	guardLine := "match " + strings.Join(wildcardGuard, " ")
	unguarded := strings.Replace(shipped, guardLine, "match ^$", 1)
	if unguarded == shipped {
		b.Fatalf("no %q in the Corefile", guardLine)
	}
	wildcard := func(i int) string { return fmt.Sprintf("r%d.x.any.clusters.xcc.test.", i) }
	for _, c := range []struct {
		what     string
		corefile string
		name     func(i int) string
		rcode    int
	}{
		{"shipped", shipped, wildcard, dns.RcodeNameError},
		{"unguarded", unguarded, wildcard, dns.RcodeSuccess},
		// For scale: a name below a gateway that misses the cache.
		{"gateway-miss", shipped, func(i int) string {
			return fmt.Sprintf("r%d.gateway.c%d.dev-team.clusters.xcc.test.", i, i%gateways)
		}, dns.RcodeSuccess},
	} {
		b.Run(c.what, func(b *testing.B) {
			w := startWorldWith(b, coredns.Directives, c.corefile, published)
			before, i := rangeRequests(b), 0
			for b.Loop() {
				i++
				if r := w.Ask(b, "udp", c.name(i), dns.TypeA, 0); r.Rcode != c.rcode {
					b.Fatalf("rcode %s, want %s\n%s", dns.RcodeToString[r.Rcode], dns.RcodeToString[c.rcode], r)
				}
			}
			b.ReportMetric((rangeRequests(b)-before)/float64(i), "ranges/op")
		})
	}
}
