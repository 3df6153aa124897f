package serve

import (
	"fmt"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

var sinkSet skydnsrecord.Set

func BenchmarkSliceRecords(b *testing.B) {
	for _, n := range []int{1, 10} {
		// One endpoint per address.
		slice := testfixture.IPv4Slice("gw-a-ipv4", "*.gateway.cluster-a.dev-team.clusters.xcc.test")
		slice.Endpoints = nil
		for i := range n {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("192.0.2.%d", i+1)}})
		}
		b.Run(fmt.Sprintf("addresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				set, problems := SliceRecords(slice, skydnsrecord.DefaultDomain)
				if len(problems) != 0 || len(set) != n {
					b.Fatalf("%d records, problems %v", len(set), problems)
				}
				sinkSet = set
			}
		})
	}
}
