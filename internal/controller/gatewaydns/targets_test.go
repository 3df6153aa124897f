package gatewaydns

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	typeddiscoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// gate holds the EndpointSlice calls of a workload client while closed,
// as an API server that stopped answering would, until it is opened or
// the call's context ends. With fail set, calls fail at once with it
// instead.
type gate struct {
	mu      sync.Mutex
	closed  bool
	open    chan struct{}
	fail    error
	calls   int // calls made
	held    int // calls held now
	maxHeld int // most calls held at once
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed, g.open = true, make(chan struct{})
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.open)
	}
}

func (g *gate) setFail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fail = err
}

func (g *gate) stats() (calls, held, maxHeld int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls, g.held, g.maxHeld
}

// pass blocks while the gate is closed.
func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	g.calls++
	if g.fail != nil {
		g.mu.Unlock()
		return g.fail
	}
	if !g.closed {
		g.mu.Unlock()
		return nil
	}
	open := g.open
	g.held++
	g.maxHeld = max(g.maxHeld, g.held)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.held--
		g.mu.Unlock()
	}()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatedClient is a workload client whose EndpointSlice calls pass g.
type gatedClient struct {
	*fake.Clientset
	g *gate
}

func (c gatedClient) DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface {
	return gatedDiscovery{c.Clientset.DiscoveryV1(), c.g}
}

type gatedDiscovery struct {
	typeddiscoveryv1.DiscoveryV1Interface
	g *gate
}

func (d gatedDiscovery) EndpointSlices(namespace string) typeddiscoveryv1.EndpointSliceInterface {
	return gatedSlices{d.DiscoveryV1Interface.EndpointSlices(namespace), d.g}
}

type gatedSlices struct {
	typeddiscoveryv1.EndpointSliceInterface
	g *gate
}

func (s gatedSlices) Create(ctx context.Context, e *discoveryv1.EndpointSlice, o metav1.CreateOptions) (*discoveryv1.EndpointSlice, error) {
	if err := s.g.pass(ctx); err != nil {
		return nil, err
	}
	return s.EndpointSliceInterface.Create(ctx, e, o)
}

func (s gatedSlices) Update(ctx context.Context, e *discoveryv1.EndpointSlice, o metav1.UpdateOptions) (*discoveryv1.EndpointSlice, error) {
	if err := s.g.pass(ctx); err != nil {
		return nil, err
	}
	return s.EndpointSliceInterface.Update(ctx, e, o)
}

func (s gatedSlices) Delete(ctx context.Context, name string, o metav1.DeleteOptions) error {
	if err := s.g.pass(ctx); err != nil {
		return err
	}
	return s.EndpointSliceInterface.Delete(ctx, name, o)
}

func (s gatedSlices) Get(ctx context.Context, name string, o metav1.GetOptions) (*discoveryv1.EndpointSlice, error) {
	if err := s.g.pass(ctx); err != nil {
		return nil, err
	}
	return s.EndpointSliceInterface.Get(ctx, name, o)
}

func (s gatedSlices) List(ctx context.Context, o metav1.ListOptions) (*discoveryv1.EndpointSliceList, error) {
	if err := s.g.pass(ctx); err != nil {
		return nil, err
	}
	return s.EndpointSliceInterface.List(ctx, o)
}

func (s gatedSlices) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.EndpointSliceInterface.Watch(ctx, o)
}

const gwC = "*.gateway.cluster-c.dev-team.clusters.xcc.test"

// threeTargets is cluster-a, cluster-b and cluster-c, each a target and a
// source; cluster-c's slice calls pass g.
func threeTargets(t *testing.T, g *gate, options ...func(*testConfig)) *testEnv {
	a, b, c := fakeWorkload(true, "10.0.0.1"), fakeWorkload(true, "10.0.0.2"), fakeWorkload(true, "10.0.0.3")
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b"), testfixture.KubeconfigSecret("cluster-c", "gated-c")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), testfixture.CAPICluster("cluster-c", contour, ""),
			gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": b, "cluster-c": c},
		map[string]workload.Client{"gated-c": gatedClient{c, g}}, options...)
	// Every slice and self marker in place, so that no write or marker
	// of the first syncs is still on its way when a test holds cluster-c.
	const gws = "*.gw.dev-team.gateways.xcc.test"
	for _, c := range []string{"cluster-a", "cluster-b", "cluster-c"} {
		e.eventuallyOf([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3",
			gws + " IPv4 10.0.0.1 unready", gws + " IPv4 10.0.0.2 unready", gws + " IPv4 10.0.0.3 unready", "self dev-team " + c},
			[]contract.Kind{contract.KindGateway, contract.KindGateways, contract.KindSelf}, c)
	}
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 3 })
	return e
}

// setGatewayA gives cluster-a's gateway Service the address addr.
func (e *testEnv) setGatewayA(addr string) {
	e.t.Helper()
	if _, err := e.workloads["cluster-a"].CoreV1().Services("projectcontour").UpdateStatus(e.ctx, testfixture.GatewayService(testfixture.IPs(addr)...), metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func readyReason(s v1alpha1.GatewayDNSStatus) string {
	if c := findCondition(s, v1alpha1.ConditionReady); c != nil {
		return c.Reason + ": " + c.Message
	}
	return ""
}

// A target whose API server stops answering does not delay the writes to
// the others, change after change; its status says it is being written;
// it has one write in flight at a time; once it answers again it gets the
// latest generation. When the controller stops, the write still held ends.
func TestControllerHeldTargetDoesNotDelayOthers(t *testing.T) {
	g := newGate()
	e := threeTargets(t, g)

	g.close()
	for i, addr := range []string{"10.0.0.9", "10.0.0.10", "10.0.0.11"} {
		start := time.Now()
		e.setGatewayA(addr)
		e.eventually([]string{gwA + " IPv4 " + addr, gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3"}, "cluster-a", "cluster-b")
		// Without background writes the second change waits for the
		// first sync, which waits on cluster-c until it is released.
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("change %d reached cluster-a and cluster-b after %s", i, took)
		}
	}
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		c := findCondition(s, v1alpha1.ConditionReady)
		return c != nil && c.Reason == string(ReasonWriting)
	})
	t.Logf("while cluster-c is held: %s", readyReason(st))
	if _, held, maxHeld := g.stats(); held != 1 || maxHeld != 1 {
		t.Errorf("cluster-c: %d calls held now, at most %d at once; want one write in flight", held, maxHeld)
	}
	if got := e.slices("cluster-c"); len(got) != 3 || got[0] != gwA+" IPv4 10.0.0.1" {
		t.Errorf("cluster-c changed while held: %q", got)
	}

	g.release()
	want := []string{gwA + " IPv4 10.0.0.11", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3"}
	e.eventually(want, "cluster-a", "cluster-b", "cluster-c")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		c := findCondition(s, v1alpha1.ConditionReady)
		return c != nil && c.Reason == string(ReasonPublished) && s.ReadyClusters == 3
	})

	// Shutdown with a write held: Run returns, the write ended.
	g.close()
	e.setGatewayA("10.0.0.12")
	e.eventually([]string{gwA + " IPv4 10.0.0.12", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3"}, "cluster-a", "cluster-b")
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, held, _ := g.stats(); held == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("no write to cluster-c held")
		}
	}
	e.cancel()
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the controller did not stop while a write was held")
	}
	if _, held, _ := g.stats(); held != 0 {
		t.Errorf("%d calls to cluster-c still held after the controller stopped", held)
	}
}

// errTimedOut is what a call to an API server that does not answer
// returns when its deadline passes.
var errTimedOut = fmt.Errorf("get: %w", context.DeadlineExceeded)

// A target whose write timed out is not tried again on every sync but
// after a backoff, and is reported failed meanwhile; the others are
// written. The backoff is a minute here, so that the three changes fall
// inside it however slow the machine is.
func TestControllerTimedOutTargetBacksOff(t *testing.T) {
	g := newGate()
	e := threeTargets(t, g, func(cfg *testConfig) { cfg.Lanes = lane.Config{MinBackoff: time.Minute} })
	g.setFail(errTimedOut)
	before, _, _ := g.stats()
	for _, addr := range []string{"10.0.0.9", "10.0.0.10", "10.0.0.11"} {
		e.setGatewayA(addr)
		e.eventually([]string{gwA + " IPv4 " + addr, gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3"}, "cluster-a", "cluster-b")
	}
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		c := findCondition(s, v1alpha1.ConditionReady)
		return c != nil && c.Reason == string(ReasonWriteFailed)
	})
	t.Logf("cluster-c timing out: %s", readyReason(st))
	if calls, _, _ := g.stats(); calls-before != 1 {
		t.Errorf("cluster-c was called %d times in three changes, want once (then backoff)", calls-before)
	}
}

// A target that stops answering before its self marker is written does
// not hold every sync up on that marker (a call's timeout, 10 s): the
// changes still reach the others at once.
func TestControllerHeldTargetSelfMarkerDoesNotDelayOthers(t *testing.T) {
	g := newGate()
	e := threeTargets(t, g)
	g.close()
	// cluster-d reaches cluster-c's held API server: its marker is new.
	if _, err := e.mgmt.CoreV1().Secrets("dev-team").Create(e.ctx, testfixture.KubeconfigSecret("cluster-d", "gated-c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Create(e.ctx, testfixture.CAPICluster("cluster-d", contour, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const gwD = "*.gateway.cluster-d.dev-team.clusters.xcc.test"
	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3", gwD + " IPv4 10.0.0.3"}, "cluster-a", "cluster-b")
	for i, addr := range []string{"10.0.0.9", "10.0.0.10"} {
		start := time.Now()
		e.setGatewayA(addr)
		e.eventually([]string{gwA + " IPv4 " + addr, gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3", gwD + " IPv4 10.0.0.3"}, "cluster-a", "cluster-b")
		// A sync writing cluster-d's marker waits until the call times out.
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("change %d reached cluster-a and cluster-b after %s", i, took)
		}
	}
	g.release()
	e.eventually([]string{gwA + " IPv4 10.0.0.10", gwB + " IPv4 10.0.0.2", gwC + " IPv4 10.0.0.3", gwD + " IPv4 10.0.0.3"}, "cluster-c")
}
