package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// Indexes of mcsKinds.
const (
	kindImports = iota
	kindServices
	kindSlices
)

// mcsKinds are the kinds of the ClusterSet writer's objects, as
// clusterset.OwnKinds has them but for the lists and watches: the tests
// fill the stores themselves.
func mcsKinds() []OwnKind {
	digest := func(o metav1.Object) (any, uint64, bool) { return apply.HeldDigest(o) }
	return []OwnKind{
		kindImports:  {What: "imports", Selector: apply.OursSelector(), Digest: digest},
		kindServices: {What: "services", Selector: apply.OursSelector(), Digest: digest},
		kindSlices:   {What: "slices", Selector: apply.OursSelector(), Digest: digest},
	}
}

// A write of the controller stands in for the object its informer holds
// until the informer shows that write or a newer one; a deletion hides
// the object until the informer deletes it too.
func TestOwnWrittenUntilShown(t *testing.T) {
	o := newOwnWatch(mcsKinds())
	store := &informerStore{o: o, store: kindServices, Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	o.stores[kindServices] = &objectWatch{store: store}
	svc := func(name, rv, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv, Labels: ours(name)},
			Spec: corev1.ServiceSpec{ClusterIP: ip}}
	}
	held := func() map[string]string {
		pending := o.pending()
		listed := list[*corev1.Service](o, kindServices, pending)
		// The digests kept as events come are those of the objects listed.
		sums := map[aggregate.Key]uint64{}
		for _, s := range listed {
			k, d, _ := apply.HeldDigest(s)
			sums[k] += d
		}
		digest := o.digest(pending)
		for _, name := range []string{"a", "b", "c", "d"} {
			k := aggregate.Key{Namespace: "shop", Name: name}
			if got := digest(k); got != sums[k] {
				t.Errorf("digest of %s: %d kept, %d of the objects listed", name, got, sums[k])
			}
		}
		out := map[string]string{}
		for _, s := range listed {
			out[s.Name] = s.ResourceVersion + "/" + s.Spec.ClusterIP
		}
		return out
	}
	check := func(step string, want map[string]string) {
		t.Helper()
		got := held()
		if len(got) != len(want) {
			t.Errorf("%s: held %v, want %v", step, got, want)
			return
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: held %v, want %v", step, got, want)
				return
			}
		}
	}
	_ = store.Add(svc("a", "5", ""))
	_ = store.Add(svc("b", "6", "10.0.0.2"))
	// Not the controller's: neither listed nor digested.
	foreign := svc("d", "4", "")
	foreign.Labels = nil
	_ = store.Add(foreign)
	check("the informer's", map[string]string{"a": "5/", "b": "6/10.0.0.2"})

	// Total changes with what is listed, and only then.
	total := func() uint64 { return o.totalWith(o.pending()) }
	before := total()

	o.seen(kindServices, "shop", "a", svc("a", "9", "10.0.0.1"))
	o.seen(kindServices, "shop", "b", nil)
	o.seen(kindServices, "shop", "c", svc("c", "10", "10.0.0.3"))
	check("written, not shown", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})
	written := total()
	if written == before {
		t.Error("Total unchanged by the controller's writes")
	}

	// An older event of a (the watch lags) does not retire the write.
	_ = store.Update(svc("a", "7", ""))
	check("an older event", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})

	// b's update before the deletion does not bring it back.
	_ = store.Update(svc("b", "8", "10.0.0.2"))
	check("an update before the deletion", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})
	if total() != written {
		t.Error("Total changed by events hidden behind the controller's writes")
	}

	for _, s := range []*corev1.Service{svc("a", "9", "10.0.0.1"), svc("c", "10", "10.0.0.3")} {
		_ = store.Update(s)
	}
	_ = store.Delete(svc("b", "8", ""))
	if len(o.written) != 0 {
		t.Errorf("%d writes kept after the watch showed them all", len(o.written))
	}
	check("shown", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})
	if total() != written {
		t.Error("Total changed by the watch showing the controller's writes")
	}

	// Another's write of an object of the controller changes it.
	_ = store.Update(svc("c", "11", "10.0.0.3"))
	if total() == written {
		t.Error("Total unchanged by another's write")
	}

	// A write the watch shows before the writer is told of it, a
	// creation or a deletion, is not kept: it would stand in for the
	// store's object until writtenTTL, read at every write.
	_ = store.Add(svc("e", "12", ""))
	o.seen(kindServices, "shop", "e", svc("e", "12", ""))
	_ = store.Delete(svc("c", "11", ""))
	o.seen(kindServices, "shop", "c", nil)
	if len(o.written) != 0 {
		t.Errorf("%d writes kept that the watch had shown already", len(o.written))
	}
	check("shown first", map[string]string{"a": "9/10.0.0.1", "e": "12/"})
}

// informerStore is a Store whose changes reach the ownWatch as an
// informer's handler passes them on: held counted, writes shown.
type informerStore struct {
	cache.Store
	o     *ownWatch
	store int
}

func (s *informerStore) Add(obj any) error { return s.Update(obj) }

func (s *informerStore) Update(obj any) error {
	old, exists, _ := s.Get(obj)
	if err := s.Store.Update(obj); err != nil {
		return err
	}
	if !exists {
		old = nil
	}
	s.o.count(s.store, old, obj)
	s.o.shown(s.store, obj, false)
	return nil
}

func (s *informerStore) Delete(obj any) error {
	if err := s.Store.Delete(obj); err != nil {
		return err
	}
	s.o.count(s.store, obj, nil)
	s.o.shown(s.store, obj, true)
	return nil
}

// ours are the labels of the controller's object of the import name.
func ours(name string) map[string]string {
	return map[string]string{objects.LabelManagedBy: objects.ManagedByValue, objects.LabelServiceName: name}
}

// What the member's API server sends a watch on the controller's objects
// is checked against the watch's selector again: an object without the
// controller's labels is never read as one of its own, so no write
// deletes it.
func TestOwnReadsOnlyWhatItsSelectorSelects(t *testing.T) {
	o := newOwnWatch(mcsKinds())
	store := &informerStore{o: o, store: kindServices, Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	o.stores[kindServices] = &objectWatch{store: store}
	_ = store.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "derived", Labels: ours("web")}})
	_ = store.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "users", Labels: map[string]string{"app": "web"}}})
	// One that was the controller's and is no longer.
	_ = store.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "taken", Labels: ours("db")}})
	_ = store.Update(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "taken", Labels: map[string]string{"app": "db"}}})
	if d := o.digest(nil)(aggregate.Key{Namespace: "shop", Name: "db"}); d != 0 {
		t.Errorf("an object that is no longer the controller's still counts in its import's digest (%d)", d)
	}
	var got []string
	for _, s := range list[*corev1.Service](o, kindServices, nil) {
		got = append(got, s.Name)
	}
	if len(got) != 1 || got[0] != "derived" {
		t.Errorf("read %v as the controller's Services; want only derived", got)
	}
}
