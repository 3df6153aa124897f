package publish

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	typeddiscoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// frozenFor is how long a frozen target's calls hang before they fail as
// a call past its deadline does: the write path's own deadline
// (workload.RequestTimeout) is too long for a test.
const frozenFor = 300 * time.Millisecond

// lanesEnv is a Writer on a lane.Set, and workload clusters of fake
// clients, as the controller wires them.
type lanesEnv struct {
	ctx    context.Context
	lanes  *lane.Set
	writer *Writer
	// synced receives the refs the Writer asks to sync again.
	synced chan string
}

// newLanesEnv makes the Set (wait 200 ms, first backoff 2 s) and Writer;
// clients are the workload clusters by name.
func newLanesEnv(t *testing.T) *lanesEnv { return newLanesEnvWait(t, 200*time.Millisecond) }

// newLanesEnvWait is newLanesEnv whose Publish waits for its writes up to
// wait: a test that reads every target's result waits for all of them,
// however loaded the machine.
func newLanesEnvWait(t *testing.T, wait time.Duration) *lanesEnv {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	lanes := lane.NewSet(lane.Config{Wait: wait, MinBackoff: 2 * time.Second})
	lanes.Start(ctx)
	t.Cleanup(func() { cancel(); lanes.Stop() })
	e := &lanesEnv{ctx: ctx, lanes: lanes, synced: make(chan string, 16)}
	e.writer = NewWriter(Config{SliceNamespace: testfixture.SliceNamespace, Resync: time.Hour, Lanes: lanes,
		Written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "written"}, []string{"op"}),
		Exists:  func(string) bool { return true }, Done: func(ref string) { e.synced <- ref }})
	return e
}

// targets connects to the clusters (name -> client) and waits until each
// has listed its slice namespace.
func (e *lanesEnv) targets(t *testing.T, clients map[string]workload.Client, names ...string) []Target {
	set := workload.NewSet(workload.Config{
		NewClient:      func(raw []byte) (workload.Client, error) { return clients[string(raw)], nil },
		SliceNamespace: testfixture.SliceNamespace, OnNamespace: func(string) {}, OnService: func([]string) {}, Gauge: func(int) {}})
	set.Start(e.ctx)
	var out []Target
	for _, name := range names {
		acc := set.Get("dev-team", name, testfixture.KubeconfigSecret(name, name), "dev-team/gw")
		if acc.Cluster == nil {
			t.Fatalf("%s: %s", name, acc.Message)
		}
		testfixture.Eventually(t, name+" listed", func() bool { _, _, synced := acc.Cluster.SliceNamespace(testfixture.SliceNamespace); return synced })
		out = append(out, Target{Name: name, Cluster: acc.Cluster})
	}
	return out
}

// workloadClient is a workload cluster with the slice namespace, its UID
// uid (each cluster its own destination).
func workloadClient(uid string) *fake.Clientset {
	return fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace, UID: types.UID(uid)}})
}

// oneSlice is the desired result of dev-team/gw: one cluster's slices.
func oneSlice() desired.Result {
	return singleCluster(desired.Compute(testfixture.GatewayDNS("gw"), "xcc.test", nil, []desired.Input{good("cluster-a", "10.0.0.1")}))
}

// A target whose API server accepts connections and answers nothing
// delays only itself: the other target is written within the wait, the
// frozen one is Pending, and its write's end syncs the GatewayDNS again.
// The failure backs off its cluster for every writer: a ClusterSet's
// write of it waits out the same backoff, and the next Publish says the
// target failed and when it is tried next, without waiting for it.
func TestFrozenTargetBacksOffItsClusterForEveryWriter(t *testing.T) {
	e := newLanesEnv(t)
	frozen := workloadClient("uid-frozen")
	frozen.PrependReactor("*", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(frozenFor)
		return true, nil, context.DeadlineExceeded
	})
	targets := e.targets(t, map[string]workload.Client{"frozen": frozen, "healthy": workloadClient("uid-healthy")}, "frozen", "healthy")
	start := time.Now()
	res := e.writer.Publish(e.ctx, "dev-team/gw", oneSlice(), targets)
	if took := time.Since(start); took > time.Second {
		t.Errorf("Publish waited %s", took)
	}
	if len(res.Done) != 1 || res.Done[0] != "healthy" || len(res.Pending) != 1 || res.Pending[0] != "frozen" {
		t.Fatalf("results %+v: want healthy done, frozen pending", res)
	}
	select {
	case ref := <-e.synced:
		if ref != "dev-team/gw" {
			t.Errorf("synced %q again", ref)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the frozen target's write never ended")
	}

	// The ClusterSet reconciler's write of the same cluster.
	var ran bool
	w := e.lanes.Submit(targets[0].Cluster.Key(), "dev-team/prod", func(context.Context) error { ran = true; return nil }, nil)
	if r := e.lanes.Wait(e.ctx, []*lane.Write{w}); r[0].Ended || !errors.Is(r[0].Backoff, context.DeadlineExceeded) || ran {
		t.Errorf("another writer's write of the frozen cluster: %+v; want it waiting out the backoff", r[0])
	}

	start = time.Now()
	res = e.writer.Publish(e.ctx, "dev-team/gw", oneSlice(), targets)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Publish waited %s for a target in backoff", took)
	}
	if err := res.Errs["frozen"]; !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "; next try at ") {
		t.Errorf("frozen: %v, want the deadline and the next try", err)
	}
	if len(res.Done) != 1 || res.Done[0] != "healthy" {
		t.Errorf("done %v, want healthy", res.Done)
	}
}

// A target that refuses the slices (a quota) answered: its error is
// its status, and its cluster is not backed off, for this writer or
// another.
func TestRefusedTargetDoesNotBackOffItsCluster(t *testing.T) {
	e := newLanesEnv(t)
	refusing := workloadClient("uid-refusing")
	refusing.PrependReactor("create", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"}, "x", errors.New("exceeded quota"))
	})
	targets := e.targets(t, map[string]workload.Client{"refusing": refusing}, "refusing")
	for i := 0; i < 2; i++ {
		res := e.writer.Publish(e.ctx, "dev-team/gw", oneSlice(), targets)
		if err := res.Errs["refusing"]; !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "next try") {
			t.Fatalf("publish %d: %v, want the refusal itself", i, err)
		}
	}
	w := e.lanes.Submit(targets[0].Cluster.Key(), "dev-team/prod", func(context.Context) error { return nil }, nil)
	if r := e.lanes.Wait(e.ctx, []*lane.Write{w}); !r[0].Ended || r[0].Err != nil {
		t.Errorf("another writer's write of the refusing cluster: %+v; want it run at once", r[0])
	}
}

// refusingSlices is a workload client of a shared API server whose
// credentials may not write EndpointSlices: each create takes a while,
// is counted while it runs, and is refused.
type refusingSlices struct {
	*fake.Clientset
	inflight, most *atomic.Int32
}

func (r refusingSlices) DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface {
	return refusingDiscovery{r.Clientset.DiscoveryV1(), r}
}

type refusingDiscovery struct {
	typeddiscoveryv1.DiscoveryV1Interface
	r refusingSlices
}

func (d refusingDiscovery) EndpointSlices(namespace string) typeddiscoveryv1.EndpointSliceInterface {
	return refusingSliceClient{d.DiscoveryV1Interface.EndpointSlices(namespace), d.r}
}

type refusingSliceClient struct {
	typeddiscoveryv1.EndpointSliceInterface
	r refusingSlices
}

func (c refusingSliceClient) Create(context.Context, *discoveryv1.EndpointSlice, metav1.CreateOptions) (*discoveryv1.EndpointSlice, error) {
	n := c.r.inflight.Add(1)
	defer c.r.inflight.Add(-1)
	for {
		most := c.r.most.Load()
		if n <= most || c.r.most.CompareAndSwap(most, n) {
			break
		}
	}
	time.Sleep(20 * time.Millisecond)
	return nil, apierrors.NewForbidden(schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"}, "x", errors.New("read-only credentials"))
}

// Clusters whose kubeconfigs reach one destination are tried one at a
// time until one writes it: the destination gets one write at a time,
// however many Clusters reach it; the Clusters tried before keep their
// own refusal, those after take the written state.
func TestSameDestinationIsTriedOneTargetAtATime(t *testing.T) {
	e := newLanesEnvWait(t, time.Minute)
	shared := workloadClient("uid-shared")
	var inflight, most atomic.Int32
	clients := map[string]workload.Client{"writer": shared}
	names := []string{"reader-1", "reader-2", "reader-3", "reader-4", "writer", "zz-after"}
	for _, n := range names[:4] {
		clients[n] = refusingSlices{shared, &inflight, &most}
	}
	clients["zz-after"] = shared
	targets := e.targets(t, clients, names...)
	res := e.writer.Publish(e.ctx, "dev-team/gw", oneSlice(), targets)
	for _, n := range names[:4] {
		if !apierrors.IsForbidden(res.Errs[n]) {
			t.Errorf("%s: %v, want its own refusal", n, res.Errs[n])
		}
	}
	if !slices.Equal(res.Done, []string{"writer", "zz-after"}) {
		t.Errorf("done %v, want the writer and the target after it", res.Done)
	}
	if got := most.Load(); got != 1 {
		t.Errorf("%d writes of the destination at once, want 1", got)
	}
	if l, err := shared.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).List(e.ctx, metav1.ListOptions{}); err != nil || len(l.Items) == 0 {
		t.Errorf("the destination holds %d slices (%v), want the written ones", len(l.Items), err)
	}
}
