package skydnsrecord

import (
	"fmt"
	"testing"
)

var (
	sinkString string
	sinkPlan   Plan
)

func BenchmarkKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString = Key("gateway.cluster-a.dev-team.clusters.xcc.test")
	}
}

func BenchmarkParseHostname(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		name, _, err := ParseHostname("*.gateway.cluster-a.dev-team.clusters.xcc.test", "xcc.test")
		if err != nil {
			b.Fatal(err)
		}
		sinkString = name
	}
}

// benchSets returns n desired records and a current set equal to them
// except for changed of them, whose address differs.
func benchSets(n, changed int) (desired, current Set) {
	desired, current = make(Set, n), make(Set, n)
	for i := range n {
		owner := fmt.Sprintf("EndpointSlice xcc-dns/gw-%d-ipv4", i)
		name := fmt.Sprintf("gateway.cluster-%d.dev-team.clusters.xcc.test", i)
		host := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		r := Record{Host: host, TTL: DefaultTTL, Owner: owner}
		key := RecordKey(name, owner, host)
		desired[key] = r
		if i < changed {
			r.Host = "192.0.2.1"
		}
		current[key] = r
	}
	return desired, current
}

func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, c := range []struct {
			name    string
			changed int
		}{{"unchanged", 0}, {"changed1pct", n / 100}} {
			desired, current := benchSets(n, c.changed)
			b.Run(fmt.Sprintf("records=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sinkPlan = Diff(desired, current)
				}
				if len(sinkPlan.Puts) != c.changed {
					b.Fatalf("%d puts, want %d", len(sinkPlan.Puts), c.changed)
				}
			})
		}
	}
}
