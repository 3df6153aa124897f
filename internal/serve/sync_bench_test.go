package serve

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/contract"
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

// benchImportSlices are the contract slices of n imports of the
// clusterset zone, as the controller writes them into a workload
// cluster: one in ten headless with two named pods, the others
// ClusterSetIP, each with port http/TCP 80; batch makes the names of
// one call distinct from another's.
func benchImportSlices(batch, n int) []*discoveryv1.EndpointSlice {
	http := []contract.Port{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	var out []*discoveryv1.EndpointSlice
	for i := range n {
		imp := contract.ClusterSetImport{Namespace: "bench", Name: fmt.Sprintf("svc-%d-%d", batch, i), Type: contract.ImportClusterSetIP,
			IPs: []string{fmt.Sprintf("10.%d.%d.%d", batch&255, i>>8&255, i&255)}, Ports: http}
		if i%10 == 0 {
			var eps []contract.Endpoint
			for p := range 2 {
				eps = append(eps, contract.Endpoint{Address: fmt.Sprintf("10.%d.%d.%d", 128+batch&127, i>>8&255, i&255^p), Hostname: fmt.Sprintf("%s-%d", imp.Name, p)})
			}
			imp.Type, imp.IPs, imp.Ports = contract.ImportHeadless, nil, nil
			imp.Sources = []contract.ClusterSetSource{{Cluster: "cluster-a",
				Endpoints: contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{{Ports: http, IPv4: eps}}}}}
		}
		for _, s := range contract.BuildClusterSet(imp, contract.DefaultClusterSetZone) {
			s.Namespace = DefaultNamespace
			out = append(out, s)
		}
	}
	return out
}

// BenchmarkClusterSetFill is serve catching up with n new imports of the
// clusterset zone that arrive at once (a ClusterSet filled, or many
// exports at once), against a real etcd: their slices are in the
// informer's cache and queued, then the workers start; one op is until
// every import's name is written and the queue is empty. It reports the
// etcd transactions per import and how long each took.
func BenchmarkClusterSetFill(b *testing.B) {
	for _, n := range []int{1000} {
		b.Run(fmt.Sprintf("imports=%d", n), func(b *testing.B) {
			var txns txnCount
			for b.Loop() {
				b.StopTimer()
				s, stop := queuedImports(b, n, &txns)
				b.StartTimer()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); s.queue.Run(ctx, s.workers) }()
				waitImports(b, s, n)
				b.StopTimer()
				cancel()
				<-done
				stop()
				b.StartTimer() // b.Loop needs it running
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/import")
			b.ReportMetric(float64(txns.n.Load())/float64(b.N*n), "txns/import")
			b.ReportMetric(float64(txns.nanos.Load())/1e3/float64(max(txns.n.Load(), 1)), "µs/txn")
		})
	}
}

// queuedImports is a syncer of the clusterset zone on a new etcd (its
// transactions counted in txns), reconciled once while empty, with the
// slices of n imports in its informer's cache and queued, no worker
// started yet; stop stops its informer.
func queuedImports(b *testing.B, n int, txns *txnCount) (*Syncer, func()) {
	b.Helper()
	_, cli := testfixture.StartEtcd(b)
	ctx, cancel := context.WithCancel(context.Background())
	kube := fake.NewClientset()
	s, factory := New(Config{
		Client: kube, Namespace: DefaultNamespace, Domain: skydnsrecord.DefaultDomain,
		Store:   store.New(countingKV{cli, txns}, skydnsrecord.DefaultDomain).WithNames(contract.DefaultClusterSetZone),
		Metrics: NewMetrics(prometheus.NewRegistry()), ClusterSetZone: contract.DefaultClusterSetZone,
	})
	stop := func() { cancel(); factory.Shutdown() }
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced) {
		b.Fatal("EndpointSlice cache did not sync")
	}
	if err := s.reconcileAll(ctx); err != nil {
		b.Fatal(err)
	}
	objs := benchImportSlices(0, n)
	for _, o := range objs {
		if _, err := kube.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for s.queue.Len() < len(objs) {
		time.Sleep(time.Millisecond)
	}
	return s, stop
}

// waitImports waits until the name record of every import is in the
// store and the queue is empty.
func waitImports(b *testing.B, s *Syncer, n int) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for i := 0; i < n; {
		x := fmt.Sprintf("svc-0-%d.bench.svc.%s", i, contract.DefaultClusterSetZone)
		if len(s.store.OwnedBy(nameOwnerPrefix+skydnsrecord.Key(contract.HeadlessAllName(x)))) == 1 {
			i++
			continue
		}
		if time.Now().After(deadline) {
			b.Fatalf("import %d of %d not written", i, n)
		}
		time.Sleep(time.Millisecond)
	}
	for s.queue.Len() > 0 {
		time.Sleep(time.Millisecond)
	}
}

// txnCount counts etcd transactions and the time they took.
type txnCount struct{ n, nanos atomic.Int64 }

// countingKV is an etcd client whose transactions are counted.
type countingKV struct {
	*clientv3.Client
	count *txnCount
}

func (kv countingKV) Txn(ctx context.Context) clientv3.Txn {
	return countingTxn{kv.Client.Txn(ctx), kv.count}
}

type countingTxn struct {
	clientv3.Txn
	count *txnCount
}

func (t countingTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	return countingTxn{t.Txn.If(cs...), t.count}
}
func (t countingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	return countingTxn{t.Txn.Then(ops...), t.count}
}
func (t countingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	return countingTxn{t.Txn.Else(ops...), t.count}
}

func (t countingTxn) Commit() (*clientv3.TxnResponse, error) {
	start := time.Now()
	defer func() { t.count.n.Add(1); t.count.nanos.Add(int64(time.Since(start))) }()
	return t.Txn.Commit()
}
