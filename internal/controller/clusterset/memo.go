package clusterset

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/eastwest"
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
	// eastWest are the east-west objects of each export as the last
	// write of this process left them in the member (writeEastWest).
	eastWest map[aggregate.Key]*eastwest.Objects
	// ended: a write of the member has ended, well or not; until then
	// settled knows nothing of what the member holds (importsWritten).
	ended atomic.Bool
	// last is what the member's last write was computed from, and the
	// controller's objects it left there, when it ended with nothing
	// failed, refused or left to write; lastKnown is false otherwise.
	// A write computed from the same is skipped (changes.go).
	last      memberInput
	lastKnown bool
}

func newMemberMemo() *memberMemo {
	return &memberMemo{objects: objects.NewMemo(), settled: apply.NewSettled(), dns: newDNSMemo(),
		exports:  &exportsWritten{byKey: map[types.NamespacedName]*mcsv1beta1.ServiceExport{}},
		eastWest: map[aggregate.Key]*eastwest.Objects{}}
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

// dnsMemo keeps, of each import of a member, what its clusterset
// contract slices were built from and the held slices last found equal
// to them, so an import whose inputs and held slices are the very same
// objects is neither built nor compared again. It keeps no built slice:
// those are built again when anything of the import changed. Only the
// member's lane uses it, one write at a time.
type dnsMemo struct {
	imports map[aggregate.Key]*dnsKnown
}

// dnsKnown is what the contract slices of one import were built from
// (the import and its sources' slices, objects.Inputs, and the member's
// ClusterSetIPs) and, by name, the held slice found equal to each; nil
// for one being written.
type dnsKnown struct {
	objects.Inputs
	ips  []string
	held map[string]*discoveryv1.EndpointSlice
}

func newDNSMemo() *dnsMemo {
	return &dnsMemo{imports: map[aggregate.Key]*dnsKnown{}}
}

// settled returns the names of imp's contract slices if it needs no
// write: built from the same inputs as last time (objects.Inputs.Same,
// by version where it has one), and each held as the very object found
// equal then. m may be nil (nothing is settled).
func (m *dnsMemo) settled(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, version uint64, ips []string,
	have map[string]*discoveryv1.EndpointSlice) (*dnsKnown, bool) {
	if m == nil {
		return nil, false
	}
	k := m.imports[imp.Key]
	if k == nil || !slices.Equal(k.ips, ips) || !k.Same(imp, endpoints, version) {
		return nil, false
	}
	for name, held := range k.held {
		if held == nil || have[name] != held {
			return k, false
		}
	}
	return k, true
}

// know records what imp's contract slices, named by names, were built
// from; held are those found equal to them (the others are nil).
func (m *dnsMemo) know(next map[aggregate.Key]*dnsKnown, imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice,
	version uint64, ips []string, held map[string]*discoveryv1.EndpointSlice) {
	if m == nil {
		return
	}
	next[imp.Key] = &dnsKnown{Inputs: objects.NewInputs(imp, endpoints, version), ips: slices.Clone(ips), held: held}
}
