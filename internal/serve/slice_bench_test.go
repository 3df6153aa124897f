package serve

import (
	"fmt"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

var sinkSet skydnsrecord.Set

func BenchmarkSliceRecords(b *testing.B) {
	for _, n := range []int{1, 10} {
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: "gw-a-ipv4", Namespace: DefaultNamespace,
				Annotations: map[string]string{contract.AnnotationHostname: "*.gateway.cluster-a.dev-team.clusters.xcc.test", contract.AnnotationGatewayRef: "dev-team/gw"},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
		}
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
