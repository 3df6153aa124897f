package testfixture

import (
	"context"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
)

// WaitBound is how long WaitStopped and Eventually wait. It bounds a
// test that would otherwise hang, and is no speed assertion: on a busy
// machine a few failed writes back a lane off for seconds (lane), and
// the wait must outlast that.
const WaitBound = time.Minute

// WaitStopped waits WaitBound at most for done, closed when what's Run
// returned; past that it fails the test with every goroutine's stack.
func WaitStopped(t testing.TB, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(WaitBound):
		buf := make([]byte, 1<<20)
		n := goruntime.Stack(buf, true)
		t.Errorf("the %s did not stop within %s; goroutines:\n%s", what, WaitBound, buf[:n])
	}
}

// Eventually polls ok for WaitBound, failing the test with what it waited
// for.
func Eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, WaitBound, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		t.Fatalf("never: %s", what)
	}
}

// CAPICluster is the Cluster API Cluster name of dev-team, with labels
// and, when apiHost is set, that control-plane endpoint host.
func CAPICluster(name string, labels map[string]string, apiHost string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": name, "namespace": "dev-team"},
		"spec":     map[string]any{},
	}}
	u.SetLabels(labels)
	if apiHost != "" {
		_ = unstructured.SetNestedField(u.Object, apiHost, "spec", "controlPlaneEndpoint", "host")
	}
	return u
}

// FakeManagement is the dynamic client of a fake management cluster
// holding objs. GatewayDNS and ClusterSet objects are created through
// their resource (the fake tracker guesses a resource from a kind,
// "gatewaydnses"); clusters is the served version of Cluster API
// Clusters. A status update changes status alone, as on an API server:
// the fake would store the whole object sent, so a sync's status update
// would undo a deletionTimestamp set since it read the object.
func FakeManagement(ctx context.Context, t testing.TB, clusters schema.GroupVersionResource, objs []runtime.Object) *dynamicfake.FakeDynamicClient {
	t.Helper()
	// An empty scheme: the dynamic fake then keeps everything unstructured.
	scheme := runtime.NewScheme()
	var initial []runtime.Object
	var created []*unstructured.Unstructured
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && (u.GetKind() == v1alpha1.GatewayDNSKind.Kind || u.GetKind() == xccv1alpha1.ClusterSetKind.Kind) {
			created = append(created, u)
			continue
		}
		initial = append(initial, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		v1alpha1.GatewayDNSResource:    "GatewayDNSList",
		xccv1alpha1.ClusterSetResource: "ClusterSetList",
		clusters:                       "ClusterList",
	}, initial...)
	for _, gvr := range []schema.GroupVersionResource{v1alpha1.GatewayDNSResource, xccv1alpha1.ClusterSetResource} {
		dyn.PrependReactor("update", gvr.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			up, ok := a.(k8stesting.UpdateAction)
			if !ok || up.GetSubresource() != "status" {
				return false, nil, nil
			}
			sent, ok := up.GetObject().(*unstructured.Unstructured)
			if !ok {
				return false, nil, nil
			}
			cur, err := dyn.Tracker().Get(gvr, sent.GetNamespace(), sent.GetName())
			if err != nil {
				return true, nil, err
			}
			next := cur.(*unstructured.Unstructured).DeepCopy()
			next.Object["status"] = sent.Object["status"]
			return true, next, dyn.Tracker().Update(gvr, next, sent.GetNamespace())
		})
	}
	for _, u := range created {
		gvr := v1alpha1.GatewayDNSResource
		if u.GetKind() == xccv1alpha1.ClusterSetKind.Kind {
			gvr = xccv1alpha1.ClusterSetResource
		}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return dyn
}

// EventWait is how long SawEvent waits for an event.
const EventWait = 5 * time.Second

// SawEvent reports whether rec recorded an event containing every part,
// waiting for it up to EventWait: the event of a sync may come after the
// status or object the test waited for, written earlier in that sync.
func SawEvent(rec *record.FakeRecorder, parts ...string) bool {
	timeout := time.After(EventWait)
	for {
		select {
		case ev := <-rec.Events:
			all := true
			for _, p := range parts {
				all = all && strings.Contains(ev, p)
			}
			if all {
				return true
			}
		case <-timeout:
			return false
		}
	}
}
