package workload

import (
	"context"
	"maps"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// namespaceSlices is the one EndpointSlice informer of a namespace of a
// clusterset member in which an admitted export's Service lives. One
// informer per namespace, not per export: 1,000 exports in ten namespaces
// are ten watches, and an export added in a watched namespace is read
// from the cache at once, with no list of its own.
type namespaceSlices struct {
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
// informer per namespace of them, started here (again after a cut-off,
// once the cluster is no longer cut off) and stopped once no user's key
// is in its namespace. Call it after WatchExports; reading is
// ExportEndpoints.
func (m *Set) WatchExportEndpoints(w *Cluster, user string, keys map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ew := w.exports
	if ew == nil {
		return
	}
	ew.wanted[user] = keys
	m.syncNamespaceSlicesLocked(w, ew)
}

// syncNamespaceSlicesLocked starts the informers of the namespaces some
// user wants and stops the others. m.mu is held.
func (m *Set) syncNamespaceSlicesLocked(w *Cluster, ew *exportsWatch) {
	want := map[string]bool{}
	for _, keys := range ew.wanted {
		for k := range keys {
			ns, _, _ := strings.Cut(k, "/")
			want[ns] = true
		}
	}
	for ns, s := range ew.slices {
		if !want[ns] || s.informer.cut() {
			s.cancel()
			delete(ew.slices, ns)
		}
	}
	if w.reads.cut() != "" {
		return
	}
	for ns := range want {
		if ew.slices[ns] == nil {
			ew.slices[ns] = m.watchNamespaceSlices(w, ew, ns)
		}
	}
}

// watchNamespaceSlices starts the informer of namespace's slices. Of its
// events only those of a wanted Service are passed on, and of updates
// only those that change what is cached (endpointsChanged): the pods of
// Services nobody exports come and go without a sync.
func (m *Set) watchNamespaceSlices(w *Cluster, ew *exportsWatch, namespace string) *namespaceSlices {
	ctx, cancel := context.WithCancel(ew.ctx)
	lw := sliceListWatch(w.client, namespace, exportSliceSelector())
	notify := func() { m.onMember(w.key, m.exportsUsersOf(ew)) }
	onSlice := func(obj any) {
		if m.wantsSlice(ew, obj) {
			notify()
		}
	}
	informer := newInformer(w.reads, "EndpointSlices of namespace "+namespace, lw, cache.InformerOptions{
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
	klog.FromContext(m.ctx).V(2).Info("Watching the EndpointSlices of an exporting namespace", "cluster", w.key, "namespace", namespace)
	return &namespaceSlices{informer: informer, cancel: cancel}
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
// synced is false until its namespace's informer, started by
// WatchExportEndpoints, has listed.
func (m *Set) ExportEndpoints(w *Cluster, namespace, name string) (out []*discoveryv1.EndpointSlice, synced bool) {
	m.mu.Lock()
	var s *namespaceSlices
	if ew := w.exports; ew != nil {
		s = ew.slices[namespace]
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

// ExportReads counts, over every cluster, the namespaces whose slices
// are watched for exports and the exports read from them.
func (m *Set) ExportReads() (namespaces, exports int) {
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
		namespaces += len(ew.slices)
		exports += len(all)
	}
	return namespaces, exports
}
