package clusterset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// addExport exports the Service ns/name of m, one ready endpoint at addr.
func addExport(t *testing.T, m testfixture.Member, ns, name, addr string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.11",
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	s := testfixture.ServiceEndpoints(ns, name, name+"-1", testfixture.Endpoint(addr, true))
	s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}
	for _, o := range []runtime.Object{svc, s} {
		if err := m.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.MCS.Tracker().Add(&mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		CreationTimestamp: metav1.NewTime(time.Unix(150, 0))}}); err != nil {
		t.Fatal(err)
	}
}

// answersImport reports whether m's slice namespace holds the clusterset
// slice of ns/name with a ClusterSetIP.
func answersImport(ctx context.Context, t *testing.T, m testfixture.Member, ns, name string) bool {
	for _, s := range clusterSetSlices(ctx, t, m) {
		if s.Annotations[contract.AnnotationServiceImport] == ns+"/"+name && len(s.Endpoints) > 0 {
			return true
		}
	}
	return false
}

// One import a member refuses (the name of its derived Service is taken
// by someone else's Service) costs that import only: the member's other
// imports get their DNS slices, a name no longer exported leaves its DNS,
// and the refused import's ServiceImport says why.
func TestControllerClusterSetRefusedImportKeepsTheZone(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	addExport(t, a, "shop", "api", "10.244.1.6")
	// Someone else's Service holds the name of web's derived Service in b.
	taken := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: objects.DerivedServiceName("shop", "web")},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.9.9", ClusterIPs: []string{"10.96.9.9"}}}
	if err := b.Tracker().Add(taken); err != nil {
		t.Fatal(err)
	}
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "shop/api answered in cluster-b", func() bool { return answersImport(e.ctx, t, b, "shop", "api") })
	if answersImport(e.ctx, t, b, "shop", "web") {
		t.Error("cluster-b answers shop/web, whose derived Service is another's")
	}
	testfixture.Eventually(t, "shop/web's ServiceImport in cluster-b says its Service is not the controller's", func() bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		c := meta.FindStatusCondition(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady))
		return err == nil && c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "not the controller's")
	})

	// Unexport api while web is still refused: api leaves cluster-b's DNS.
	if err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Delete(e.ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "shop/api gone from cluster-b's DNS", func() bool { return !answersImport(e.ctx, t, b, "shop", "api") })
}

// A refused import costs that import, not its member: the member's
// writes do not back off, so each new export reaches it at once however
// long the refusal lasts (its backoff would have doubled at each sync);
// the refused import is tried again on a backoff of its own, not at
// every sync; and only its exports are Pending, the others Ready.
func TestControllerClusterSetRefusedImportDoesNotSlowTheMember(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	derived := objects.DerivedServiceName("shop", "web")
	if err := b.Tracker().Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: derived},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.9.9", ClusterIPs: []string{"10.96.9.9"}}}); err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int32
	b.PrependReactor("create", "services", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if s, ok := act.(k8stesting.CreateAction).GetObject().(*corev1.Service); ok && s.Name == derived {
			tries.Add(1)
		}
		return false, nil, nil
	})
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "shop/web's ServiceImport in cluster-b says its Service is not the controller's", func() bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		c := meta.FindStatusCondition(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady))
		return err == nil && c != nil && strings.Contains(c.Message, "not the controller's")
	})
	for i := range 5 {
		name := fmt.Sprint("api", i)
		addExport(t, a, "shop", name, fmt.Sprint("10.244.1.", 10+i))
		testfixture.Eventually(t, name+" answered in cluster-b", func() bool { return answersImport(e.ctx, t, b, "shop", name) })
	}
	readyIn := func(name string) *metav1.Condition {
		ex, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return meta.FindStatusCondition(ex.Status.Conditions, "Ready")
	}
	testfixture.Eventually(t, "api0 Ready and web Pending in cluster-a", func() bool {
		api, web := readyIn("api0"), readyIn("web")
		return api != nil && api.Status == metav1.ConditionTrue && web != nil && web.Reason == objects.ReasonPending
	})
	if n := tries.Load(); n > 4 {
		t.Errorf("the refused derived Service was tried %d times while 5 exports arrived, want its own backoff", n)
	}
}

// A member that accepts requests and answers none costs each write of
// it one deadline, not one per object: Bounded fails every call after
// the first that passed its deadline at once.
func TestBoundedMemberStopsAtTheFirstDeadline(t *testing.T) {
	m := testfixture.NewMember(false, "")
	var calls atomic.Int32
	hang := func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		time.Sleep(200 * time.Millisecond)
		return true, nil, context.DeadlineExceeded
	}
	m.PrependReactor("*", "*", hang)
	client := apply.Bounded(apply.NewMember("cluster-b", m.Clientset, m.MCS), 50*time.Millisecond)
	start := time.Now()
	var errs []error
	for i := range 20 {
		_, err := client.Services("shop").Create(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("s", i)}}, metav1.CreateOptions{})
		errs = append(errs, err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls reached the member, want 1", n)
	}
	for i, err := range errs {
		if !errors.Is(err, apply.ErrNotAnswering) {
			t.Errorf("call %d: %v, want ErrNotAnswering", i, err)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("20 calls took %s", took)
	}
}

// A member whose writes are slow (an admission webhook that takes seconds
// per call) delays only its own writes: another member gets a new export
// while the slow member's write is still held, and the ClusterSet says
// which member is still being written. The slow member's calls are held
// until the test ends, so nothing depends on how fast the machine is.
func TestControllerClusterSetSlowMemberDelaysOnlyItself(t *testing.T) {
	a, b, c := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, ""), testfixture.NewMember(false, "")
	release := make(chan struct{})
	var entered atomic.Int32
	slow := func(k8stesting.Action) (bool, runtime.Object, error) {
		entered.Add(1)
		<-release
		return false, nil, nil
	}
	for _, verb := range []string{"create", "update", "delete"} {
		b.PrependReactor(verb, "*", slow)
		b.MCS.PrependReactor(verb, "*", slow)
	}
	sel := map[string]string{"set": "prod"}
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", sel, ""), testfixture.CAPICluster("cluster-b", sel, ""), testfixture.CAPICluster("cluster-c", sel, ""),
			testfixture.ClusterSetObject("prod")},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": c})
	// Runs before the controller stops: the held calls end.
	t.Cleanup(func() { close(release) })
	testfixture.Eventually(t, "a write of cluster-b held", func() bool { return entered.Load() > 0 })
	testfixture.Eventually(t, "shop/web answered in cluster-c", func() bool { return answersImport(e.ctx, t, c, "shop", "web") })
	testfixture.Eventually(t, "the ClusterSet says cluster-b is being written", func() bool {
		st := clusterSetStatusOf(e.ctx, t, e, "prod")
		cond := meta.FindStatusCondition(st.Conditions, "Ready")
		return cond != nil && cond.Reason == ReasonWriting && strings.Contains(cond.Message, "cluster-b")
	})

	addExport(t, a, "shop", "api", "10.244.1.6")
	// cluster-b's calls are still held: only release ends them.
	testfixture.Eventually(t, "shop/api answered in cluster-c", func() bool { return answersImport(e.ctx, t, c, "shop", "api") })
}

// Once a member's informers have listed, a write plans from them: a new
// export reaches the other member, with its derived Service's address,
// without a single list of the controller's objects there.
func TestControllerClusterSetWritesListNothing(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	var lists atomic.Int32
	// The controller lists its own objects by label; the test's checks
	// list without one.
	countLists := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if l, ok := a.(k8stesting.ListAction); ok && !l.GetListRestrictions().Labels.Empty() {
			lists.Add(1)
		}
		return false, nil, nil
	}
	b.PrependReactor("list", "*", countLists)
	b.MCS.PrependReactor("list", "*", countLists)
	e := twoMembers(t, a, b)
	imported := func(name string) bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil || len(si.Spec.IPs) == 0 {
			return false
		}
		sl, err := b.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range sl.Items {
			if len(s.Endpoints) > 0 && slices.Contains(s.Endpoints[0].Addresses, si.Spec.IPs[0]) {
				return true
			}
		}
		return false
	}
	testfixture.Eventually(t, "shop/web imported into cluster-b with its DNS slice", func() bool { return imported("web") })
	time.Sleep(300 * time.Millisecond) // the informers' lists are done
	before := lists.Load()

	api := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.11",
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	if _, err := a.CoreV1().Services("shop").Create(e.ctx, api, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Create(e.ctx, &mcsv1beta1.ServiceExport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "shop/api imported into cluster-b with its DNS slice", func() bool { return imported("api") })
	// Ready says the last sync wrote every member: one more sync, with
	// no other event to cause it.
	testfixture.Eventually(t, "shop/api Ready in cluster-b", func() bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "api", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady))
	})
	if n := lists.Load() - before; n != 0 {
		t.Errorf("%d lists by label in cluster-b for one more export, want none", n)
	}
}

// TestControllerClusterSetResyncWritesNothing: once every member holds
// its objects, syncs with nothing changed (a resync, another set's
// event) send no write to any member: every object, status and contract
// slice is already as the plan wants it.
func TestControllerClusterSetResyncWritesNothing(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	var writes atomic.Int32
	var last atomic.Value
	countWrites := func(act k8stesting.Action) (bool, runtime.Object, error) {
		switch act.GetVerb() {
		case "create", "update", "patch", "delete":
			writes.Add(1)
			last.Store(fmt.Sprintf("%s %s/%s", act.GetVerb(), act.GetResource().Resource, act.GetSubresource()))
		}
		return false, nil, nil
	}
	for _, m := range []testfixture.Member{a, b} {
		m.PrependReactor("*", "*", countWrites)
		m.MCS.PrependReactor("*", "*", countWrites)
	}
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "shop/web Ready in both members", func() bool {
		for _, m := range []testfixture.Member{a, b} {
			si, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
			if err != nil || !meta.IsStatusConditionTrue(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady)) {
				return false
			}
		}
		return true
	})
	// Quiet: no write for a while, so the writes that settle the set
	// (statuses written back, Ready) are over. Syncs that never stop
	// writing fail here, not at the test's timeout.
	testfixture.Eventually(t, "no write in the members for 500ms", func() bool {
		n := writes.Load()
		time.Sleep(500 * time.Millisecond)
		return writes.Load() == n
	})
	before, syncs := writes.Load(), e.syncs()
	// A key is synced by one worker at a time: once sync i+1 began,
	// sync i has ended. The lanes' writes may outlast it a little.
	const resyncs = 3
	for i := range resyncs + 1 {
		e.rec.Add("dev-team/prod")
		testfixture.Eventually(t, fmt.Sprintf("resync %d", i+1), func() bool { return e.syncs() >= syncs+float64(i+1) })
		time.Sleep(300 * time.Millisecond)
	}
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes in the members at %d syncs of an unchanged set (the last: %v), want none", n, resyncs, last.Load())
	}
}
