package clusterset

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// clusterGVR is the served version of Cluster API Clusters in the tests.
var clusterGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// stateNamespace is where the tests' controller keeps its state.
const stateNamespace = "xcc-dns-system"

// testConfig is what a test may change of the reconciler it runs: its
// Config, and the read limits of the workload connections it is given.
type testConfig struct {
	Config
	ReadLimits workload.ReadLimits
}

// testEnv is a management cluster and workload clusters, all fakes, and
// a reconciler wired to them as the controller wires it: the Cluster and
// Secret informers and the workload connections are its, given in
// Config.
type testEnv struct {
	t    *testing.T
	ctx  context.Context
	mgmt *fake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	// events are the Events the reconciler recorded.
	events *record.FakeRecorder
	// rec and workloads are those of the running reconciler.
	rec       *Reconciler
	workloads *workload.Set
	// cancel stops the reconciler; done is closed when it has stopped.
	cancel context.CancelFunc
	done   chan struct{}
	cfg    testConfig
	// newClient builds the workload clients (by kubeconfig content).
	newClient workload.ClientFactory
	// base is the test's context, which outlives each reconciler's.
	base context.Context
	// syncCount counts the running reconciler's syncs (Config.Syncs).
	syncCount prometheus.Counter
}

// newTestEnvClients runs a reconciler on a management cluster holding
// mgmtObjs (Secrets) and dynObjs (Clusters, ClusterSets), where the
// kubeconfigs in clients (else in workloads) get those clients.
func newTestEnvClients(t *testing.T, mgmtObjs []runtime.Object, dynObjs []runtime.Object, workloads map[string]*fake.Clientset,
	clients map[string]workload.Client, options ...func(*testConfig)) *testEnv {
	t.Helper()
	_, base := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(base)
	t.Cleanup(cancel)
	e := &testEnv{t: t, ctx: ctx, base: base, mgmt: fake.NewClientset(mgmtObjs...), dyn: testfixture.FakeManagement(ctx, t, clusterGVR, dynObjs),
		events: record.NewFakeRecorder(1000), cancel: cancel}
	e.newClient = func(raw []byte) (workload.Client, error) {
		if c, ok := clients[string(raw)]; ok {
			return c, nil
		}
		if c, ok := workloads[string(raw)]; ok {
			return c, nil
		}
		// Anything else goes through the production factory.
		return workload.NewClientFromKubeconfig(raw, kubeconfig.Policy{}, 0, workload.Requests{})
	}
	e.cfg = testConfig{Config: Config{SliceNamespace: testfixture.SliceNamespace, ClusterSetZone: contract.DefaultClusterSetZone,
		Workers: 2, Recorder: e.events, State: &state.ConfigMaps{Client: e.mgmt, Namespace: stateNamespace}}}
	for _, o := range options {
		o(&e.cfg)
	}
	// The reconciler and its background writes stop before the test ends.
	t.Cleanup(e.stop)
	e.start()
	return e
}

// start runs a reconciler made of e.cfg until e.cancel, and waits for
// its caches.
func (e *testEnv) start() {
	e.t.Helper()
	var rec *Reconciler
	engine := mgmt.NewEngine(mgmt.EngineConfig{
		Dynamic: e.dyn, Kube: e.mgmt, ClusterResource: clusterGVR, Resync: time.Hour,
		NewClient: e.newClient, SliceNamespace: e.cfg.SliceNamespace, ReadLimits: e.cfg.ReadLimits,
		EnqueueIn: func(namespace string) { rec.EnqueueIn(namespace) },
		OnService: func(users []string) {
			_, sets := Users(users)
			for _, key := range sets {
				rec.Add(key)
			}
		},
		OnMember:    func(cluster string, users []string) { rec.MemberChanged(cluster, users) },
		Own:         OwnKinds(),
		ExportCache: ExportCache,
	})
	e.workloads = engine.Workloads
	cfg := e.cfg.Config
	cfg.Engine = engine
	cfg.Metrics = NewMetrics()
	cfg.Syncs = prometheus.NewCounter(prometheus.CounterOpts{Name: "syncs"})
	e.syncCount = cfg.Syncs
	cfg.SyncErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "sync_errors"})
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
		// The lanes are shared with the GatewayDNS reconciler; they
		// stop after the reconciler.
		defer engine.Stop()
		rec.Run(ctx)
	}()
}

// syncs is how many syncs of a ClusterSet the running reconciler began.
func (e *testEnv) syncs() float64 {
	var m dto.Metric
	if err := e.syncCount.Write(&m); err != nil {
		e.t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// stop stops the reconciler and waits until its Run returned.
func (e *testEnv) stop() {
	e.cancel()
	testfixture.WaitStopped(e.t, "reconciler", e.done)
}

// restart is a new reconciler on the same clusters (a restart, or a
// failover to another replica): nothing of the old one's memory, only
// what the management cluster and the workload clusters hold. between
// runs while no reconciler does.
func (e *testEnv) restart(between func()) {
	e.t.Helper()
	e.stop()
	if between != nil {
		between()
	}
	e.ctx, e.cancel = context.WithCancel(e.base)
	e.t.Cleanup(e.cancel)
	e.start()
}

// sawEvent reports whether an event containing every part was recorded
// (testfixture.SawEvent).
func (e *testEnv) sawEvent(parts ...string) bool {
	return testfixture.SawEvent(e.events, parts...)
}

// The member fake is a workload client with the MCS API and a cluster id.
var (
	_ workload.MCSClient      = testfixture.Member{}
	_ workload.PropertyClient = testfixture.Member{}
)
