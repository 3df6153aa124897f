package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// The tests of this package run the whole controller, both reconcilers
// as New wires them; the tests of each reconciler are in its package.

var clusterGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// stateNamespace is where the tests' controller keeps its state.
const stateNamespace = "xcc-dns-system"

var contour = map[string]string{"hasContour": "true"}

const gwA = "*.gateway.cluster-a.dev-team.clusters.xcc.test"

// testEnv is a management cluster and workload clusters, all fakes, and
// a controller running on them.
type testEnv struct {
	t    *testing.T
	ctx  context.Context
	mgmt *fake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	mgr  *Manager
	// cancel stops the controller; done is closed when its Run returned.
	cancel context.CancelFunc
	done   chan struct{}
}

// newTestEnvClients runs a controller on a management cluster holding
// mgmtObjs (Secrets) and dynObjs (Clusters, GatewayDNS, ClusterSets),
// where the kubeconfigs in clients (else in workloads) get those clients.
func newTestEnvClients(t *testing.T, mgmtObjs []runtime.Object, dynObjs []runtime.Object, workloads map[string]*fake.Clientset,
	clients map[string]workload.Client, options ...func(*Config)) *testEnv {
	t.Helper()
	_, base := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(base)
	t.Cleanup(cancel)
	e := &testEnv{t: t, ctx: ctx, mgmt: fake.NewClientset(mgmtObjs...), dyn: testfixture.FakeManagement(ctx, t, clusterGVR, dynObjs), cancel: cancel}
	cfg := Config{
		Kube: e.mgmt, Dynamic: e.dyn, ClusterResource: clusterGVR,
		NewClient: func(raw []byte) (workload.Client, error) {
			if c, ok := clients[string(raw)]; ok {
				return c, nil
			}
			if c, ok := workloads[string(raw)]; ok {
				return c, nil
			}
			return workload.NewClientFromKubeconfig(raw, kubeconfig.Policy{}, 0, workload.Requests{})
		},
		SliceNamespace: DefaultSliceNamespace, Domain: "xcc.test", Resync: time.Hour, Workers: 2,
		Recorder: record.NewFakeRecorder(1000), State: &state.ConfigMaps{Client: e.mgmt, Namespace: stateNamespace},
	}
	for _, o := range options {
		o(&cfg)
	}
	e.mgr = New(cfg)
	e.done = make(chan struct{})
	ready := make(chan struct{})
	mgr, done := e.mgr, e.done
	go func() {
		defer close(done)
		_ = mgr.Run(ctx, ready)
	}()
	// The controller and its background writes stop before the test ends.
	t.Cleanup(func() {
		e.cancel()
		testfixture.WaitStopped(t, "controller", e.done)
	})
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("caches did not sync")
	}
	return e
}

// fakeWorkload is a workload cluster fake: opted in (xcc-dns namespace)
// or not, and with the gateway Service at the given addresses (none: no
// Service).
func fakeWorkload(optIn bool, addrs ...string) *fake.Clientset {
	var objs []runtime.Object
	if optIn {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultSliceNamespace}})
	}
	if len(addrs) > 0 {
		objs = append(objs, testfixture.GatewayService(testfixture.IPs(addrs...)...))
	}
	return fake.NewClientset(objs...)
}

func gatewayDNSObject(t *testing.T, gd *v1alpha1.GatewayDNS) *unstructured.Unstructured {
	t.Helper()
	gd = gd.DeepCopy()
	gd.SetGroupVersionKind(v1alpha1.GatewayDNSKind)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gd)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// eventuallyStatus waits until the status of the GatewayDNS name of
// dev-team is as ok wants.
func (e *testEnv) eventuallyStatus(name string, ok func(v1alpha1.GatewayDNSStatus) bool) {
	e.t.Helper()
	var st v1alpha1.GatewayDNSStatus
	testfixture.Eventually(e.t, "status of "+name, func() bool {
		u, err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		gd := &v1alpha1.GatewayDNS{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, gd); err != nil {
			e.t.Fatal(err)
		}
		st = gd.Status
		return ok(st)
	})
}

// hasSlice reports whether the slice namespace of c holds a slice that
// testfixture.SliceView shows as view.
func (e *testEnv) hasSlice(c workload.Client, view string) bool {
	list, err := c.DiscoveryV1().EndpointSlices(DefaultSliceNamespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.Items, func(s discoveryv1.EndpointSlice) bool { return testfixture.SliceView(&s) == view })
}

// filterWatchesByLabel makes the watches of c deliver only the objects
// their label selector matches, as an API server does and the fake does
// not: the ClusterSet reconciler watches its own slices in the slice
// namespace by label, and would otherwise take the GatewayDNS slices
// there for its own.
func filterWatchesByLabel(c *fake.Clientset) {
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		wa, ok := a.(k8stesting.WatchActionImpl)
		if !ok || wa.GetWatchRestrictions().Labels == nil || wa.GetWatchRestrictions().Labels.Empty() {
			return false, nil, nil
		}
		sel := wa.GetWatchRestrictions().Labels
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace(), wa.GetListOptions())
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
			m, err := meta.Accessor(ev.Object)
			return ev, err != nil || sel.Matches(labels.Set(m.GetLabels()))
		}), nil
	})
}

// Both reconcilers run side by side on what the controller shares: a
// workload cluster that opts in later (its slice namespace, seen by the
// shared workload connections) gets the GatewayDNS's slices and the
// ClusterSet's import, and so does a Cluster that appears later (the
// shared Cluster informer); a gateway Service change (the shared
// Service informers) reaches the GatewayDNS's slices.
func TestManagerRunsBothReconcilers(t *testing.T) {
	clusterLabels := map[string]string{"hasContour": "true", "set": "prod"}
	a, b, c := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, ""), testfixture.NewMember(false, "")
	for _, m := range []testfixture.Member{a, b, c} {
		filterWatchesByLabel(m.Clientset)
	}
	if _, err := a.CoreV1().Services("projectcontour").Create(context.Background(), testfixture.GatewayService(testfixture.IPs("10.0.0.1")...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// cluster-b has not opted in yet.
	if err := b.CoreV1().Namespaces().Delete(context.Background(), DefaultSliceNamespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"), testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", clusterLabels, ""), testfixture.CAPICluster("cluster-b", clusterLabels, ""),
			gatewayDNSObject(t, testfixture.GatewayDNS("gw")), testfixture.ClusterSetObject("prod")},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": c},
		func(c *Config) { c.ClusterSets = true })
	imported := func(m testfixture.Member) bool {
		_, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil
	}
	gateway := gwA + " IPv4 10.0.0.1"
	testfixture.Eventually(t, "the gateway slice and the import in cluster-a", func() bool { return e.hasSlice(a, gateway) && imported(a) })
	if e.hasSlice(b, gateway) || imported(b) {
		t.Fatal("cluster-b got objects before it opted in")
	}

	if _, err := b.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultSliceNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "the gateway slice and the import in cluster-b once it opted in", func() bool { return e.hasSlice(b, gateway) && imported(b) })

	if _, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Create(e.ctx, testfixture.CAPICluster("cluster-c", clusterLabels, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "the gateway slice and the import in cluster-c, a new Cluster", func() bool { return e.hasSlice(c, gateway) && imported(c) })

	if _, err := a.CoreV1().Services("projectcontour").UpdateStatus(e.ctx, testfixture.GatewayService(testfixture.IPs("10.0.0.9")...), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "the new gateway address in cluster-b", func() bool { return e.hasSlice(b, gwA+" IPv4 10.0.0.9") })
}

// TestControllerCachesTrimmedSecrets: the Secret informer's cache holds the
// transformed Secrets, not what the API server sent.
func TestControllerCachesTrimmedSecrets(t *testing.T) {
	applied := testfixture.KubeconfigSecret("cluster-a", "cluster-a")
	applied.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"value":"Y2x1c3Rlci1h"}}`}
	applied.Data["extra"] = []byte("secret")
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "registry", Labels: map[string]string{"a": "b"}},
		Data: map[string][]byte{"password": []byte("secret")}}
	e := newTestEnvClients(t, []runtime.Object{applied, other}, nil, nil, nil)
	for _, name := range []string{"cluster-a-kubeconfig", "registry"} {
		s, err := e.mgr.engine.Secrets.Secrets("dev-team").Get(name)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte(nil)
		if name == "cluster-a-kubeconfig" {
			want = map[string][]byte{workload.KubeconfigSecretKey: []byte("cluster-a")}
		}
		if len(s.Annotations) > 0 || len(s.Labels) > 0 || !equality.Semantic.DeepEqual(s.Data, want) {
			t.Errorf("cached Secret %s: annotations %v labels %v data %q; want none, none, %q", name, s.Annotations, s.Labels, s.Data, want)
		}
	}
}
