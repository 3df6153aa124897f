package workload

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/typed/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// memberClient is a member's client in tests: the fake core clientset and
// the fake MCS clientset.
type memberClient struct {
	*fake.Clientset
	mcs *mcsfake.Clientset
}

func (c memberClient) MulticlusterV1beta1() mcsclient.MulticlusterV1beta1Interface {
	return c.mcs.MulticlusterV1beta1()
}

var _ MCSClient = memberClient{}

// WatchExports starts the informers of a member; Exports lists its exports
// sorted and its live namespaces, follows changes with an event for the
// clusterset, and Release stops them.
func TestWatchExports(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	export := func(ns, name string) *mcsv1beta1.ServiceExport {
		return &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	gone := metav1.Now()
	client := memberClient{
		Clientset: fake.NewClientset(
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "old", DeletionTimestamp: &gone, Finalizers: []string{"kubernetes"}}}),
		mcs: mcsfake.NewSimpleClientset(export("shop", "web"), export("shop", "api")),
	}
	var events atomic.Int32
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func(users []string) {
			if reflect.DeepEqual(users, []string{"set"}) {
				events.Add(1)
			}
		}, Gauge: func(int) {}})
	m.Start(ctx)
	acc := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "set")
	if _, _, synced := m.Exports(acc.Cluster); synced {
		t.Fatal("synced before WatchExports")
	}
	m.WatchExports(acc.Cluster, "set")
	names := func() (out []string, nss map[string]bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			exports, namespaces, synced := m.Exports(acc.Cluster)
			out, nss = nil, namespaces
			for _, e := range exports {
				out = append(out, e.Namespace+"/"+e.Name)
			}
			return synced, nil
		})
		if err != nil {
			t.Fatal("never synced")
		}
		return out, nss
	}
	got, nss := names()
	if want := []string{"shop/api", "shop/web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("exports %q, want %q", got, want)
	}
	if want := map[string]bool{"shop": true}; !reflect.DeepEqual(nss, want) {
		t.Errorf("namespaces %v, want %v (one being deleted is none)", nss, want)
	}
	before := events.Load()
	if err := client.mcs.MulticlusterV1beta1().ServiceExports("shop").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		got, _ := names()
		return reflect.DeepEqual(got, []string{"shop/web"}) && events.Load() > before, nil
	})
	if err != nil {
		t.Errorf("unexport not seen, or no event: exports %q, events %d", got, events.Load()-before)
	}
	m.Release("set", nil)
	if clusters, _, _ := m.Watched(); clusters != 0 {
		t.Errorf("%d clusters watched after the last user went", clusters)
	}
}

// A Service's EndpointSlices as read never include those this controller
// wrote beside them (a clusterset's imported endpoints carry the same
// service-name label): what a member exports is its own pods only.
func TestEndpointsLeaveOutOurSlices(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	own := testfixture.ServiceEndpoints("shop", "web", "web-1")
	own.Endpoints = append(own.Endpoints, testfixture.Endpoint("10.244.0.1", true))
	imported := testfixture.ServiceEndpoints("shop", "web", "web-imported")
	imported.Labels[contract.LabelManagedBy] = contract.ManagedByValue
	imported.Endpoints = append(imported.Endpoints, testfixture.Endpoint("10.245.0.1", true))
	client := fake.NewClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}, own, imported)
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func([]string) {}, Gauge: func(int) {}})
	m.Start(ctx)
	acc := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "set")
	m.WatchService(acc.Cluster, "shop", "web", "set", true)
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		slices, synced := m.Endpoints(acc.Cluster, "shop", "web")
		got = nil
		for _, s := range slices {
			got = append(got, s.Name)
		}
		return synced, nil
	})
	if err != nil || !reflect.DeepEqual(got, []string{"web-1"}) {
		t.Errorf("slices %q (%v), want only web-1", got, err)
	}
}

// The member-wide Service informer keeps what the aggregator reads and
// the identity only, idempotently.
func TestServiceForCache(t *testing.T) {
	tp := corev1.ServiceInternalTrafficPolicyLocal
	in := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u", ResourceVersion: "4",
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": strings.Repeat("x", 1000)}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.1", Selector: map[string]string{"app": "web"},
			Ports:           []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
			SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: &tp},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u", ResourceVersion: "4"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.1",
			Ports:           []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}},
			SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: &tp},
	}
	got, err := serviceForCache(in)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("serviceForCache = %+v, %v\nwant %+v", got, err, want)
	}
	if again, _ := serviceForCache(got); !reflect.DeepEqual(again, want) {
		t.Errorf("not idempotent: %+v", again)
	}
}

// Of an export's updates, only those the set reads are events: its
// status alone is the controller's own write.
func TestExportChanged(t *testing.T) {
	base := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u", Generation: 1}}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(*mcsv1beta1.ServiceExport)
		want   bool
	}{
		{"status alone", func(e *mcsv1beta1.ServiceExport) {
			e.Status.Conditions = []metav1.Condition{{Type: "Valid", Status: metav1.ConditionTrue}}
			e.ResourceVersion = "9"
		}, false},
		{"spec", func(e *mcsv1beta1.ServiceExport) {
			e.Spec.ExportedLabels = map[string]string{"tier": "web"}
			e.Generation = 2
		}, true},
		{"spec, generation not bumped", func(e *mcsv1beta1.ServiceExport) { e.Spec.ExportedAnnotations = map[string]string{"a": "b"} }, true},
		{"being deleted", func(e *mcsv1beta1.ServiceExport) { e.DeletionTimestamp = &now }, true},
		{"replaced", func(e *mcsv1beta1.ServiceExport) { e.UID = "v" }, true},
	} {
		cur := base.DeepCopy()
		tc.change(cur)
		if got := exportChanged(base, cur); got != tc.want {
			t.Errorf("%s: changed %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A member's ServiceExport informer keeps what Config.ExportCache keeps
// of an export, or all of it without one.
func TestExportTransform(t *testing.T) {
	in := func() *mcsv1beta1.ServiceExport {
		return &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			Annotations: map[string]string{"big": "x"}}}
	}
	dropAnnotations := func(obj any) (any, error) {
		e := obj.(*mcsv1beta1.ServiceExport).DeepCopy()
		e.Annotations = nil
		return e, nil
	}
	if got, _ := exportTransform(dropAnnotations)(in()); got.(*mcsv1beta1.ServiceExport).Annotations != nil {
		t.Errorf("ExportCache not applied: %+v", got)
	}
	if got, _ := exportTransform(nil)(in()); got.(*mcsv1beta1.ServiceExport).Annotations["big"] != "x" {
		t.Errorf("without ExportCache the export is not kept whole: %+v", got)
	}
}
