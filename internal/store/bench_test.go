package store_test

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// benchRecords is n records of n gateways, one address each, as serve
// writes them.
func benchRecords(n int) skydnsrecord.Set {
	out := make(skydnsrecord.Set, n)
	for i := range n {
		owner := fmt.Sprintf("EndpointSlice xcc-dns/c%d-gateway-ipv4", i)
		host := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		k, r := record(fmt.Sprintf("gateway.c%d.dev-team.clusters.xcc.test", i), owner, host)
		out[k] = r
	}
	return out
}

// BenchmarkReconcile is serve's full reconcile against a real etcd: from
// empty (every record written, in transactions of store.MaxOpsPerTxn) and when
// everything is already there (one prefix read, nothing written). etcd
// runs embedded in the benchmark's process, so the allocations reported
// include the server's side of each request, as they do in serve.
func BenchmarkReconcile(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		desired := benchRecords(n)
		b.Run(fmt.Sprintf("records=%d/from-empty", n), func(b *testing.B) {
			_, cli := testfixture.StartEtcd(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if _, err := cli.Delete(ctx, "/skydns/", clientv3.WithPrefix()); err != nil {
					b.Fatal(err)
				}
				s := store.New(cli, zone)
				b.StartTimer()
				res, err := s.Reconcile(ctx, desired)
				if err != nil || res.Puts != n {
					b.Fatalf("%d puts, %v", res.Puts, err)
				}
			}
		})
		b.Run(fmt.Sprintf("records=%d/unchanged", n), func(b *testing.B) {
			_, cli := testfixture.StartEtcd(b)
			ctx := context.Background()
			s := store.New(cli, zone)
			if _, err := s.Reconcile(ctx, desired); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Reconcile(ctx, desired)
				if err != nil || res.Puts+res.Deletes != 0 {
					b.Fatalf("%d puts %d deletes, %v", res.Puts, res.Deletes, err)
				}
			}
		})
	}
}

// BenchmarkSyncOwnerUnchanged is one EndpointSlice's sync when its records
// are already there, beside n others: it reads only the mirror's index, so
// it should not grow with n.
func BenchmarkSyncOwnerUnchanged(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			_, cli := testfixture.StartEtcd(b)
			ctx := context.Background()
			desired := benchRecords(n)
			s := store.New(cli, zone)
			if _, err := s.Reconcile(ctx, desired); err != nil {
				b.Fatal(err)
			}
			owner := "EndpointSlice xcc-dns/c0-gateway-ipv4"
			mine := s.OwnedBy(owner)
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.SyncOwner(ctx, owner, mine)
				if err != nil || res.Puts+res.Deletes != 0 {
					b.Fatalf("%+v, %v", res, err)
				}
			}
		})
	}
}
