package gatewaydns

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	typeddiscoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

var clusterGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// testConfig is what a test may change of the reconciler it runs: its
// Config, and the client factory and read limits of the workload
// connections it is given.
type testConfig struct {
	Config
	NewClient  workload.ClientFactory
	ReadLimits workload.ReadLimits
	Lanes      lane.Config
}

// testEnv is a management cluster and workload clusters, all fakes, and
// a reconciler wired to them as the controller wires it: the Cluster and
// Secret informers and the workload connections are its, given in
// Config.
type testEnv struct {
	t         *testing.T
	ctx       context.Context
	mgmt      *fake.Clientset
	dyn       *dynamicfake.FakeDynamicClient
	workloads map[string]*fake.Clientset // by kubeconfig content
	rec       *Reconciler
	events    *record.FakeRecorder
	// cancel stops the reconciler; done is closed when its Run returned.
	cancel context.CancelFunc
	done   chan struct{}
	// cfg is what the reconciler was made with.
	cfg testConfig
}

// sawEvent reports whether an event containing every part was recorded
// (testfixture.SawEvent).
func (e *testEnv) sawEvent(parts ...string) bool {
	return testfixture.SawEvent(e.events, parts...)
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

// workload is a workload cluster fake: opted in (xcc-dns namespace) and
// with the gateway Service at the given addresses (none: no Service).
func fakeWorkload(optIn bool, addrs ...string) *fake.Clientset {
	var objs []runtime.Object
	if optIn {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace}})
	}
	if len(addrs) > 0 {
		objs = append(objs, testfixture.GatewayService(testfixture.IPs(addrs...)...))
	}
	return fake.NewClientset(objs...)
}

func newTestEnv(t *testing.T, mgmtObjs []runtime.Object, dynObjs []runtime.Object, workloads map[string]*fake.Clientset) *testEnv {
	t.Helper()
	return newTestEnvClients(t, mgmtObjs, dynObjs, workloads, nil)
}

// newTestEnvClients is newTestEnv where the kubeconfigs in clients get
// those clients instead of a fake of workloads.
func newTestEnvClients(t *testing.T, mgmtObjs []runtime.Object, dynObjs []runtime.Object, workloads map[string]*fake.Clientset, clients map[string]workload.Client, options ...func(*testConfig)) *testEnv {
	t.Helper()
	_, base := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(base)
	t.Cleanup(cancel)
	dyn := testfixture.FakeManagement(ctx, t, clusterGVR, dynObjs)
	e := &testEnv{t: t, ctx: ctx, mgmt: fake.NewClientset(mgmtObjs...), dyn: dyn, workloads: workloads,
		events: record.NewFakeRecorder(1000), cancel: cancel}
	cfg := testConfig{
		Config: Config{
			SliceNamespace: testfixture.SliceNamespace, Domain: "xcc.test", Resync: time.Hour, Workers: 2,
			Recorder: e.events, State: &state.ConfigMaps{Client: e.mgmt, Namespace: stateNamespace},
		},
		NewClient: func(raw []byte) (workload.Client, error) {
			if c, ok := clients[string(raw)]; ok {
				return c, nil
			}
			if c, ok := workloads[string(raw)]; ok {
				return c, nil
			}
			// Anything else goes through the production factory: garbage
			// is KubeconfigInvalid, an exec kubeconfig KubeconfigRefused.
			return workload.NewClientFromKubeconfig(raw, kubeconfig.Policy{}, 0, workload.Requests{})
		},
	}
	for _, o := range options {
		o(&cfg)
	}
	e.cfg = cfg
	// The reconciler and its background writes stop before the test ends.
	t.Cleanup(e.stop)
	e.start()
	return e
}

// start runs a reconciler made of e.cfg until e.cancel, and waits for
// its caches. The informers and workload connections are made here as
// the controller makes them, with the callbacks that enqueue this
// reconciler.
func (e *testEnv) start() {
	e.t.Helper()
	var rec *Reconciler
	engine := mgmt.NewEngine(mgmt.EngineConfig{
		Dynamic: e.dyn, Kube: e.mgmt, ClusterResource: clusterGVR, Resync: e.cfg.Resync,
		NewClient: e.cfg.NewClient, SliceNamespace: e.cfg.SliceNamespace, ReadLimits: e.cfg.ReadLimits, Lanes: e.cfg.Lanes,
		EnqueueIn: func(namespace string) { rec.EnqueueIn(namespace) },
		OnService: func(users []string) { rec.ServiceChanged(users) },
	})
	cfg := e.cfg.Config
	cfg.Engine = engine
	rec = New(cfg)
	e.rec = rec
	ctx := e.ctx
	engine.Start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), append(engine.Synced(), rec.HasSynced)...) {
		e.t.Fatal("caches did not sync")
	}
	e.done = make(chan struct{})
	done := e.done
	go func() {
		defer close(done)
		// The lanes are shared with the ClusterSet reconciler; they
		// stop after the reconciler.
		defer engine.Stop()
		rec.Run(ctx)
	}()
}

// stop stops the reconciler and waits until its Run returned.
func (e *testEnv) stop() {
	e.cancel()
	testfixture.WaitStopped(e.t, "reconciler", e.done)
}

// slices returns "hostname type addresses" of every slice of a
// per-cluster name (gateway, api) in a workload cluster; gateways_test.go
// looks at the multi-cluster name and the self marker.
func (e *testEnv) slices(cluster string) []string {
	return e.slicesOf(cluster, contract.KindGateway, contract.KindAPI)
}

// perClusterSlices returns the slices of the per-cluster names (gateway,
// api) in a workload cluster.
func (e *testEnv) perClusterSlices(cluster string) []discoveryv1.EndpointSlice {
	list, err := e.workloads[cluster].DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(s discoveryv1.EndpointSlice) bool {
		k := contract.Kind(s.Labels[contract.LabelRecord])
		return k != contract.KindGateway && k != contract.KindAPI
	})
}

// slicesOf returns testfixture.SliceView of every slice of the given kinds
// (label xcc-dns.io/record) in a workload cluster.
func (e *testEnv) slicesOf(cluster string, kinds ...contract.Kind) []string {
	list, err := e.workloads[cluster].DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for i := range list.Items {
		s := &list.Items[i]
		if kind, has := s.Labels[contract.LabelRecord]; has && !slices.Contains(kinds, contract.Kind(kind)) {
			continue
		}
		out = append(out, testfixture.SliceView(s))
	}
	slices.Sort(out)
	return out
}

// eventually waits until every listed cluster has exactly want of the
// per-cluster names (gateway, api).
func (e *testEnv) eventually(want []string, clusters ...string) {
	e.t.Helper()
	e.eventuallyOf(want, []contract.Kind{contract.KindGateway, contract.KindAPI}, clusters...)
}

// eventuallyOf waits until every listed cluster has exactly want of the
// slices of the given kinds.
func (e *testEnv) eventuallyOf(want []string, kinds []contract.Kind, clusters ...string) {
	e.t.Helper()
	slices.Sort(want)
	var got []string
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, c := range clusters {
			got = e.slicesOf(c, kinds...)
			if !slices.Equal(got, want) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		e.t.Fatalf("slices:\n got %q\nwant %q", got, want)
	}
}

func (e *testEnv) status(name string) v1alpha1.GatewayDNSStatus {
	u, err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	gd, err := toGatewayDNS(u)
	if err != nil {
		e.t.Fatal(err)
	}
	return gd.Status
}

func (e *testEnv) eventuallyStatus(name string, ok func(v1alpha1.GatewayDNSStatus) bool) v1alpha1.GatewayDNSStatus {
	e.t.Helper()
	var st v1alpha1.GatewayDNSStatus
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		st = e.status(name)
		return ok(st), nil
	})
	if err != nil {
		e.t.Fatalf("status of %s never as wanted: %+v", name, st)
	}
	return st
}

func reasonsOf(st v1alpha1.GatewayDNSStatus) string {
	var out []string
	for _, c := range st.Clusters {
		out = append(out, c.Name+"="+c.Reason)
	}
	return strings.Join(out, " ")
}

// good is a selected cluster whose gateway Service has the given IPs.
func good(name string, addrs ...string) desired.Input {
	return desired.Input{Name: name, Selected: true, ServiceSynced: true, Service: testfixture.GatewayService(testfixture.IPs(addrs...)...)}
}

const (
	gwA  = "*.gateway.cluster-a.dev-team.clusters.xcc.test"
	gwB  = "*.gateway.cluster-b.dev-team.clusters.xcc.test"
	apiA = "api.cluster-a.dev-team.clusters.xcc.test"
)

var contour = map[string]string{"hasContour": "true"}

func TestControllerEndToEnd(t *testing.T) {
	gd := testfixture.GatewayDNS("dev-team-gateway-dns")
	e := newTestEnv(t,
		[]runtime.Object{
			testfixture.KubeconfigSecret("cluster-a", "cluster-a"),
			testfixture.KubeconfigSecret("cluster-b", "cluster-b"),
			testfixture.KubeconfigSecret("cluster-c", "garbage"),
			testfixture.KubeconfigSecret("cluster-d", "cluster-d"),
		},
		[]runtime.Object{
			testfixture.CAPICluster("cluster-a", contour, "10.1.0.1"),
			testfixture.CAPICluster("cluster-b", contour, ""),
			testfixture.CAPICluster("cluster-c", contour, ""), // garbage kubeconfig
			testfixture.CAPICluster("a.b", contour, ""),       // not a DNS label
			testfixture.CAPICluster("cluster-d", nil, ""),     // not selected, not opted in
			testfixture.CAPICluster("cluster-e", contour, ""), // no kubeconfig Secret
			gatewayDNSObject(t, gd),
		},
		map[string]*fake.Clientset{
			"cluster-a": fakeWorkload(true, "10.0.0.1", "2001:db8::1"),
			"cluster-b": fakeWorkload(true, "10.0.0.2"),
			"cluster-d": fakeWorkload(false),
		})

	want := []string{apiA + " IPv4 10.1.0.1", gwA + " IPv4 10.0.0.1", gwA + " IPv6 2001:db8::1", gwB + " IPv4 10.0.0.2"}
	e.eventually(want, "cluster-a", "cluster-b")
	if got := e.slices("cluster-d"); len(got) != 0 {
		t.Errorf("cluster without the slice namespace got %v", got)
	}
	// Status is written after the slices: wait for it.
	wantReasons := "a.b=InvalidClusterName cluster-a=Published cluster-b=Published cluster-c=KubeconfigInvalid cluster-e=KubeconfigMissing"
	st := e.eventuallyStatus(gd.Name, func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == wantReasons })
	if st.ReadyClusters != 2 || st.ObservedGeneration != 1 {
		t.Errorf("ready %d observedGeneration %d", st.ReadyClusters, st.ObservedGeneration)
	}

	t.Run("a load-balancer change reaches every cluster without a resync", func(t *testing.T) {
		svc := testfixture.GatewayService(testfixture.IPs("10.0.0.9")...)
		if _, err := e.workloads["cluster-a"].CoreV1().Services("projectcontour").UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually([]string{apiA + " IPv4 10.1.0.1", gwA + " IPv4 10.0.0.9", gwB + " IPv4 10.0.0.2"}, "cluster-a", "cluster-b")
	})

	t.Run("a cluster that opts in later gets every slice", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace}}
		if _, err := e.workloads["cluster-d"].CoreV1().Namespaces().Create(e.ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually([]string{apiA + " IPv4 10.1.0.1", gwA + " IPv4 10.0.0.9", gwB + " IPv4 10.0.0.2"}, "cluster-d")
	})

	t.Run("a cluster no longer selected loses its names everywhere", func(t *testing.T) {
		if _, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Update(e.ctx, testfixture.CAPICluster("cluster-b", nil, ""), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually([]string{apiA + " IPv4 10.1.0.1", gwA + " IPv4 10.0.0.9"}, "cluster-a", "cluster-b", "cluster-d")
	})

	t.Run("a slice written by someone else survives", func(t *testing.T) {
		hand := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "hand", Namespace: testfixture.SliceNamespace,
			Annotations: map[string]string{contract.AnnotationHostname: "hand.xcc.test"}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}}}
		if _, err := e.workloads["cluster-a"].DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Create(e.ctx, hand, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deleting the GatewayDNS removes its slices from every cluster", func(t *testing.T) {
		if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, gd.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually(nil, "cluster-b", "cluster-d")
		e.eventually([]string{"hand.xcc.test IPv4 10.9.9.9"}, "cluster-a")
	})

	t.Run("with no GatewayDNS left every workload client and informer stops", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			clusters, _, _ := e.rec.workloads.Watched()
			return clusters == 0, nil
		})
		if err != nil {
			clusters, _, _ := e.rec.workloads.Watched()
			t.Errorf("workload clusters still watched: %d", clusters)
		}
	})
}

func TestControllerConflictOlderWins(t *testing.T) {
	older := testfixture.GatewayDNS("older")
	older.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour))
	newer := testfixture.GatewayDNS("newer")
	newer.CreationTimestamp = metav1.NewTime(time.Now())
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), gatewayDNSObject(t, newer), gatewayDNSObject(t, older)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1")})

	e.eventually([]string{gwA + " IPv4 10.0.0.1"}, "cluster-a")
	st := e.eventuallyStatus("newer", func(s v1alpha1.GatewayDNSStatus) bool { return len(s.Conditions) > 0 })
	if got := reasonsOf(st); got != "cluster-a=Conflict" {
		t.Errorf("newer: %q", got)
	}
	if c := findCondition(st, v1alpha1.ConditionConflict); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("newer Conflict condition %+v", c)
	}
	if c := findCondition(st, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("newer Ready condition %+v, want False", c)
	}
	list := e.perClusterSlices("cluster-a")
	if len(list) != 1 || list[0].Annotations[contract.AnnotationGatewayRef] != "dev-team/older" {
		t.Errorf("want one slice by dev-team/older, got %d: %+v", len(list), list)
	}
	// The first status may predate the Service informer's list: wait for Ready.
	st = e.eventuallyStatus("older", func(s v1alpha1.GatewayDNSStatus) bool {
		c := findCondition(s, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if c := findCondition(st, v1alpha1.ConditionConflict); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("older Conflict condition %+v", c)
	}

	// The older one goes: the newer one takes the names over.
	if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, "older", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		list := e.perClusterSlices("cluster-a")
		return len(list) == 1 && list[0].Annotations[contract.AnnotationGatewayRef] == "dev-team/newer", nil
	})
	if err != nil {
		t.Errorf("newer did not take over: %v", e.slices("cluster-a"))
	}
}

func TestControllerUnreachableClusterKeepsSlices(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	a := fakeWorkload(true, "10.0.0.1")
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, gd)},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": fakeWorkload(true, "10.0.0.2")})
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-a", "cluster-b")

	// cluster-a's kubeconfig Secret goes (a cluster we can no longer reach):
	// its last addresses stay published, the status says why.
	if err := e.mgmt.CoreV1().Secrets("dev-team").Delete(e.ctx, "cluster-a-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return strings.Contains(reasonsOf(s), "cluster-a="+desired.ReasonKubeconfigMissing)
	})
	if c := findCondition(st, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready %+v", c)
	}
	if !e.sawEvent("Warning", desired.ReasonKubeconfigMissing, "cluster-a") {
		t.Errorf("no Warning event for cluster-a losing its kubeconfig")
	}
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-b")
}

// TestControllerRefusesKubeconfigInstructions: a kubeconfig Secret whose
// user is an exec plugin gets KubeconfigRefused naming exec, in status and
// as a Warning Event; the command never runs and the other clusters
// publish.
func TestControllerRefusesKubeconfigInstructions(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["b"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["b"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		Command: "/bin/sh", Args: []string{"-c", "touch " + marker}, APIVersion: "client.authentication.k8s.io/v1",
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	kc.Contexts["b"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "b"}
	kc.CurrentContext = "b"
	execKubeconfig, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	gd := testfixture.GatewayDNS("gw")
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", string(execKubeconfig))},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, gd)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1")})

	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return reasonsOf(s) == "cluster-a="+desired.ReasonPublished+" cluster-b="+desired.ReasonKubeconfigRefused
	})
	if msg := st.Clusters[1].Message; !strings.Contains(msg, `users["b"].exec refused`) {
		t.Errorf("cluster-b message %q does not name exec", msg)
	}
	if !e.sawEvent("Warning", desired.ReasonKubeconfigRefused, "cluster-b", "exec") {
		t.Error("no Warning Event KubeconfigRefused for cluster-b naming exec")
	}
	e.eventually([]string{gwA + " IPv4 10.0.0.1"}, "cluster-a")
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the exec plugin ran: %s exists (%v)", marker, err)
	}
}

func findCondition(st v1alpha1.GatewayDNSStatus, typ string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestControllerRemovesOrphansOfItsNamespaceOnly(t *testing.T) {
	orphan := func(ref string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(ref, "/", "-"), Namespace: testfixture.SliceNamespace,
				Labels:      map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelServiceName: "gone"},
				Annotations: map[string]string{contract.AnnotationGatewayRef: ref, contract.AnnotationHostname: "h-" + ref}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}},
		}
	}
	a := fakeWorkload(true, "10.0.0.1")
	for _, ref := range []string{"dev-team/gone", "other-team/gone"} {
		if _, err := a.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Create(context.Background(), orphan(ref), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": a})
	e.eventually([]string{gwA + " IPv4 10.0.0.1", "h-other-team/gone IPv4 10.9.9.9"}, "cluster-a")
}

// Two GatewayDNS with the same service in one cluster share one client and
// one Service informer; removing one keeps it, removing both stops it.
func TestControllerSharesServiceInformers(t *testing.T) {
	one, two := testfixture.GatewayDNS("one"), testfixture.GatewayDNS("two")
	one.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"x": "1"}}
	two.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"y": "1"}}
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", map[string]string{"x": "1", "y": "1"}, ""), gatewayDNSObject(t, one), gatewayDNSObject(t, two)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1")})
	e.eventually([]string{gwA + " IPv4 10.0.0.1"}, "cluster-a")
	watch := e.rec.workloads.Watched
	// "one" is older by name at equal creation time: it owns cluster-a and
	// watches the Service; "two" reports Conflict and watches nothing.
	if c, s, u := watch(); c != 1 || s != 1 || u != 1 {
		t.Errorf("clusters %d services %d users %d, want 1 1 1", c, s, u)
	}
	if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		list := e.perClusterSlices("cluster-a")
		c, s, u := watch()
		return len(list) == 1 && list[0].Annotations[contract.AnnotationGatewayRef] == "dev-team/two" && c == 1 && s == 1 && u == 1, nil
	})
	if err != nil {
		c, s, u := watch()
		t.Errorf("after deleting one: clusters %d services %d users %d, slices %v", c, s, u, e.slices("cluster-a"))
	}
	if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, "two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c, _, _ := watch()
		return c == 0, nil
	})
	if err != nil {
		t.Errorf("workload cluster still watched after both GatewayDNS went")
	}
}

// sliceLists counts the times the controller listed a workload cluster's
// EndpointSlices: with its label selector (the tests list without one).
func sliceLists(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		l, ok := a.(k8stesting.ListAction)
		if ok && l.GetResource().Resource == "endpointslices" && l.GetNamespace() == testfixture.SliceNamespace && !l.GetListRestrictions().Labels.Empty() {
			n++
		}
	}
	return n
}

// After the first sync lists every target, a change is written to each
// target from the difference alone; a target whose write failed is listed
// in full again.
func TestControllerWritesChangesWithoutListing(t *testing.T) {
	a, b := fakeWorkload(true, "10.0.0.1"), fakeWorkload(true, "10.0.0.2")
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": b})
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-a", "cluster-b")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 2 })
	listsA, listsB := sliceLists(a), sliceLists(b)
	if listsA == 0 || listsB == 0 {
		t.Fatalf("first sync did not list the targets: %d %d", listsA, listsB)
	}

	setLB := func(addr string) {
		t.Helper()
		if _, err := a.CoreV1().Services("projectcontour").UpdateStatus(e.ctx, testfixture.GatewayService(testfixture.IPs(addr)...), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setLB("10.0.0.9")
	e.eventually([]string{gwA + " IPv4 10.0.0.9", gwB + " IPv4 10.0.0.2"}, "cluster-a", "cluster-b")
	if sliceLists(a) != listsA || sliceLists(b) != listsB {
		t.Errorf("a load-balancer change listed the targets: %d -> %d, %d -> %d", listsA, sliceLists(a), listsB, sliceLists(b))
	}

	failed := make(chan struct{})
	b.PrependReactor("update", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case <-failed:
			return false, nil, nil
		default:
			close(failed)
			return true, nil, errors.New("injected: API server unavailable")
		}
	})
	setLB("10.0.0.10")
	e.eventually([]string{gwA + " IPv4 10.0.0.10", gwB + " IPv4 10.0.0.2"}, "cluster-a", "cluster-b")
	if sliceLists(b) == listsB {
		t.Errorf("a target whose write failed was not listed again")
	}
	if sliceLists(a) != listsA {
		t.Errorf("a target whose state was known was listed again: %d -> %d", listsA, sliceLists(a))
	}

	// A slice that a new cluster's gateway will need is in cluster-b
	// already, with an old address (as a second writer would leave it):
	// cluster-b is listed and the slice corrected; cluster-a is not listed.
	stale := desired.Compute(testfixture.GatewayDNS("gw"), "xcc.test", nil, []desired.Input{good("cluster-c", "10.0.0.99")}).Slices[0]
	stale.Namespace = testfixture.SliceNamespace
	if _, err := b.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Create(e.ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	listsA, listsB = sliceLists(a), sliceLists(b)
	e.workloads["cluster-c"] = fakeWorkload(false, "10.0.0.3")
	if _, err := e.mgmt.CoreV1().Secrets("dev-team").Create(e.ctx, testfixture.KubeconfigSecret("cluster-c", "cluster-c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Create(e.ctx, testfixture.CAPICluster("cluster-c", contour, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gwC := "*.gateway.cluster-c.dev-team.clusters.xcc.test"
	e.eventually([]string{gwA + " IPv4 10.0.0.10", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3"}, "cluster-a", "cluster-b")
	if sliceLists(b) == listsB {
		t.Errorf("cluster-b had a slice it was not known to and was not listed")
	}
	if sliceLists(a) != listsA {
		t.Errorf("cluster-a was listed again: %d -> %d", listsA, sliceLists(a))
	}
}

// A cluster whose state is unknown keeps its slices in the other targets;
// once it is no longer selected they go, though no target was listed.
func TestControllerReleasesKeptSlices(t *testing.T) {
	b := fakeWorkload(true, "10.0.0.2")
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-b": b})
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-b")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 2 })

	if err := e.mgmt.CoreV1().Secrets("dev-team").Delete(e.ctx, "cluster-a-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return strings.Contains(reasonsOf(s), "cluster-a="+desired.ReasonKubeconfigMissing)
	})
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-b")
	lists := sliceLists(b)

	if _, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Update(e.ctx, testfixture.CAPICluster("cluster-a", nil, ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually([]string{gwB + " IPv4 10.0.0.2"}, "cluster-b")
	if sliceLists(b) != lists {
		t.Errorf("cluster-b was listed again: %d -> %d", lists, sliceLists(b))
	}
}

// Status lists at most maxStatusClusters clusters; the Events of those it
// leaves out come from what the controller remembers.
func TestRecordTransitionsBeyondTheStatusList(t *testing.T) {
	events := record.NewFakeRecorder(100)
	c := &Reconciler{cfg: Config{Recorder: events}, memory: newMemories()}
	cs := func(name, reason string) v1alpha1.ClusterStatus {
		return v1alpha1.ClusterStatus{Name: name, Reason: reason, Ready: reason == desired.ReasonPublished}
	}
	gd := testfixture.GatewayDNS("gw")
	// The stored status lists cluster-a only and left one cluster out.
	gd.Status.Clusters = []v1alpha1.ClusterStatus{cs("cluster-a", desired.ReasonPublished)}
	gd.Status.OmittedClusters = 1
	count := func() int {
		n := 0
		for {
			select {
			case <-events.Events:
				n++
			default:
				return n
			}
		}
	}

	c.recordTransitions(gd, []v1alpha1.ClusterStatus{cs("cluster-a", desired.ReasonServiceNotFound), cs("cluster-b", desired.ReasonPublished)})
	if n := count(); n != 1 {
		t.Errorf("first sync since start: %d events, want 1 (cluster-a changed; cluster-b unknown)", n)
	}
	c.recordTransitions(gd, []v1alpha1.ClusterStatus{cs("cluster-a", desired.ReasonServiceNotFound), cs("cluster-b", desired.ReasonPublished)})
	if n := count(); n != 0 {
		t.Errorf("nothing changed: %d events", n)
	}
	c.recordTransitions(gd, []v1alpha1.ClusterStatus{cs("cluster-a", desired.ReasonServiceNotFound), cs("cluster-b", desired.ReasonNoLoadBalancerIngress)})
	if n := count(); n != 1 {
		t.Errorf("cluster-b changed: %d events, want 1", n)
	}
}

// sliceActions counts the calls of one verb on a workload cluster's
// EndpointSlices.
func sliceActions(c *fake.Clientset, verb string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == "endpointslices" {
			n++
		}
	}
	return n
}

// withNamespaceUID is a workload cluster fake whose slice namespace has a
// UID, as in a real API server, with the gateway Service at addrs.
func withNamespaceUID(uid types.UID, addrs ...string) *fake.Clientset {
	return fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace, UID: uid}},
		testfixture.GatewayService(testfixture.IPs(addrs...)...))
}

// Two Clusters whose kubeconfigs reach one workload cluster have the same
// destination: it is listed and written once per sync, not once per Cluster.
func TestControllerWritesSameDestinationOnce(t *testing.T) {
	b := withNamespaceUID("ns-b", "10.0.0.2")
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b"), testfixture.KubeconfigSecret("cluster-c", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), testfixture.CAPICluster("cluster-c", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-b": b})
	gwC := "*.gateway.cluster-c.dev-team.clusters.xcc.test"
	// Every kind of slice, not only the per-cluster names: the gateways
	// slices may still be on their way when the gateway slices are in,
	// and counting the calls before the last one lands fails at random.
	all := []contract.Kind{contract.KindGateway, contract.KindGateways, contract.KindSelf}
	const gws = "*.gw.dev-team.gateways.xcc.test"
	self := "self dev-team cluster-b,cluster-c"
	e.eventuallyOf([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.2",
		gws + " IPv4 10.0.0.1 unready", gws + " IPv4 10.0.0.2 unready", gws + " IPv4 10.0.0.2 unready", self}, all, "cluster-b")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 3 })
	if n := sliceLists(b); n != 1 {
		t.Errorf("cluster-b listed %d times, want once for both of its Clusters", n)
	}
	if n := sliceActions(b, "create"); n != 7 {
		t.Errorf("%d creates in cluster-b, want 7 (one per slice: 3 gateway, 3 gateways, 1 self marker)", n)
	}

	before := len(b.Actions())
	if _, err := e.workloads["cluster-a"].CoreV1().Services("projectcontour").UpdateStatus(e.ctx, testfixture.GatewayService(testfixture.IPs("10.0.0.9")...), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyOf([]string{gwA + " IPv4 10.0.0.9", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.2",
		gws + " IPv4 10.0.0.9 unready", gws + " IPv4 10.0.0.2 unready", gws + " IPv4 10.0.0.2 unready", self}, all, "cluster-b")
	var calls []string
	for _, a := range b.Actions()[before:] {
		if a.GetResource().Resource == "endpointslices" && a.GetVerb() != "list" {
			calls = append(calls, a.GetVerb())
		}
	}
	if !slices.Equal(calls, []string{"get", "update", "get", "update"}) {
		t.Errorf("a change made %q in cluster-b, want one get and one update of each of the gateway and gateways slices", calls)
	}
}

// refusedWrites is a workload client whose EndpointSlice creates and
// updates are refused (as with credentials that may only read).
type refusedWrites struct{ *fake.Clientset }

func (r refusedWrites) DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface {
	return refusedDiscovery{r.Clientset.DiscoveryV1()}
}

type refusedDiscovery struct {
	typeddiscoveryv1.DiscoveryV1Interface
}

func (d refusedDiscovery) EndpointSlices(namespace string) typeddiscoveryv1.EndpointSliceInterface {
	return refusedSlices{d.DiscoveryV1Interface.EndpointSlices(namespace)}
}

type refusedSlices struct {
	typeddiscoveryv1.EndpointSliceInterface
}

var errRefused = errors.New("injected: forbidden")

func (refusedSlices) Create(context.Context, *discoveryv1.EndpointSlice, metav1.CreateOptions) (*discoveryv1.EndpointSlice, error) {
	return nil, errRefused
}

func (refusedSlices) Update(context.Context, *discoveryv1.EndpointSlice, metav1.UpdateOptions) (*discoveryv1.EndpointSlice, error) {
	return nil, errRefused
}

// When the target that writes a destination fails, the other target with
// that destination writes it on its own.
func TestControllerSameDestinationWritesWhenTheFirstFails(t *testing.T) {
	// cluster-b and, later, cluster-c reach one workload cluster; only
	// cluster-c's kubeconfig may write there.
	shared := withNamespaceUID("ns-shared", "10.0.0.2")
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "reader")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "shared": shared},
		map[string]workload.Client{"reader": refusedWrites{shared}})
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"}, "cluster-a")
	// Written to cluster-a, refused by cluster-b: no cluster is Ready,
	// as cluster-b lacks their records.
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return len(s.Targets) == 1 && s.Targets[0].Name == "cluster-b" && s.SelectedClusters == 2 && s.ReadyClusters == 0
	})
	if got := e.slices("shared"); len(got) != 0 {
		t.Fatalf("slices written with refused writes: %q", got)
	}

	// cluster-c sorts after cluster-b, so cluster-b is tried first.
	if _, err := e.mgmt.CoreV1().Secrets("dev-team").Create(e.ctx, testfixture.KubeconfigSecret("cluster-c", "shared"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Create(e.ctx, testfixture.CAPICluster("cluster-c", contour, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gwC := "*.gateway.cluster-c.dev-team.clusters.xcc.test"
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.2"}, "shared")
}

// Two GatewayDNS whose Clusters reach one workload cluster (cluster-b
// of gw and cluster-c of gw2 are two kubeconfigs of it) each write only
// their own slices there: both stand, and deleting one GatewayDNS leaves
// the other's.
func TestControllerTwoGatewayDNSShareADestination(t *testing.T) {
	b := withNamespaceUID("ns-b", "10.0.0.2")
	gw2 := testfixture.GatewayDNS("gw2")
	gw2.Spec.ClusterSelector.MatchLabels = map[string]string{"set": "other"}
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b"), testfixture.KubeconfigSecret("cluster-c", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""),
			testfixture.CAPICluster("cluster-c", map[string]string{"set": "other"}, ""),
			gatewayDNSObject(t, testfixture.GatewayDNS("gw")), gatewayDNSObject(t, gw2)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-b": b})
	kinds := []contract.Kind{contract.KindGateways}
	gw := []string{"*.gw.dev-team.gateways.xcc.test IPv4 10.0.0.1 unready", "*.gw.dev-team.gateways.xcc.test IPv4 10.0.0.2 unready"}
	e.eventuallyOf(append(slices.Clone(gw), "*.gw2.dev-team.gateways.xcc.test IPv4 10.0.0.2 unready"), kinds, "cluster-b")
	if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, "gw2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyOf(gw, kinds, "cluster-b")
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got := e.slicesOf("cluster-b", kinds...); len(got) != len(gw) {
			t.Fatalf("cluster-b holds %q after gw2 went, want gw's %q", got, gw)
		}
	}
}
