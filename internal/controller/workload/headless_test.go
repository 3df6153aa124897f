package workload

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A headless export is told of every change of its Service's endpoints;
// a gateway's health only of changes of its readiness. Both read the
// same informer.
func TestEndpointEventsByUse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slice := func(addrs ...string) *discoveryv1.EndpointSlice {
		s := testfixture.ServiceEndpoints("databases", "postgres", "postgres-1")
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, testfixture.Endpoint(a, true))
		}
		return s
	}
	client := fake.NewClientset(testfixture.HeadlessService(), slice("10.1.0.5"),
		testfixture.ServiceEndpoints("databases", "other", "other-1", testfixture.Endpoint("10.9.0.1", true)))
	var calls atomic.Int32
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func([]string) { calls.Add(1) }, Gauge: func(int) {}})
	m.Start(ctx)
	acc := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "dev-team/gw")
	if acc.Cluster == nil {
		t.Fatalf("no cluster: %+v", acc)
	}
	w := acc.Cluster
	m.WatchService(w, "databases", "postgres", "dev-team/gw", false)
	var eps []*discoveryv1.EndpointSlice
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		var synced bool
		eps, synced = m.Endpoints(w, "databases", "postgres")
		return synced, nil
	}); err != nil {
		t.Fatal("EndpointSlices never listed")
	}
	if len(eps) != 1 || eps[0].Endpoints[0].Addresses[0] != "10.1.0.5" {
		t.Fatalf("cached %+v: only the Service's own slices, with their addresses", eps)
	}
	settle := func() int32 {
		time.Sleep(300 * time.Millisecond)
		return calls.Swap(0)
	}
	settle()
	update := func(s *discoveryv1.EndpointSlice) {
		t.Helper()
		if _, err := client.DiscoveryV1().EndpointSlices("databases").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update(slice("10.1.0.5", "10.1.0.6"))
	if n := settle(); n != 0 {
		t.Errorf("gateway use only: a pod more is %d events, want none (readiness unchanged)", n)
	}
	m.WatchService(w, "databases", "postgres", "dev-team/db", true)
	settle()
	update(slice("10.1.0.5"))
	if n := settle(); n != 1 {
		t.Errorf("headless use: a pod less is %d events, want 1", n)
	}
	if _, _, users := m.Watched(); users != 2 {
		t.Errorf("users %d, want 2 on one Service watch", users)
	}
}
