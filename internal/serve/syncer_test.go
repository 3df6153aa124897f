package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A slice that arrives while a full reconcile runs, after its snapshot of
// the slices, keeps its records: its sync waits for the reconcile instead
// of being undone by it.
func TestSliceSyncedDuringReconcileKeepsItsRecords(t *testing.T) {
	s, cli, factory := startSyncer(t, 0, testfixture.IPv4Slice("gw-a", "*.gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10"))
	ctx := context.Background()

	late := testfixture.IPv4Slice("gw-b", "*.gateway.cluster-b.dev-team.clusters.xcc.test", "192.0.2.40")
	synced := make(chan error, 1)
	s.afterList = func() {
		// The informer learns of the slice and its sync starts; give it
		// time to finish, as it would without the lock.
		if err := factory.Discovery().V1().EndpointSlices().Informer().GetIndexer().Add(late); err != nil {
			t.Error(err)
		}
		go func() { synced <- s.syncHandler(ctx, DefaultNamespace+"/gw-b") }()
		select {
		case err := <-synced:
			synced <- err
		case <-time.After(time.Second):
		}
	}
	if err := s.reconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/skydns/test/xcc/clusters/dev-team/cluster-b/gateway/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 1 {
		t.Fatalf("%d records of the slice synced during the reconcile, want 1", resp.Count)
	}
}

// startSyncer runs a syncer on a real etcd over the given slices and
// returns it after its first reconcile.
func startSyncer(t *testing.T, maxRecords int, slices ...*discoveryv1.EndpointSlice) (*Syncer, *clientv3.Client, informers.SharedInformerFactory) {
	t.Helper()
	_, cli := testfixture.StartEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	objs := make([]runtime.Object, len(slices))
	for i, s := range slices {
		objs[i] = s
	}
	s, factory := New(Config{
		Client:    fake.NewClientset(objs...),
		Namespace: DefaultNamespace, Domain: skydnsrecord.DefaultDomain,
		Store: store.New(cli, skydnsrecord.DefaultDomain), Metrics: NewMetrics(prometheus.NewRegistry()),
		MaxRecords: maxRecords,
	})
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), s.synced) {
		t.Fatal("EndpointSlice cache did not sync")
	}
	if err := s.reconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	return s, cli, factory
}

func countUnder(t *testing.T, cli *clientv3.Client, name string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), skydnsrecord.Key(name)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// When the records do not all fit, the slices served longest keep theirs
// and the newer one is refused whole, at a reconcile and at its own sync.
func TestRecordBudgetKeepsOlderSlices(t *testing.T) {
	older := testfixture.IPv4Slice("gw-old", "*.gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")
	older.Endpoints[0].Addresses = append(older.Endpoints[0].Addresses, "192.0.2.11")
	older.CreationTimestamp = metav1.NewTime(time.Unix(1000, 0))
	newer := testfixture.IPv4Slice("gw-new", "*.gateway.cluster-b.dev-team.clusters.xcc.test", "192.0.2.20")
	newer.Endpoints[0].Addresses = append(newer.Endpoints[0].Addresses, "192.0.2.21")
	newer.CreationTimestamp = metav1.NewTime(time.Unix(2000, 0))
	s, cli, _ := startSyncer(t, 3, newer, older)
	if got := countUnder(t, cli, "gateway.cluster-a.dev-team.clusters.xcc.test"); got != 2 {
		t.Errorf("older slice: %d records, want 2", got)
	}
	if got := countUnder(t, cli, "gateway.cluster-b.dev-team.clusters.xcc.test"); got != 0 {
		t.Errorf("newer slice over the budget: %d records, want 0", got)
	}
	if err := s.syncHandler(context.Background(), DefaultNamespace+"/gw-new"); err != nil {
		t.Fatal(err)
	}
	if got := countUnder(t, cli, "gateway.cluster-b.dev-team.clusters.xcc.test"); got != 0 {
		t.Errorf("newer slice synced over the budget: %d records, want 0", got)
	}
	var m dto.Metric
	if err := s.metrics.RefusedSlices.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 2 {
		t.Errorf("refused slices metric %v, want 2", got)
	}
}

// A slice whose hostname is a sub-name of another cluster's gateway, or a
// name of another namespace, publishes nothing; the other slices are
// served.
func TestHostileSlicesPublishNothing(t *testing.T) {
	victim := testfixture.IPv4Slice("victim", "*.gateway.cluster-b.dev-team.clusters.xcc.test", "192.0.2.20")
	subName := testfixture.IPv4Slice("sub", "evil.gateway.cluster-b.dev-team.clusters.xcc.test", "203.0.113.66")
	otherNS := testfixture.IPv4Slice("other", "*.gateway.cluster-c.other-team.clusters.xcc.test", "203.0.113.67")
	_, cli, _ := startSyncer(t, 0, victim, subName, otherNS)
	resp, err := cli.Get(context.Background(), skydnsrecord.Prefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Value), "203.0.113.") {
			t.Errorf("hostile record %s = %s", kv.Key, kv.Value)
		}
	}
	if got := countUnder(t, cli, "gateway.cluster-b.dev-team.clusters.xcc.test"); got != 1 {
		t.Errorf("victim: %d records, want 1", got)
	}
}

// A full reconcile that lands stamps its time, for the alert on a serve
// whose records are no longer repaired; the records gauge counts them.
func TestReconcileTimeMetric(t *testing.T) {
	before := time.Now()
	s, _, _ := startSyncer(t, 0, testfixture.IPv4Slice("gw", "*.gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10"))
	var m dto.Metric
	if err := s.metrics.LastReconcile.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetGauge().GetValue(); got < float64(before.Unix()) || got > float64(time.Now().Unix()+1) {
		t.Errorf("last reconcile time %v, want between %d and now", got, before.Unix())
	}
	if err := s.metrics.Records.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetGauge().GetValue(); got < 1 {
		t.Errorf("records gauge %v, want the records written", got)
	}
}
