package clusterset

import (
	"context"
	"slices"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// memberMemo is what the writes of one member keep from one to the next,
// so that a change costs the imports it touches: the digest of each
// import's objects and what from (objects.Memo), the imports settled
// since the last write (apply.Settled; neither built nor planned), and
// the contract slices built per import (dnsMemo).
type memberMemo struct {
	objects *objects.Memo
	settled *apply.Settled
	dns     *dnsMemo
	exports *exportsWritten
}

func newMemberMemo() *memberMemo {
	return &memberMemo{objects: objects.NewMemo(), settled: apply.NewSettled(), dns: newDNSMemo(),
		exports: &exportsWritten{byKey: map[types.NamespacedName]*mcsv1beta1.ServiceExport{}}}
}

// exportsWritten keeps the member's ServiceExports as the writes of their
// status left them, until the export informer shows that version or a
// newer one. A write planned from the informer's older copy would carry
// its resourceVersion and be refused (a conflict), and a refused write
// makes the member's imports all planned, and Pending, again.
type exportsWritten struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]*mcsv1beta1.ServiceExport
}

// client returns m with each accepted status write of an export kept.
func (w *exportsWritten) client(m apply.Member) apply.Member {
	exports := m.Exports
	m.Exports = func(ns string) apply.ExportClient { return recordedExports{ExportClient: exports(ns), w: w} }
	return m
}

type recordedExports struct {
	apply.ExportClient
	w *exportsWritten
}

func (r recordedExports) UpdateStatus(ctx context.Context, e *mcsv1beta1.ServiceExport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceExport, error) {
	got, err := r.ExportClient.UpdateStatus(ctx, e, opts)
	if err == nil && got != nil {
		r.w.mu.Lock()
		r.w.byKey[types.NamespacedName{Namespace: got.Namespace, Name: got.Name}] = got
		r.w.mu.Unlock()
	}
	return got, err
}

// over returns cached, the informer's exports, with each one written
// since and not yet shown there in its place; those the informer has
// caught up with, or that are gone, are forgotten.
func (w *exportsWritten) over(cached []*mcsv1beta1.ServiceExport) []*mcsv1beta1.ServiceExport {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.byKey) == 0 {
		return cached
	}
	out := make([]*mcsv1beta1.ServiceExport, len(cached))
	seen := make(map[types.NamespacedName]bool, len(w.byKey))
	for i, e := range cached {
		out[i] = e
		k := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
		written, ok := w.byKey[k]
		if !ok {
			continue
		}
		seen[k] = true
		c, err := resourceversion.CompareResourceVersion(e.ResourceVersion, written.ResourceVersion)
		if written.UID != e.UID || err != nil || c >= 0 {
			delete(w.byKey, k)
			continue
		}
		out[i] = written
	}
	for k := range w.byKey {
		if !seen[k] {
			delete(w.byKey, k) // deleted, or no longer read
		}
	}
	return out
}

// dnsMemo keeps the clusterset contract slices built for each import of
// a member and what from, and which desired and held slices were last
// found the same, so neither is built nor compared again while they stay
// the very same objects. Only the member's lane uses it, one write at a
// time.
type dnsMemo struct {
	imports map[aggregate.Key]*dnsBuilt
	// same are, by slice name, a desired slice and the held one found
	// equal to it.
	same map[string][2]*discoveryv1.EndpointSlice
}

// dnsBuilt is the contract slices of one import and what they were built
// from: the import, and its sources' slices (Headless) or the member's
// ClusterSetIPs.
type dnsBuilt struct {
	imp       aggregate.Import
	endpoints map[string][]*discoveryv1.EndpointSlice
	ips       []string
	slices    []*discoveryv1.EndpointSlice
}

func newDNSMemo() *dnsMemo {
	return &dnsMemo{imports: map[aggregate.Key]*dnsBuilt{}, same: map[string][2]*discoveryv1.EndpointSlice{}}
}

// slicesOf returns the contract slices of imp, built by build unless
// they were built from the same inputs last time; next collects those
// kept for the next write. m may be nil (nothing kept).
func (m *dnsMemo) slicesOf(next map[aggregate.Key]*dnsBuilt, imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice,
	ips []string, build func() []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	if m == nil {
		return build()
	}
	if b := m.imports[imp.Key]; b != nil && slices.Equal(b.ips, ips) && b.imp.Equal(imp) && objects.SameEndpoints(b.endpoints, endpoints, imp.Clusters) {
		next[imp.Key] = b
		return b.slices
	}
	b := &dnsBuilt{imp: imp, ips: slices.Clone(ips), endpoints: map[string][]*discoveryv1.EndpointSlice{}, slices: build()}
	for _, c := range imp.Clusters {
		b.endpoints[c] = slices.Clone(endpoints[c])
	}
	next[imp.Key] = b
	return b.slices
}

// knownSame reports whether want and have were found the same last time.
func (m *dnsMemo) knownSame(want, have *discoveryv1.EndpointSlice) bool {
	return m != nil && m.same[want.Name] == [2]*discoveryv1.EndpointSlice{want, have}
}
