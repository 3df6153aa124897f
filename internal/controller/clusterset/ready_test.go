package clusterset

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// readyWrites records the Ready status of each status write of a
// ServiceExport in a member, by name.
type readyWrites struct {
	mu     sync.Mutex
	byName map[string][]metav1.ConditionStatus
}

func recordReady(m testfixture.Member) *readyWrites {
	w := &readyWrites{byName: map[string][]metav1.ConditionStatus{}}
	m.MCS.PrependReactor("update", "serviceexports", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u, ok := a.(k8stesting.UpdateAction)
		if !ok || u.GetSubresource() != "status" {
			return false, nil, nil
		}
		ex := u.GetObject().(*mcsv1beta1.ServiceExport)
		if c := meta.FindStatusCondition(ex.Status.Conditions, "Ready"); c != nil {
			w.mu.Lock()
			w.byName[ex.Name] = append(w.byName[ex.Name], c.Status)
			w.mu.Unlock()
		}
		return false, nil, nil
	})
	return w
}

func (w *readyWrites) of(name string) []metav1.ConditionStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]metav1.ConditionStatus(nil), w.byName[name]...)
}

// Ready is per import: a new export is Pending until its import is
// written in every member, then Ready; the exports already Ready are not
// written again for it. Nor are they for a restart of the controller, or
// for a member read after the others (its informer slow to list): the
// members the controller has not written yet are not known to lack the
// import, so Ready stays as the export has it.
func TestControllerClusterSetReadyPerImport(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup runs before the controller starts; what it returns runs
		// once shop/web is Ready, its writes recorded, and makes
		// cluster-b export shop/api.
		setup func(t *testing.T, b testfixture.Member) func(*testEnv)
	}{
		{name: "running", setup: func(t *testing.T, b testfixture.Member) func(*testEnv) {
			return func(e *testEnv) {
				watchingExports(t, b)
				exportAPI(e.ctx, t, b)
			}
		}},
		// The fake's watch does not resume from a resourceVersion: what
		// the new controller must see is written while none runs.
		{name: "after a restart", setup: func(t *testing.T, b testfixture.Member) func(*testEnv) {
			return func(e *testEnv) { e.restart(func() { exportAPI(e.base, t, b) }) }
		}},
		{name: "a member read late", setup: func(t *testing.T, b testfixture.Member) func(*testEnv) {
			release := holdFirstExportList(t, b)
			exportAPI(context.Background(), t, b)
			return func(*testEnv) { release() }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
			then := tc.setup(t, b)
			e := twoMembers(t, a, b)
			readyIn := func(m testfixture.Member, name string) bool {
				ex, err := m.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(e.base, name, metav1.GetOptions{})
				return err == nil && meta.IsStatusConditionTrue(ex.Status.Conditions, "Ready")
			}
			testfixture.Eventually(t, "shop/web Ready", func() bool { return readyIn(a, "web") })
			inA, inB := recordReady(a), recordReady(b)
			then(e)
			testfixture.Eventually(t, "shop/api Ready", func() bool { return readyIn(b, "api") })
			if got := inB.of("api"); len(got) < 2 || got[0] != metav1.ConditionFalse {
				t.Errorf("Ready of shop/api as written: %v; want False (Pending) until written everywhere, then True", got)
			}
			if got := inA.of("web"); len(got) != 0 {
				t.Errorf("Ready of shop/web written again %v for another import", got)
			}
		})
	}
}

// watchingExports waits until the controller watches m's ServiceExports
// and its Services (not its own): the fake's watch does not resume from
// a resourceVersion, so a write between an informer's list and its watch
// would never reach it.
func watchingExports(t *testing.T, m testfixture.Member) {
	t.Helper()
	watches := func(actions []k8stesting.Action, resource, selector string) bool {
		return slices.ContainsFunc(actions, func(a k8stesting.Action) bool {
			w, ok := a.(k8stesting.WatchAction)
			return ok && a.GetResource().Resource == resource && w.GetWatchRestrictions().Labels.String() == selector
		})
	}
	testfixture.Eventually(t, "the controller watching the member's ServiceExports and Services", func() bool {
		return watches(m.MCS.Actions(), "serviceexports", "") &&
			watches(m.Actions(), "services", contract.LabelAppManagedBy+"!="+contract.ManagedByValue)
	})
}

// exportAPI makes member m export shop/api, one ready endpoint behind it.
func exportAPI(ctx context.Context, t *testing.T, m testfixture.Member) {
	t.Helper()
	if _, err := m.CoreV1().Services("shop").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.11",
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := testfixture.ServiceEndpoints("shop", "api", "api-1", testfixture.Endpoint("10.244.2.7", true))
	s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}
	if _, err := m.DiscoveryV1().EndpointSlices("shop").Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.MCS.MulticlusterV1beta1().ServiceExports("shop").Create(ctx, &mcsv1beta1.ServiceExport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", CreationTimestamp: metav1.NewTime(time.Unix(200, 0))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// holdFirstExportList holds the first list of m's ServiceExports until
// the returned func is called (also at the test's end): a member whose
// export informer lists late, as on a busy controller.
func holdFirstExportList(t *testing.T, m testfixture.Member) func() {
	gate := make(chan struct{})
	var first, release sync.Once
	m.MCS.PrependReactor("list", "serviceexports", func(k8stesting.Action) (bool, runtime.Object, error) {
		first.Do(func() { <-gate })
		return false, nil, nil
	})
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return open
}

// exportWatchLag is how late lagExportWatch delivers each event: far
// longer than the syncs a test runs meanwhile take.
const exportWatchLag = 3 * time.Second

// lagExportWatch makes every watch of m's ServiceExports deliver each
// event lag late, in order: an informer that has not caught up with a
// write yet, as on a busy controller.
func lagExportWatch(m testfixture.Member, lag time.Duration) {
	m.MCS.PrependWatchReactor("serviceexports", func(a k8stesting.Action) (bool, watch.Interface, error) {
		wa, ok := a.(k8stesting.WatchActionImpl)
		if !ok {
			return false, nil, nil
		}
		w, err := m.MCS.Tracker().Watch(a.GetResource(), a.GetNamespace(), wa.GetListOptions())
		if err != nil {
			return true, nil, err
		}
		out, stop := make(chan watch.Event), make(chan struct{})
		go func() {
			defer close(out)
			defer w.Stop()
			for ev := range w.ResultChan() {
				select {
				case <-time.After(lag):
				case <-stop:
					return
				}
				select {
				case out <- ev:
				case <-stop:
					return
				}
			}
		}()
		lagged := watch.NewProxyWatcher(out)
		go func() {
			<-lagged.StopChan()
			close(stop)
		}()
		return true, lagged, nil
	})
}

// An export's status, once written, is not written again while the
// member's export informer still shows it as it was before: the
// controller plans from the copy its write returned (exportsWritten),
// newer by its resourceVersion, until the informer shows that one.
func TestControllerClusterSetExportStatusNotRewrittenFromLaggingInformer(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	lagExportWatch(a, exportWatchLag)
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "shop/web Ready", func() bool {
		ex, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(ex.Status.Conditions, "Ready")
	})
	inA := recordReady(a)
	// Two more syncs, both well within the lag: the second begins only
	// once the first has ended (one sync of a key at a time).
	start := time.Now()
	for range 3 {
		n := e.syncs()
		e.rec.Add("dev-team/prod")
		testfixture.Eventually(t, "another sync", func() bool { return e.syncs() > n })
	}
	if time.Since(start) >= exportWatchLag {
		t.Skip("the syncs took longer than the informer's lag")
	}
	if got := inA.of("web"); len(got) != 0 {
		t.Errorf("Ready of shop/web written again %v from the informer's older copy", got)
	}
}

// A write by anyone else of the controller's objects in a member (here a
// ClusterSet the member left, whose write was still running) is undone
// at the set's next sync: the import is planned again because what the
// member holds is no longer what the controller's last write left.
func TestControllerClusterSetRestoresOverwrittenImport(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "cluster-a's import in cluster-b", func() bool { return hasImport(e.ctx, b) })
	// The fake's watch does not resume from a resourceVersion: a write
	// between the informer's list and its watch would never reach it.
	testfixture.Eventually(t, "the controller's ServiceImport informer watching cluster-b", func() bool {
		return slices.ContainsFunc(b.MCS.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == "serviceimports"
		})
	})
	imports := b.MCS.MulticlusterV1beta1().ServiceImports("shop")
	si, err := imports.Get(e.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	si.Status.Clusters = []mcsv1beta1.ClusterStatus{{Cluster: "cluster-x"}}
	if _, err := imports.UpdateStatus(e.ctx, si, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "cluster-a's import in cluster-b again", func() bool {
		e.rec.Add("dev-team/prod")
		return hasImport(e.ctx, b)
	})
}
