package serve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// BenchmarkSyncSlice is serve's whole sync of one EndpointSlice that did
// not change, beside n others (each a gateway of its own cluster), against
// a real etcd: the slice's records, its name record, and the metrics. A
// cluster that opts in, or a new cluster everywhere, is one such sync per
// slice, so it must not grow with n.
func BenchmarkSyncSlice(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("slices=%d", n), func(b *testing.B) {
			_, cli := testfixture.StartEtcd(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			objs := make([]runtime.Object, n)
			for i := range n {
				objs[i] = testfixture.IPv4Slice(fmt.Sprintf("gw-c%d-gateway-ipv4", i), fmt.Sprintf("*.gateway.c%d.dev-team.clusters.xcc.test", i),
					fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
			}
			s, factory := New(Config{
				Client: fake.NewClientset(objs...), Namespace: DefaultNamespace, Domain: skydnsrecord.DefaultDomain,
				Store: store.New(cli, skydnsrecord.DefaultDomain), Metrics: NewMetrics(prometheus.NewRegistry()),
			})
			factory.Start(ctx.Done())
			defer func() { cancel(); factory.Shutdown() }()
			syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
			defer syncCancel()
			if !cache.WaitForCacheSync(syncCtx.Done(), s.synced) {
				b.Fatal("EndpointSlice cache did not sync")
			}
			if err := s.reconcileAll(ctx); err != nil {
				b.Fatal(err)
			}
			key := DefaultNamespace + "/gw-c0-gateway-ipv4"
			b.ReportAllocs()
			for b.Loop() {
				if err := s.syncHandler(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
