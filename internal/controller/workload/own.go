package workload

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	informer "github.com/xcc-dns/xcc-dns/internal/watch"
)

// writtenTTL is how long a write of the controller is preferred to what
// the member's watch says of that object when the watch has not shown it
// yet: far longer than a watch lags, short enough that an object whose
// event never came (a watch that restarted) is read from the store again.
const writtenTTL = time.Minute

// ownStore is one of the informers on the controller's own objects in a
// member; the index into ownWatch.stores.
type ownStore int

const (
	ownImports ownStore = iota
	ownServices
	ownSlices   // imported EndpointSlices, beside the exported Services
	ownContract // KindClusterSet contract slices in the slice namespace
	ownStores
)

// ownWatch is the controller's own objects in a clusterset member, by
// label, one informer per kind: ServiceImports, derived Services,
// imported EndpointSlices and contract slices. A write plans from them
// instead of listing the member, and what it wrote (Seen) is kept beside
// them until the watch shows it, so the next write, a moment later,
// plans from what the member holds and not from a lagging watch.
type ownWatch struct {
	stores [ownStores]*objectWatch
	// selectors are the stores' label selectors, checked again on every
	// object read: the member's API server is the tenant's and may send
	// a watch anything, and what is read here is what a write may delete.
	selectors [ownStores]labels.Selector
	mu        sync.Mutex
	// written are the writes the watch has not shown yet; obj nil for a
	// deletion.
	written map[ownKey]writtenObject
	// mine are, per store, the objects that match its selector, and
	// held, per import, the sum of apply.HeldDigest over those of the
	// ServiceImport, Service and slice stores: both kept as the events
	// come. A write reads every import of the member, and checking the
	// labels of thousands of objects and hashing them at every write was
	// the larger part of its cost.
	mine [ownStores]map[objectName]metav1.Object
	held map[aggregate.Key]uint64
}

// objectName is a namespaced object's name.
type objectName struct{ namespace, name string }

type ownKey struct {
	store           ownStore
	namespace, name string
}

type writtenObject struct {
	obj metav1.Object
	rv  string
	at  time.Time
}

// newOwnWatch is an ownWatch without informers yet.
func newOwnWatch() *ownWatch {
	o := &ownWatch{written: map[ownKey]writtenObject{}, held: map[aggregate.Key]uint64{}}
	for i := range o.mine {
		o.mine[i] = map[objectName]metav1.Object{}
	}
	for i := range o.selectors {
		s := apply.OursSelector()
		if ownStore(i) == ownContract {
			s = contract.ClusterSetSelector()
		}
		o.selectors[i], _ = labels.Parse(s) // both are built valid
	}
	return o
}

// watchOwn starts the informers of ownWatch for a member whose slice
// namespace is sliceNamespace, in ctx; onSynced is called as each lists.
func watchOwn(ctx context.Context, w *Cluster, mcs MCSClient, sliceNamespace string, onSynced func()) *ownWatch {
	o := newOwnWatch()
	ours := apply.OursSelector()
	sel := func(s string) func(metav1.ListOptions) metav1.ListOptions {
		return func(opts metav1.ListOptions) metav1.ListOptions { opts.LabelSelector = s; return opts }
	}
	imports := mcs.MulticlusterV1beta1().ServiceImports(metav1.NamespaceAll)
	services := w.client.CoreV1().Services(metav1.NamespaceAll)
	slices := w.client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll)
	contractSlices := w.client.DiscoveryV1().EndpointSlices(sliceNamespace)
	o.stores[ownImports] = o.informer(w.reads, ownImports, "the controller's ServiceImports", &mcsv1beta1.ServiceImport{},
		sel(ours), lister(imports.List), imports.Watch)
	o.stores[ownServices] = o.informer(w.reads, ownServices, "the controller's derived Services", &corev1.Service{},
		sel(ours), lister(services.List), services.Watch)
	o.stores[ownSlices] = o.informer(w.reads, ownSlices, "the controller's imported EndpointSlices", &discoveryv1.EndpointSlice{},
		sel(ours), lister(slices.List), slices.Watch)
	o.stores[ownContract] = o.informer(w.reads, ownContract, "the controller's clusterset slices", &discoveryv1.EndpointSlice{},
		sel(contract.ClusterSetSelector()), lister(contractSlices.List), contractSlices.Watch)
	for _, s := range o.stores {
		s.run(ctx, onSynced)
	}
	return o
}

// lister is a typed List as an informer calls it.
func lister[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return list(ctx, opts) }
}

// informer is one store of o; its events retire the writes they show.
func (o *ownWatch) informer(r *reads, store ownStore, what string, obj runtime.Object, sel func(metav1.ListOptions) metav1.ListOptions,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *objectWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, sel(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return watchFn(ctx, sel(opts))
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

// ours returns obj as the controller's object of store: an object of
// the store's selector, nil for any other.
func (o *ownWatch) ours(store ownStore, obj any) metav1.Object {
	m := informer.Meta(obj)
	if m == nil || !o.selectors[store].Matches(labels.Set(m.GetLabels())) {
		return nil
	}
	return m
}

// count keeps mine and held as the store's object old (nil: none)
// becomes cur (nil: deleted). The informer calls it in the order its
// store changes.
func (o *ownWatch) count(store ownStore, old, cur any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m := o.ours(store, old); m != nil {
		delete(o.mine[store], objectName{m.GetNamespace(), m.GetName()})
		if k, d, ok := o.digestOf(store, m); ok {
			o.held[k] -= d
			if o.held[k] == 0 {
				delete(o.held, k)
			}
		}
	}
	if m := o.ours(store, cur); m != nil {
		o.mine[store][objectName{m.GetNamespace(), m.GetName()}] = m
		if k, d, ok := o.digestOf(store, m); ok {
			o.held[k] += d
		}
	}
}

// digestOf is apply.HeldDigest of m, an object of store; the contract
// slices are no import's.
func (o *ownWatch) digestOf(store ownStore, m metav1.Object) (aggregate.Key, uint64, bool) {
	if store == ownContract {
		return aggregate.Key{}, 0, false
	}
	return apply.HeldDigest(m)
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
func (o *ownWatch) shown(store ownStore, obj any, deleted bool) {
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

// seen keeps a write of the controller (apply.Seen) until the watch
// shows it. A slice goes to the contract store when it is one.
func (o *ownWatch) seen(kind apply.Kind, namespace, name string, obj metav1.Object) {
	var stores []ownStore
	switch kind {
	case apply.KindImport:
		stores = []ownStore{ownImports}
	case apply.KindService:
		stores = []ownStore{ownServices}
	case apply.KindSlice:
		switch {
		case obj == nil:
			stores = []ownStore{ownSlices, ownContract}
		case obj.GetLabels()[contract.LabelRecord] == string(contract.KindClusterSet):
			stores = []ownStore{ownContract}
		default:
			stores = []ownStore{ownSlices}
		}
	}
	w := writtenObject{obj: obj, at: time.Now()}
	if obj != nil {
		w.rv = obj.GetResourceVersion()
		// Kept as the informer would keep it: the API server's answer
		// carries the managed fields, the larger part of it.
		_, _ = ownForCache(obj)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range stores {
		o.written[ownKey{store: s, namespace: namespace, name: name}] = w
	}
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
func list[T metav1.Object](o *ownWatch, store ownStore, pending map[ownKey]writtenObject) []T {
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

// digest returns the apply.Existing.Digest of the lists read with
// pending: held, with each pending write in place of what the store
// holds at its key. A write the watch shows after pending was read is
// counted twice, so its import is planned once more than it needs, never
// less.
func (o *ownWatch) digest(pending map[ownKey]writtenObject) func(aggregate.Key) uint64 {
	adjust := map[aggregate.Key]uint64{}
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
	return func(k aggregate.Key) uint64 {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.held[k] + adjust[k]
	}
}

// Own returns the controller's own objects in member w as its informers
// hold them with the writes they have not shown yet (Seen): the
// ServiceImports, derived Services and imported slices (Existing
// without Exports) and the clusterset contract slices. ok is false until
// they have listed (or when they are cut off): the caller lists then.
// Read only: the objects are shared.
func (m *Set) Own(w *Cluster) (existing apply.Existing, contractSlices []*discoveryv1.EndpointSlice, ok bool) {
	m.mu.Lock()
	var o *ownWatch
	if w.exports != nil {
		o = w.exports.own
	}
	m.mu.Unlock()
	if o == nil || !o.synced() {
		return existing, nil, false
	}
	pending := o.pending()
	existing.Imports = list[*mcsv1beta1.ServiceImport](o, ownImports, pending)
	existing.Services = list[*corev1.Service](o, ownServices, pending)
	existing.Slices = list[*discoveryv1.EndpointSlice](o, ownSlices, pending)
	existing.Digest = o.digest(pending)
	return existing, list[*discoveryv1.EndpointSlice](o, ownContract, pending), true
}

// Seen is the apply.Seen of member w: its writes are kept beside its
// informers until they show them. A no-op while w has none.
func (m *Set) Seen(w *Cluster) apply.Seen {
	m.mu.Lock()
	var o *ownWatch
	if w.exports != nil {
		o = w.exports.own
	}
	m.mu.Unlock()
	if o == nil {
		return func(apply.Kind, string, string, metav1.Object) {}
	}
	return o.seen
}
