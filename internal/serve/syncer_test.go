package serve

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/etcdserver/etcdtest"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
)

func ipv4Slice(name, hostname, addr string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: DefaultNamespace, Annotations: map[string]string{contract.AnnotationHostname: hostname, contract.AnnotationGatewayRef: "dev-team/gw"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}}},
	}
}

// A slice that arrives while a full reconcile runs, after its snapshot of
// the slices, keeps its records: its sync waits for the reconcile instead
// of being undone by it.
func TestSliceSyncedDuringReconcileKeepsItsRecords(t *testing.T) {
	_, cli := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, factory := New(Config{
		Client:    fake.NewClientset(ipv4Slice("gw-a", "*.gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")),
		Namespace: DefaultNamespace, Domain: skydnsrecord.DefaultDomain,
		Store: store.New(cli, skydnsrecord.DefaultDomain), Metrics: NewMetrics(prometheus.NewRegistry()),
	})
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), s.synced) {
		t.Fatal("EndpointSlice cache did not sync")
	}
	if err := s.reconcileAll(ctx); err != nil {
		t.Fatal(err)
	}

	late := ipv4Slice("gw-b", "*.gateway.cluster-b.dev-team.clusters.xcc.test", "192.0.2.40")
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
