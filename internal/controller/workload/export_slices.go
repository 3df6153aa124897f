package workload

import (
	"context"
	"maps"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// exportSlices is the one EndpointSlice informer of a clusterset member
// for the endpoints of its admitted exports: cluster-wide, selected on
// the server by exportSliceSelector. One watch per member, not one per
// exporting namespace: 1,000 exporting namespaces were 1,000 watches and
// 4,000 goroutines that no budget of the member counted. An export
// admitted later is read from the cache at once, with no list of its
// own. It caches every Service's slices of the member (trimmed by
// endpointsForCache), all counted in the member's objects and bytes.
type exportSlices struct {
	informer *objectWatch
	cancel   context.CancelFunc
}

// exportSliceSelector selects the EndpointSlices of Services and leaves
// out those this controller wrote (imported endpoints carry the same
// service-name label): the member's own endpoints only.
func exportSliceSelector() string {
	named, _ := labels.NewRequirement(discoveryv1.LabelServiceName, selection.Exists, nil)
	notOurs, _ := labels.NewRequirement(contract.LabelManagedBy, selection.NotEquals, []string{contract.ManagedByValue})
	return labels.NewSelector().Add(*named, *notOurs).String()
}

// WatchExportEndpoints makes the EndpointSlices of the Services of keys
// ("<namespace>/<name>", the exports of user admitted in w) read: one
// informer of the member's slices, started here once some user has a
// key (again after a cut-off, once the cluster is no longer cut off) and
// stopped once none has. Call it after WatchExports; reading is
// ExportEndpoints.
func (m *Set) WatchExportEndpoints(w *Cluster, user string, keys map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ew := w.exports
	if ew == nil {
		return
	}
	ew.wanted[user] = keys
	m.syncExportSlicesLocked(w, ew)
}

// syncExportSlicesLocked starts the slice informer while some user wants
// a key and stops it when none does, or it was cut off. m.mu is held.
func (m *Set) syncExportSlicesLocked(w *Cluster, ew *exportsWatch) {
	wanted := false
	for _, keys := range ew.wanted {
		wanted = wanted || len(keys) > 0
	}
	if s := ew.slices; s != nil && (!wanted || s.informer.cut()) {
		s.cancel()
		ew.slices = nil
	}
	if wanted && ew.slices == nil && w.reads.cut() == "" {
		ew.slices = m.watchExportSlices(w, ew)
	}
}

// watchExportSlices starts the informer of the member's slices. Of its
// events only those of a wanted Service are passed on, and of updates
// only those that change what is cached (endpointsChanged): the pods of
// Services nobody exports come and go without a sync.
func (m *Set) watchExportSlices(w *Cluster, ew *exportsWatch) *exportSlices {
	ctx, cancel := context.WithCancel(ew.ctx)
	lw := sliceListWatch(w.client, metav1.NamespaceAll, exportSliceSelector())
	notify := func() { m.onMember(w.key, m.exportsUsersOf(ew)) }
	onSlice := func(obj any) {
		if m.wantsSlice(ew, obj) {
			notify()
		}
	}
	informer := newInformer(w.reads, "EndpointSlices of exported Services", lw, cache.InformerOptions{
		ObjectType: &discoveryv1.EndpointSlice{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: onSlice,
			UpdateFunc: func(old, cur any) {
				if endpointsChanged(old, cur, true) {
					onSlice(cur)
				}
			},
			DeleteFunc: onSlice,
		},
		Transform: endpointsForCache,
		Indexers:  cache.Indexers{byService: indexByService},
	})
	informer.run(ctx, notify)
	klog.FromContext(m.ctx).V(2).Info("Watching the EndpointSlices of exported Services", "cluster", w.key)
	return &exportSlices{informer: informer, cancel: cancel}
}

// wantsSlice reports whether obj, a slice or its tombstone, is of a
// Service some user of ew reads.
func (m *Set) wantsSlice(ew *exportsWatch, obj any) bool {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	ns, name, ok := sliceService(obj)
	if !ok {
		return false
	}
	key := ns + "/" + name
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, keys := range ew.wanted {
		if keys[key] {
			return true
		}
	}
	return false
}

// ExportEndpoints returns the cached EndpointSlices of the exported
// Service namespace/name of w (read only: they are the informer's);
// synced is false until the member's slice informer, started by
// WatchExportEndpoints, has listed.
func (m *Set) ExportEndpoints(w *Cluster, namespace, name string) (out []*discoveryv1.EndpointSlice, synced bool) {
	m.mu.Lock()
	var s *exportSlices
	if ew := w.exports; ew != nil {
		s = ew.slices
	}
	m.mu.Unlock()
	if s == nil || !s.informer.HasSynced() {
		return nil, false
	}
	objs, _ := s.informer.store.(cache.Indexer).ByIndex(byService, namespace+"/"+name)
	for _, o := range objs {
		// A server that ignores the selector still never has the
		// controller's own slices read back as the Service's.
		if sl, ok := o.(*discoveryv1.EndpointSlice); ok && sl.Labels[contract.LabelManagedBy] != contract.ManagedByValue {
			out = append(out, sl)
		}
	}
	return out, true
}

// ExportReads counts, over every cluster, the slice informers of exports
// (one per member at most) and the exports read from them.
func (m *Set) ExportReads() (informers, exports int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.clusters {
		ew := w.exports
		if ew == nil {
			continue
		}
		all := map[string]bool{}
		for _, keys := range ew.wanted {
			maps.Copy(all, keys)
		}
		if ew.slices != nil {
			informers++
		}
		exports += len(all)
	}
	return informers, exports
}
