package controller

import (
	"context"
	"flag"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/clusterset"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/printable"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// servingDiscovery is a management cluster serving Cluster API v1beta2
// and the ClusterSet CRD, whose discovery of the ClusterSet group fails
// the first failures times (an API server restarting, a 503 of its
// aggregation layer).
func servingDiscovery(failures int32) *fake.Clientset {
	return flakyDiscovery(func(n int32) error {
		if n <= failures {
			return apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
		}
		return nil
	})
}

// flakyDiscovery is servingDiscovery whose n-th discovery of the
// ClusterSet group fails with fail(n), when not nil.
func flakyDiscovery(fail func(n int32) error) *fake.Clientset {
	kube := fake.NewClientset()
	d := kube.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = []*metav1.APIResourceList{
		{GroupVersion: clusterAPIGroup + "/v1beta2", APIResources: []metav1.APIResource{{Name: "clusters", Namespaced: true, Kind: "Cluster"}}},
		{GroupVersion: xccv1alpha1.SchemeGroupVersion.String(), APIResources: []metav1.APIResource{
			{Name: xccv1alpha1.ClusterSetResource.Resource, Namespaced: true, Kind: xccv1alpha1.ClusterSetKind.Kind}}},
	}
	// Each try asks for cluster.x-k8s.io/v1beta2, then for the
	// ClusterSet group: every second call is the ClusterSet group's.
	var calls atomic.Int32
	kube.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		n := calls.Add(1)
		if n%2 != 0 {
			return false, nil, nil
		}
		if err := fail(n / 2); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	return kube
}

// fastDiscovery makes discovery retry within the test.
func fastDiscovery(t *testing.T) {
	old := discoveryBackoff
	discoveryBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 20 * time.Millisecond}
	t.Cleanup(func() { discoveryBackoff = old })
}

// A discovery that fails at the controller's start is tried again until
// it answers: the ClusterSet reconciler then runs, and a ClusterSet
// being deleted loses its finalizer. Each failure is counted, and
// /readyz says why the controller is not ready while it fails.
func TestDiscoveryFailuresAtStartAreRetried(t *testing.T) {
	fastDiscovery(t)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const failures = 3
	kube := servingDiscovery(failures)
	deleting := testfixture.ClusterSetObject("prod")
	deleting.SetFinalizers([]string{clusterset.Finalizer})
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	dyn := testfixture.FakeManagement(ctx, t, clusterGVR, []runtime.Object{deleting})

	var o Options
	o.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	o.StateNamespace = stateNamespace
	metrics := NewMetrics(nil)
	var start startState
	run := o.controllerRunner(management{kube: kube, dyn: dyn}, metrics, record.NewFakeRecorder(100), contract.Grants{}, &start)
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()

	testfixture.Eventually(t, "the controller ready", start.ready.Load)
	testfixture.Eventually(t, "the deleting ClusterSet's finalizer removed", func() bool {
		u, err := dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Get(ctx, "prod", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && !slices.Contains(u.GetFinalizers(), clusterset.Finalizer)
	})
	var m dto.Metric
	if err := metrics.DiscoveryFailures.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != failures {
		t.Errorf("%v discovery failures counted; want %d", got, failures)
	}
	if msg := start.discovery.Load(); msg != nil {
		t.Errorf("/readyz still says %q after discovery answered", *msg)
	}
	cancel()
	select {
	case err := <-done:
		// Stopped by its context: whatever it returns then is no failure.
		t.Logf("the controller stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the controller did not stop")
	}
}

// A management cluster without the ClusterSet CRD (a chart older than
// it) answers so: the controller runs without the ClusterSet half at
// once, with no failure counted and no try again.
func TestDiscoveryOfNoClusterSetsIsAnAnswer(t *testing.T) {
	fastDiscovery(t)
	_, ctx := ktesting.NewTestContext(t)
	kube := servingDiscovery(0)
	d := kube.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = d.Resources[:1]
	metrics := NewMetrics(nil)
	var start startState
	apis, err := discoverAPIs(ctx, d, &start, metrics, nil)
	if err != nil || apis.clusterSets || apis.clusterGVR != clusterGVR {
		t.Fatalf("got %+v, %v; want %v without ClusterSets", apis, err, clusterGVR)
	}
	var m dto.Metric
	if err := metrics.DiscoveryFailures.Write(&m); err != nil || m.GetCounter().GetValue() != 0 {
		t.Errorf("%v failures counted (%v); want none", m.GetCounter().GetValue(), err)
	}
}

// While discovery fails, /readyz says so, with the error; the controller
// stops trying when it is stopped.
func TestDiscoveryFailingIsSaidByReadyz(t *testing.T) {
	fastDiscovery(t)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kube := servingDiscovery(1 << 30)
	var start startState
	done := make(chan error, 1)
	go func() {
		_, err := discoverAPIs(ctx, kube.Discovery(), &start, NewMetrics(nil), nil)
		done <- err
	}()
	testfixture.Eventually(t, "/readyz says discovery fails", func() bool {
		err := start.notReady()
		return strings.Contains(err.Error(), "API discovery of the management cluster failed") &&
			strings.Contains(err.Error(), "unable to handle the request")
	})
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stopped after") {
			t.Errorf("discovery stopped with %v; want the tries and the last error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("discovery did not stop with its context")
	}
}

// readyCondition is the Ready condition of the object name of resource
// in dev-team, nil when it has none (or is not found).
func readyCondition(ctx context.Context, t *testing.T, dyn dynamic.Interface, resource schema.GroupVersionResource, name string) *metav1.Condition {
	t.Helper()
	u, err := dyn.Resource(resource).Namespace("dev-team").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s: %v", resource.Resource, name, err)
	}
	var st struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if m, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
			t.Fatalf("status of %s %s: %v", resource.Resource, name, err)
		}
	}
	return meta.FindStatusCondition(st.Conditions, xccv1alpha1.ConditionReady)
}

// While the API discovery at start fails, every ClusterSet and
// GatewayDNS says so in its Ready condition (APIDiscoveryFailed, with
// the error escaped and cut, as the management API server's text is
// not the controller's): what kubectl get and xcc-syncer status show a
// user first. Once discovery answers, the reconcilers' own Ready
// replaces it.
func TestDiscoveryFailingIsSaidInStatus(t *testing.T) {
	fastDiscovery(t)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failing atomic.Bool
	failing.Store(true)
	hostile := "the server is currently unable to handle the request\x1b[2J" + strings.Repeat("x", 64<<10)
	kube := flakyDiscovery(func(int32) error {
		if failing.Load() {
			return apierrors.NewServiceUnavailable(hostile)
		}
		return nil
	})
	dyn := testfixture.FakeManagement(ctx, t, clusterGVR, []runtime.Object{testfixture.ClusterSetObject("prod"),
		gatewayDNSObject(t, testfixture.GatewayDNS("gw"))})
	var o Options
	o.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	o.StateNamespace = stateNamespace
	var start startState
	run := o.controllerRunner(management{kube: kube, dyn: dyn}, NewMetrics(nil), record.NewFakeRecorder(100), contract.Grants{}, &start)
	done := make(chan struct{})
	go func() { defer close(done); _ = run(ctx) }()

	objects := map[schema.GroupVersionResource]string{xccv1alpha1.ClusterSetResource: "prod", v1alpha1.GatewayDNSResource: "gw"}
	for resource, name := range objects {
		testfixture.Eventually(t, resource.Resource+" says discovery fails", func() bool {
			c := readyCondition(ctx, t, dyn, resource, name)
			return c != nil && c.Reason == xccv1alpha1.ReasonAPIDiscoveryFailed
		})
		c := readyCondition(ctx, t, dyn, resource, name)
		if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "unable to handle the request") ||
			!printable.IsLine(c.Message) || len(c.Message) > mgmt.MaxConditionMessage {
			t.Errorf("%s %s Ready: %s %q (%d bytes); want False, the error escaped and cut", resource.Resource, name, c.Status, c.Message, len(c.Message))
		}
	}
	// /readyz (and the log) hold the error cut too.
	if msg := start.notReady().Error(); len(msg) > 2*printable.MaxBytes || !printable.IsLine(msg) {
		t.Errorf("/readyz says %d bytes, printable %v; want the error escaped and cut", len(msg), printable.IsLine(msg))
	}
	failing.Store(false)
	testfixture.Eventually(t, "the controller ready", start.ready.Load)
	for resource, name := range objects {
		testfixture.Eventually(t, resource.Resource+" Ready written by its reconciler", func() bool {
			c := readyCondition(ctx, t, dyn, resource, name)
			return c != nil && c.Reason != xccv1alpha1.ReasonAPIDiscoveryFailed
		})
	}
	cancel()
	testfixture.WaitStopped(t, "controller", done)
}
