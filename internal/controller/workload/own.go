package workload

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/owned"
	informer "github.com/xcc-dns/xcc-dns/internal/watch"
)

// writtenTTL is how long a write of the controller is preferred to what
// the member's watch says of that object when the watch has not shown it
// yet: far longer than a watch lags, short enough that an object whose
// event never came (a watch that restarted) is read from the store again.
const writtenTTL = time.Minute

// OwnKind is one kind of the objects a writer keeps of its own in each
// clusterset member (Config.Own): watched by its label selector, with
// the writes the watch has not shown yet (Seen) in their place, and a
// digest per group kept as the events come, so a write plans from them
// instead of listing and hashing the member's objects. The kinds are the
// writer's to say; this package knows none of them.
type OwnKind struct {
	// What names the kind in logs and errors.
	What string
	// Object is an empty object of the kind, the informer's type.
	Object runtime.Object
	// Selector selects the writer's objects of the kind. It is checked
	// again on every object read: the member's API server is the
	// tenant's and may send a watch anything, and what is read here is
	// what a write may delete.
	Selector string
	// ListWatch is the kind's list and watch in a member whose slice
	// namespace is sliceNamespace.
	ListWatch func(kube Client, mcs MCSClient, sliceNamespace string) ListWatch
	// Digest is the group an object of the kind counts in and its
	// digest; ok false: it counts in none.
	Digest func(metav1.Object) (group any, digest uint64, ok bool)
}

// ListWatch is the list and watch of one kind.
type ListWatch struct {
	List  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	Watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// Owned is what Own reads of a member: its lists are read with OwnList.
type Owned struct {
	o       *ownWatch
	pending map[ownKey]writtenObject
	// Digest is the sum of the digests of a group's objects in the
	// lists.
	Digest func(group any) uint64
	// Total changes whenever any object of the lists does (its UID or
	// resourceVersion, or it comes or goes), and only then: a write
	// compares it to the one it left to know that nobody wrote since.
	Total uint64
}

// Kinds is how many kinds the lists are of (Config.Own).
func (o Owned) Kinds() int { return len(o.o.kinds) }

// OwnList returns the writer's objects of kind (an index of Config.Own)
// of type T as the member holds them, its writes not shown yet in their
// place. Read only: the objects are shared.
func OwnList[T metav1.Object](owned Owned, kind int) []T {
	return list[T](owned.o, kind, owned.pending)
}

// ownWatch is the writer's own objects in a clusterset member, one
// informer per kind of Config.Own. What it wrote (Seen) is kept beside
// them until the watch shows it, so the next write, a moment later,
// plans from what the member holds and not from a lagging watch.
type ownWatch struct {
	kinds     []OwnKind
	stores    []*objectWatch
	selectors []labels.Selector
	mu        sync.Mutex
	// written are the writes the watch has not shown yet; obj nil for a
	// deletion.
	written map[ownKey]writtenObject
	// mine are, per store, the objects that match its selector, and
	// held, per group, the sum of the digests of those objects: both
	// kept as the events come. A write reads every group of the member,
	// and checking the labels of thousands of objects and hashing them at
	// every write was the larger part of its cost.
	mine []map[objectName]metav1.Object
	held map[any]uint64
	// total is the sum of objectDigest over mine, kept as the events
	// come (Owned.Total).
	total uint64
}

// objectName is a namespaced object's name.
type objectName struct{ namespace, name string }

type ownKey struct {
	store           int
	namespace, name string
}

type writtenObject struct {
	obj metav1.Object
	rv  string
	at  time.Time
}

// newOwnWatch is an ownWatch of kinds without informers yet.
func newOwnWatch(kinds []OwnKind) *ownWatch {
	o := &ownWatch{kinds: kinds, stores: make([]*objectWatch, len(kinds)), selectors: make([]labels.Selector, len(kinds)),
		written: map[ownKey]writtenObject{}, mine: make([]map[objectName]metav1.Object, len(kinds)), held: map[any]uint64{}}
	for i, k := range kinds {
		o.mine[i] = map[objectName]metav1.Object{}
		sel, err := labels.Parse(k.Selector)
		if err != nil {
			// A kind's selector is the writer's constant: a bad one
			// selects nothing rather than everything.
			sel = labels.Nothing()
		}
		o.selectors[i] = sel
	}
	return o
}

// watchOwn starts the informers of an ownWatch of kinds for a member
// whose slice namespace is sliceNamespace, in ctx; onSynced is called as
// each lists.
func watchOwn(ctx context.Context, w *Cluster, mcs MCSClient, sliceNamespace string, kinds []OwnKind, onSynced func()) *ownWatch {
	o := newOwnWatch(kinds)
	for i, k := range kinds {
		lw := k.ListWatch(w.client, mcs, sliceNamespace)
		o.stores[i] = o.informer(w.reads, i, k.What, k.Object, k.Selector, lw)
	}
	for _, s := range o.stores {
		s.run(ctx, onSynced)
	}
	return o
}

// Lister is a typed List as an informer calls it (ListWatch.List).
func Lister[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return list(ctx, opts) }
}

// informer is one store of o, its list and watch restricted to selector;
// its events retire the writes they show.
func (o *ownWatch) informer(r *reads, store int, what string, obj runtime.Object, selector string, kind ListWatch) *objectWatch {
	sel := func(opts metav1.ListOptions) metav1.ListOptions { opts.LabelSelector = selector; return opts }
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kind.List(ctx, sel(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return kind.Watch(ctx, sel(opts))
		},
	}
	return newInformer(r, what, lw, cache.InformerOptions{
		ObjectType: obj,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				o.count(store, nil, obj)
				o.shown(store, obj, false)
			},
			UpdateFunc: func(old, obj any) {
				o.count(store, old, obj)
				o.shown(store, obj, false)
			},
			DeleteFunc: func(obj any) {
				o.count(store, obj, nil)
				o.shown(store, obj, true)
			},
		},
		Transform: ownForCache,
	})
}

// ours returns obj as the writer's object of store: an object of the
// store's selector, nil for any other.
func (o *ownWatch) ours(store int, obj any) metav1.Object {
	m := informer.Meta(obj)
	if m == nil || !o.selectors[store].Matches(labels.Set(m.GetLabels())) {
		return nil
	}
	return m
}

// count keeps mine and held as the store's object old (nil: none)
// becomes cur (nil: deleted). The informer calls it in the order its
// store changes.
func (o *ownWatch) count(store int, old, cur any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m := o.ours(store, old); m != nil {
		delete(o.mine[store], objectName{m.GetNamespace(), m.GetName()})
		o.total -= objectDigest(store, m)
		if k, d, ok := o.digestOf(store, m); ok {
			o.held[k] -= d
			if o.held[k] == 0 {
				delete(o.held, k)
			}
		}
	}
	if m := o.ours(store, cur); m != nil {
		o.mine[store][objectName{m.GetNamespace(), m.GetName()}] = m
		o.total += objectDigest(store, m)
		if k, d, ok := o.digestOf(store, m); ok {
			o.held[k] += d
		}
	}
}

// objectDigest is a digest of m, an object of store, that any write of
// it changes (owned.VersionDigest).
func objectDigest(store int, m metav1.Object) uint64 { return owned.VersionDigest(byte(store), m) }

// totalWith is Owned.Total of the lists read with pending: total, with
// each pending write in place of what the store holds at its key. The
// watch showing a write changes neither: the write's object and the
// one it shows have the same resourceVersion.
func (o *ownWatch) totalWith(pending map[ownKey]writtenObject) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.total
	for k, w := range pending {
		if m, ok := o.mine[k.store][objectName{k.namespace, k.name}]; ok {
			t -= objectDigest(k.store, m)
		}
		if w.obj != nil {
			t += objectDigest(k.store, w.obj)
		}
	}
	return t
}

// digestOf is the store kind's Digest of m.
func (o *ownWatch) digestOf(store int, m metav1.Object) (any, uint64, bool) {
	if o.kinds[store].Digest == nil {
		return nil, 0, false
	}
	return o.kinds[store].Digest(m)
}

// ownForCache drops the managed fields, the largest part of an object
// the controller reads back and never uses, and interns the strings its
// objects repeat (internMeta). Nothing else is cut: a write of the
// controller starts from the cached object and sends it whole.
func ownForCache(obj any) (any, error) {
	if o, ok := obj.(metav1.ObjectMetaAccessor); ok {
		m := o.GetObjectMeta()
		m.SetManagedFields(nil)
		if meta, ok := m.(*metav1.ObjectMeta); ok {
			internMeta(meta)
		}
	}
	return obj, nil
}

// shown retires the write of obj's key that the watch now shows: a
// deletion once the watch deletes it, an object once the watch has its
// resourceVersion or a newer one (or one that cannot be compared).
func (o *ownWatch) shown(store int, obj any, deleted bool) {
	m := informer.Meta(obj)
	if m == nil {
		return
	}
	k := ownKey{store: store, namespace: m.GetNamespace(), name: m.GetName()}
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.written[k]
	if !ok {
		return
	}
	if w.obj == nil {
		if deleted {
			o.retire(k)
		}
		return
	}
	if c, err := resourceversion.CompareResourceVersion(m.GetResourceVersion(), w.rv); err != nil || c >= 0 {
		o.retire(k)
	}
}

// retire forgets the write of k; o.mu is held.
func (o *ownWatch) retire(k ownKey) {
	delete(o.written, k)
	if len(o.written) == 0 {
		// A map keeps the room it grew to: a fill's thousands of writes
		// on the way would stay allocated for good.
		o.written = map[ownKey]writtenObject{}
	}
}

// seen keeps a write of the writer into store until the watch shows it.
// A watch may show a write before the writer is told of it: a write the
// store holds already (its resourceVersion or a newer one; a deletion of
// an object it does not hold) is not kept, else it would stand in for
// the store's object until writtenTTL, and every write of the member
// would read it over and again (at 1,000 imports, a few hundred of them).
func (o *ownWatch) seen(store int, namespace, name string, obj metav1.Object) {
	w := writtenObject{obj: obj, at: time.Now()}
	if obj != nil {
		w.rv = obj.GetResourceVersion()
		// Kept as the informer would keep it: the API server's answer
		// carries the managed fields, the larger part of it.
		_, _ = ownForCache(obj)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	held, ok := o.mine[store][objectName{namespace, name}]
	switch {
	case obj == nil && !ok:
		return
	case obj != nil && ok && held.GetUID() == obj.GetUID():
		if c, err := resourceversion.CompareResourceVersion(held.GetResourceVersion(), w.rv); err == nil && c >= 0 {
			return
		}
	}
	o.written[ownKey{store: store, namespace: namespace, name: name}] = w
}

// synced reports whether every store has listed and none is cut off.
func (o *ownWatch) synced() bool {
	for _, s := range o.stores {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}

// cut reports whether a store was cut off.
func (o *ownWatch) cut() bool {
	for _, s := range o.stores {
		if s.cut() {
			return true
		}
	}
	return false
}

// pending returns the writes the watch has not shown yet, forgetting
// those older than writtenTTL.
func (o *ownWatch) pending() map[ownKey]writtenObject {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[ownKey]writtenObject, len(o.written))
	for k, w := range o.written {
		if now.Sub(w.at) > writtenTTL {
			o.retire(k)
			continue
		}
		out[k] = w
	}
	return out
}

// list returns the objects of store as the member holds them: the
// store's, with the controller's writes the watch has not shown yet
// (pending) in their place. The objects are shared: read only.
func list[T metav1.Object](o *ownWatch, store int, pending map[ownKey]writtenObject) []T {
	// The store's objects a pending write stands in for, by pointer: a
	// few, where the objects are thousands; nil (none) reads as empty.
	var replaced map[metav1.Object]bool
	o.mu.Lock()
	for k := range pending {
		if k.store != store {
			continue
		}
		if m, ok := o.mine[store][objectName{k.namespace, k.name}]; ok {
			if replaced == nil {
				replaced = map[metav1.Object]bool{}
			}
			replaced[m] = true
		}
	}
	out := make([]T, 0, len(o.mine[store]))
	for _, obj := range o.mine[store] {
		if m, ok := obj.(T); ok && !replaced[obj] {
			out = append(out, m)
		}
	}
	o.mu.Unlock()
	for k, w := range pending {
		// A pending deletion (obj nil) is no T: left out.
		if m, ok := w.obj.(T); ok && k.store == store {
			out = append(out, m)
		}
	}
	return out
}

// digest returns the Owned.Digest of the lists read with pending: held, with each pending write in place of what the store
// holds at its key. A write the watch shows after pending was read is
// counted twice, so its import is planned once more than it needs, never
// less.
func (o *ownWatch) digest(pending map[ownKey]writtenObject) func(any) uint64 {
	adjust := map[any]uint64{}
	o.mu.Lock()
	for k, w := range pending {
		if m, ok := o.mine[k.store][objectName{k.namespace, k.name}]; ok {
			if ik, d, ok := o.digestOf(k.store, m); ok {
				adjust[ik] -= d
			}
		}
		if w.obj != nil {
			if ik, d, ok := o.digestOf(k.store, w.obj); ok {
				adjust[ik] += d
			}
		}
	}
	o.mu.Unlock()
	return func(k any) uint64 {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.held[k] + adjust[k]
	}
}

// Own returns the writer's own objects in member w (Config.Own) as its
// informers hold them, with the writes they have not shown yet (Seen).
// ok is false until they have listed (or when they are cut off, or no
// kinds are configured): the caller lists then.
func (m *Set) Own(w *Cluster) (owned Owned, ok bool) {
	o := m.ownOf(w)
	if o == nil || len(o.kinds) == 0 || !o.synced() {
		return owned, false
	}
	pending := o.pending()
	return Owned{o: o, pending: pending, Digest: o.digest(pending), Total: o.totalWith(pending)}, true
}

// Seen returns what keeps a write into member w beside its informers
// until they show it: an object of the kind store (an index of
// Config.Own) as the member returned it, nil for one deleted. A no-op
// while w has none.
func (m *Set) Seen(w *Cluster) func(store int, namespace, name string, obj metav1.Object) {
	o := m.ownOf(w)
	if o == nil {
		return func(int, string, string, metav1.Object) {}
	}
	return o.seen
}

// ownOf is the ownWatch of w, nil while it has none.
func (m *Set) ownOf(w *Cluster) *ownWatch {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.exports == nil {
		return nil
	}
	return w.exports.own
}
