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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/clusterset"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// servingDiscovery is a management cluster serving Cluster API v1beta2
// and the ClusterSet CRD, whose discovery of the ClusterSet group fails
// the first failures times (an API server restarting, a 503 of its
// aggregation layer).
func servingDiscovery(failures int32) *fake.Clientset {
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
		if n%2 == 0 && n/2 <= failures {
			return true, nil, apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
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
	apis, err := discoverAPIs(ctx, d, &start, metrics)
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
		_, err := discoverAPIs(ctx, kube.Discovery(), &start, NewMetrics(nil))
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
