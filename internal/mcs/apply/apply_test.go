package apply

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

// fakeMember is a member on fake clientsets that, like an API server,
// gives every created object a UID and every Service a cluster IP.
type fakeMember struct {
	kube *kubefake.Clientset
	mcs  *mcsfake.Clientset
	Member
}

func newFakeMember(kubeObjs, mcsObjs []runtime.Object) *fakeMember {
	f := &fakeMember{kube: kubefake.NewClientset(kubeObjs...), mcs: mcsfake.NewSimpleClientset(mcsObjs...)}
	n := 0
	assign := func(a k8stesting.Action) (bool, runtime.Object, error) {
		o := a.(k8stesting.CreateAction).GetObject()
		n++
		m := o.(metav1.Object)
		m.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
		if s, ok := o.(*corev1.Service); ok {
			ip := fmt.Sprintf("10.96.0.%d", n)
			s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip}
		}
		// The status subresource: a create sets no status.
		if si, ok := o.(*mcsv1beta1.ServiceImport); ok {
			si.Status = mcsv1beta1.ServiceImportStatus{}
		}
		return false, nil, nil
	}
	f.kube.PrependReactor("create", "*", assign)
	f.mcs.PrependReactor("create", "*", assign)
	// The status subresource: an update of the object keeps the status,
	// an update of the status keeps the rest.
	f.mcs.PrependReactor("update", "serviceimports", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction)
		si := u.GetObject().(*mcsv1beta1.ServiceImport)
		o, err := f.mcs.Tracker().Get(mcsv1beta1.SchemeGroupVersion.WithResource("serviceimports"), si.Namespace, si.Name)
		if err != nil {
			return false, nil, nil
		}
		old := o.(*mcsv1beta1.ServiceImport)
		if u.GetSubresource() == "status" {
			si.Spec, si.Labels, si.OwnerReferences = old.Spec, old.Labels, old.OwnerReferences
		} else {
			si.Status = old.Status
		}
		return false, nil, nil
	})
	f.Member = NewMember("a", f.kube, f.mcs)
	return f
}

func (f *fakeMember) apply(t *testing.T, desired objects.Objects) (Result, error) {
	t.Helper()
	return f.applyAt(t, desired, now)
}

// applyAt lists the member and writes desired at the time at.
func (f *fakeMember) applyAt(t *testing.T, desired objects.Objects, at metav1.Time) (Result, error) {
	t.Helper()
	ex, err := List(context.Background(), f.Member)
	if err != nil {
		t.Fatal(err)
	}
	return Apply(context.Background(), f.Member, desired, ex, at)
}

func (f *fakeMember) services(t *testing.T) []corev1.Service {
	l, err := f.kube.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func (f *fakeMember) slices(t *testing.T) []discoveryv1.EndpointSlice {
	l, err := f.kube.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func (f *fakeMember) imports(t *testing.T) []mcsv1beta1.ServiceImport {
	l, err := f.mcs.MulticlusterV1beta1().ServiceImports("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func export(name string) *mcsv1beta1.ServiceExport {
	return &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: 1}}
}

func TestApplyWritesAndOwns(t *testing.T) {
	f := newFakeMember(nil, []runtime.Object{export("cart")})
	res, err := f.apply(t, desiredOf(t, true, "cart"))
	if err != nil {
		t.Fatal(err)
	}
	imps := f.imports(t)
	if len(imps) != 1 || len(imps[0].Status.Clusters) != 2 {
		t.Fatalf("ServiceImports %+v: want shop/cart with clusters a, b", imps)
	}
	uid := imps[0].UID
	svcs, eps := f.services(t), f.slices(t)
	if len(svcs) != 1 || len(eps) != 2 {
		t.Fatalf("%d Services, %d slices: want 1, 2", len(svcs), len(eps))
	}
	for _, o := range []metav1.Object{&svcs[0], &eps[0], &eps[1]} {
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != uid || refs[0].Kind != "ServiceImport" || refs[0].Name != "cart" {
			t.Errorf("%s owners %+v: want the ServiceImport %s", o.GetName(), refs, uid)
		}
	}
	key := aggregate.Key{Namespace: "shop", Name: "cart"}
	if got := res.ClusterIPs[key]; !slices.Equal(got, svcs[0].Spec.ClusterIPs) || len(got) == 0 {
		t.Errorf("ClusterIPs %v: want the derived Service's %v", got, svcs[0].Spec.ClusterIPs)
	}
	se, err := f.mcs.MulticlusterV1beta1().ServiceExports("shop").Get(context.Background(), "cart", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := conditionsView(se.Status.Conditions); got != "Valid=True@now(generation 1) Conflict=False@now(generation 1) Ready=True@now(generation 1)" {
		t.Errorf("export conditions %s", got)
	}
	// A second write of the same is no write at all.
	f.kube.ClearActions()
	f.mcs.ClearActions()
	if _, err := f.apply(t, desiredOf(t, true, "cart")); err != nil {
		t.Fatal(err)
	}
	if w := writes(f.kube.Actions(), f.mcs.Actions()); len(w) != 0 {
		t.Errorf("second write of the same objects: %q", w)
	}
}

// writes are the actions that are not reads.
func writes(lists ...[]k8stesting.Action) []string {
	var out []string
	for _, l := range lists {
		for _, a := range l {
			if v := a.GetVerb(); v != "list" && v != "get" && v != "watch" {
				out = append(out, v+" "+a.GetResource().Resource+"/"+a.GetSubresource())
			}
		}
	}
	return out
}

func TestApplyDeletesOnlyOurs(t *testing.T) {
	f := newFakeMember(nil, nil)
	if _, err := f.apply(t, desiredOf(t, true, "cart", "shoes")); err != nil {
		t.Fatal(err)
	}
	user := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart", Labels: map[string]string{objects.LabelServiceName: "cart"}}}
	if _, err := f.kube.CoreV1().Services("shop").Create(context.Background(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := f.apply(t, desiredOf(t, true, "shoes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.ClusterIPs[aggregate.Key{Namespace: "shop", Name: "cart"}]; ok || len(res.ClusterIPs) != 1 {
		t.Errorf("ClusterIPs %v: want those of shoes only", res.ClusterIPs)
	}
	var names []string
	for _, s := range f.services(t) {
		names = append(names, s.Name)
	}
	if want := []string{"cart", objects.DerivedServiceName("shop", "shoes")}; !slices.Equal(names, want) {
		t.Errorf("Services %q: want %q (the user's and shoes' derived)", names, want)
	}
	for _, s := range f.slices(t) {
		if s.Labels[objects.LabelServiceName] != "shoes" {
			t.Errorf("slice %s of %s left", s.Name, s.Labels[objects.LabelServiceName])
		}
	}
	if imps := f.imports(t); len(imps) != 1 || imps[0].Name != "shoes" {
		t.Errorf("ServiceImports %d: want shoes only", len(imps))
	}
}

func TestApplyNeverOverwritesAUsersObject(t *testing.T) {
	users := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless}}
	f := newFakeMember(nil, []runtime.Object{users})
	res, err := f.apply(t, desiredOf(t, true, "cart", "shoes"))
	cart := aggregate.Key{Namespace: "shop", Name: "cart"}
	if refused := res.Refused[cart]; err != nil || len(res.Refused) != 1 || !errors.Is(refused, ErrNotOurs) ||
		!strings.Contains(refused.Error(), "create ServiceImport shop/cart in a") {
		t.Errorf("error %v, refused %v: want the conflict on shop/cart named, for cart only", err, res.Refused)
	}
	for _, si := range f.imports(t) {
		if si.Name == "cart" && (si.Spec.Type != mcsv1beta1.Headless || si.Labels != nil) {
			t.Errorf("the user's ServiceImport was changed: %+v", si)
		}
	}
	if n := len(f.imports(t)); n != 2 {
		t.Errorf("%d ServiceImports: want the user's and shoes", n)
	}
	for _, s := range f.slices(t) {
		if s.Labels[objects.LabelServiceName] != "shoes" {
			t.Errorf("slice %s written for an import whose ServiceImport is not ours", s.Name)
		}
	}
	if n := len(f.services(t)); n != 1 {
		t.Errorf("%d Services: want shoes' derived only", n)
	}
}

// TestApplyServiceNameTaken: while another's Service holds the derived
// name, the import's slices are not written and its ServiceImport says
// so (Absent, not Ready), without a write at every sync; once the name is
// free the slices are written and the import is Present and Ready.
func TestApplyServiceNameTaken(t *testing.T) {
	taken := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: objects.DerivedServiceName("shop", "cart")}}
	f := newFakeMember([]runtime.Object{taken}, nil)
	cart := aggregate.Key{Namespace: "shop", Name: "cart"}
	res, err := f.apply(t, desiredOf(t, true, "cart"))
	if err != nil || !errors.Is(res.Refused[cart], ErrNotOurs) {
		t.Errorf("error %v, refused %v: want ErrNotOurs for cart", err, res.Refused)
	}
	if n := len(f.slices(t)); n != 0 {
		t.Errorf("%d slices written: they would be endpoints of another's Service", n)
	}
	si := f.imports(t)[0]
	ready := meta.FindStatusCondition(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady))
	if si.Status.EndpointSliceObjects != mcsv1beta1.EndpointSliceObjectsAbsent || ready == nil ||
		ready.Status != metav1.ConditionFalse || ready.Reason != "Pending" || !strings.Contains(ready.Message, "not the controller's") {
		t.Errorf("ServiceImport status %+v: want Absent and Ready=False/Pending naming the held name", si.Status)
	}
	f.mcs.ClearActions()
	if res, err := f.apply(t, desiredOf(t, true, "cart")); err != nil || !errors.Is(res.Refused[cart], ErrNotOurs) {
		t.Errorf("error %v, refused %v: want ErrNotOurs again", err, res.Refused)
	}
	if w := writes(f.mcs.Actions()); len(w) != 0 {
		t.Errorf("a second sync with the name still held wrote %q", w)
	}
	if err := f.kube.CoreV1().Services("shop").Delete(context.Background(), taken.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.apply(t, desiredOf(t, true, "cart")); err != nil {
		t.Fatal(err)
	}
	if si := f.imports(t)[0]; si.Status.EndpointSliceObjects != mcsv1beta1.EndpointSliceObjectsPresent || len(f.slices(t)) != 2 ||
		!meta.IsStatusConditionTrue(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady)) {
		t.Errorf("ServiceImport status %+v, %d slices: want Present, Ready and 2 slices once the name is free", si.Status, len(f.slices(t)))
	}
}

// readyView is the Ready condition of a ServiceImport: status, reason,
// and its lastTransitionTime in hours after t0.
func readyView(si mcsv1beta1.ServiceImport) string {
	c := meta.FindStatusCondition(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady))
	if c == nil {
		return "no Ready"
	}
	return fmt.Sprintf("%s Ready=%s/%s@%v", si.Status.EndpointSliceObjects, c.Status, c.Reason, c.LastTransitionTime.Sub(t0).Hours())
}

// TestApplyImportReady: a ClusterSetIP import's status waits while its
// derived Service's ClusterIP is read back (the caller writes it into the
// spec next), then is written once, Ready; a sync that changes nothing
// writes nothing and keeps the transition time.
func TestApplyImportReady(t *testing.T) {
	f := newFakeMember(nil, nil)
	at := func(h int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(h) * time.Hour)) }
	steps := []struct {
		name    string
		desired objects.Objects
		at      metav1.Time
		want    string
		writes  []string
	}{
		{"first round, the ClusterIP read back: no status yet", pendingOf(t, "cart"), at(1), "no Ready",
			[]string{"create services/", "create endpointslices/", "create endpointslices/", "create serviceimports/"}},
		{"again without it: still no status", pendingOf(t, "cart"), at(2), "no Ready", nil},
		{"ClusterIP read back: Ready", desiredOf(t, true, "cart"), at(3), "Present Ready=True/Ready@3",
			[]string{"update serviceimports/", "update serviceimports/status"}},
		{"again: nothing written, time kept", desiredOf(t, true, "cart"), at(4), "Present Ready=True/Ready@3", nil},
	}
	for _, s := range steps {
		f.kube.ClearActions()
		f.mcs.ClearActions()
		if _, err := f.applyAt(t, s.desired, s.at); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		imps := f.imports(t)
		if len(imps) != 1 {
			t.Fatalf("%s: %d ServiceImports, want 1", s.name, len(imps))
		}
		if got := readyView(imps[0]); got != s.want {
			t.Errorf("%s: %s, want %s", s.name, got, s.want)
		}
		if got := writes(f.kube.Actions(), f.mcs.Actions()); !slices.Equal(got, s.writes) {
			t.Errorf("%s: writes %q, want %q", s.name, got, s.writes)
		}
	}
}

func TestApplyOneFailureDoesNotStopTheRest(t *testing.T) {
	f := newFakeMember(nil, nil)
	boom := errors.New("boom")
	f.kube.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		if s.Labels[objects.LabelSourceCluster] == "a" && s.Labels[objects.LabelServiceName] == "cart" {
			return true, nil, boom
		}
		return false, nil, nil
	})
	_, err := f.apply(t, desiredOf(t, true, "cart", "shoes"))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "create EndpointSlice shop/") {
		t.Errorf("error %v: want the failed create named", err)
	}
	if n := len(f.slices(t)); n != 3 {
		t.Errorf("%d slices: want the 3 that did not fail", n)
	}
}

// TestApplyHoldsAnImportWithoutServiceImport: while its ServiceImport
// cannot be written, an import's other objects are neither written nor
// deleted.
func TestApplyHoldsAnImportWithoutServiceImport(t *testing.T) {
	f := newFakeMember(nil, nil)
	if _, err := f.apply(t, desiredOf(t, true, "cart")); err != nil {
		t.Fatal(err)
	}
	if err := f.mcs.MulticlusterV1beta1().ServiceImports("shop").Delete(context.Background(), "cart", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	f.mcs.PrependReactor("create", "serviceimports", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, boom })
	if _, err := f.apply(t, desiredOf(t, true, "cart")); !errors.Is(err, boom) {
		t.Errorf("error %v: want the failed create", err)
	}
	if n, m := len(f.services(t)), len(f.slices(t)); n != 1 || m != 2 {
		t.Errorf("%d Services, %d slices: want them kept while the ServiceImport is missing", n, m)
	}
}

func TestApplyImportStatusAndUpdate(t *testing.T) {
	f := newFakeMember(nil, nil)
	if _, err := f.apply(t, desiredOf(t, true, "cart")); err != nil {
		t.Fatal(err)
	}
	d := desiredOf(t, true, "cart")
	d.Imports[0].Spec.Ports[0].Port = 81
	d.Imports[0].Status.Clusters = d.Imports[0].Status.Clusters[1:]
	if _, err := f.apply(t, d); err != nil {
		t.Fatal(err)
	}
	si := f.imports(t)[0]
	if si.Spec.Ports[0].Port != 81 || len(si.Status.Clusters) != 1 || si.Status.Clusters[0].Cluster != "b" {
		t.Errorf("ServiceImport spec %+v status %+v: want port 81 and cluster b", si.Spec.Ports, si.Status.Clusters)
	}
}

// inFlight is a SliceClient whose creates take a while, counting how
// many are in flight at once.
type inFlight struct {
	SliceClient
	now, most *atomic.Int32
}

func (c inFlight) Create(ctx context.Context, s *discoveryv1.EndpointSlice, opts metav1.CreateOptions) (*discoveryv1.EndpointSlice, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	time.Sleep(20 * time.Millisecond)
	return c.SliceClient.Create(ctx, s, opts)
}

// The writes of one kind go write.Concurrency at a time: a member's round
// trips do not add up object by object, and no more are in flight than
// the bound.
func TestApplyWritesConcurrentlyBounded(t *testing.T) {
	f := newFakeMember(nil, nil)
	var now, most atomic.Int32
	inner := f.Slices
	f.Slices = func(ns string) SliceClient { return inFlight{SliceClient: inner(ns), now: &now, most: &most} }
	var names []string
	for i := range 3 * write.Concurrency {
		names = append(names, fmt.Sprintf("svc%d", i))
	}
	if _, err := f.apply(t, desiredOf(t, true, names...)); err != nil {
		t.Fatal(err)
	}
	if n := len(f.slices(t)); n != 2*len(names) {
		t.Fatalf("%d slices written, want %d", n, 2*len(names))
	}
	if m := most.Load(); m < 2 || m > write.Concurrency {
		t.Errorf("%d slice creates in flight at most: want more than one, at most %d", m, write.Concurrency)
	}
}

// A refusal (a webhook's denial, a full quota) is its import's: Apply
// returns no error for it, names it in Refused, and writes the other
// imports; a server error says nothing of the object and is returned.
func TestApplyRefusalCostsItsImport(t *testing.T) {
	f := newFakeMember(nil, nil)
	denied := apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "x", errors.New("exceeded quota"))
	f.kube.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if s := a.(k8stesting.CreateAction).GetObject().(*corev1.Service); s.Labels[objects.LabelServiceName] == "cart" {
			return true, nil, denied
		}
		return false, nil, nil
	})
	res, err := f.apply(t, desiredOf(t, true, "cart", "shoes"))
	cart := aggregate.Key{Namespace: "shop", Name: "cart"}
	if err != nil || len(res.Refused) != 1 || !apierrors.IsForbidden(res.Refused[cart]) {
		t.Errorf("error %v, refused %v: want cart's Service refused, no error", err, res.Refused)
	}
	if n := len(f.services(t)); n != 1 {
		t.Errorf("%d Services: want shoes' derived", n)
	}
	f.kube.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	if res, err := f.apply(t, desiredOf(t, true, "cart", "shoes")); !apierrors.IsInternalError(err) || len(res.Refused) != 0 {
		t.Errorf("error %v, refused %v: want the server error returned", err, res.Refused)
	}
}

func TestRefusal(t *testing.T) {
	gr := schema.GroupResource{Resource: "services"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("create: %w", ErrNotOurs), true},
		{apierrors.NewForbidden(gr, "x", errors.New("denied by webhook")), true},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "x", nil), true},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), true},
		{apierrors.NewNotFound(gr, "shop"), true},
		{apierrors.NewInternalError(errors.New("webhook timed out")), false},
		{apierrors.NewTooManyRequests("slow down", 1), false},
		{apierrors.NewServiceUnavailable("down"), false},
		{apierrors.NewUnauthorized("expired"), false},
		{fmt.Errorf("update: %w", ErrNotAnswering), false},
		{context.DeadlineExceeded, false},
		{errors.New("connection refused"), false},
	} {
		if got := Refusal(tc.err); got != tc.want {
			t.Errorf("Refusal(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
