package workload

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A cluster whose Services both names (a GatewayDNS's spec.names) and
// exports (a clusterset) read is listed and watched for Services once:
// one informer, each reader told of its own changes only; it stops once
// neither reads it.
func TestNamesAndExportsShareOneServiceInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claimed := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "front",
		Annotations: map[string]string{contract.AnnotationFQDN: "front"}}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	exported := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10"}}
	client := memberClient{
		Clientset: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, claimed, exported),
		mcs:       mcsfake.NewSimpleClientset(&mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}),
	}
	var mu sync.Mutex
	lists, watches := 0, 0
	// Only reads of every Service (but the controller's own) count: the
	// controller's own derived Services are read by label, apart.
	every := func(a k8stesting.Action) bool {
		l, ok := a.(k8stesting.ListAction)
		if ok {
			return l.GetListRestrictions().Labels.String() == notOwnServices()
		}
		w, ok := a.(k8stesting.WatchAction)
		return ok && w.GetWatchRestrictions().Labels.String() == notOwnServices()
	}
	count := func(n *int) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			if every(a) {
				*n++
			}
			mu.Unlock()
			return false, nil, nil
		}
	}
	client.PrependReactor("list", "services", count(&lists))
	client.PrependWatchReactor("services", func(a k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		if every(a) {
			watches++
		}
		mu.Unlock()
		return false, nil, nil
	})
	var seen sync.Map
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func(users []string) {
			for _, u := range users {
				seen.Store(u, true)
			}
		}, Gauge: func(int) {}})
	m.Start(ctx)
	acc := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "gd")
	m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "set")
	m.WatchNames(acc.Cluster, "gd")
	m.WatchExports(acc.Cluster, "set")
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		names, nsynced := m.Names(acc.Cluster)
		_, _, esynced := m.Exports(acc.Cluster)
		return nsynced && esynced && len(names) == 1 && m.ExportedService(acc.Cluster, "shop", "web") != nil, nil
	})
	if err != nil {
		t.Fatal("names and exports never both synced")
	}
	mu.Lock()
	if lists != 1 || watches != 1 {
		t.Errorf("%d lists and %d watches of Services, want one of each", lists, watches)
	}
	mu.Unlock()

	// A change of the exported Service is the exports' event alone.
	seen.Clear()
	svc := exported.DeepCopy()
	svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}
	if _, err := client.CoreV1().Services("shop").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, ok := seen.Load("set")
		return ok, nil
	})
	if err != nil {
		t.Error("the exports were not told of their Service's change")
	}
	if _, ok := seen.Load("gd"); ok {
		t.Error("names were told of a Service that claims no name")
	}
	if got := m.ExportedService(acc.Cluster, "shop", "web"); got == nil || !reflect.DeepEqual(got.Spec.Ports, svc.Spec.Ports) {
		t.Errorf("exported Service as cached: %+v", got)
	}

	m.Release("gd", map[string]map[string]bool{"dev-team/cluster-a": {}})
	if acc.Cluster.allServices == nil {
		t.Error("the shared informer stopped while exports read it")
	}
	m.Release("set", nil)
	if acc.Cluster.allServices != nil {
		t.Error("the shared informer kept after both readers went")
	}
}
