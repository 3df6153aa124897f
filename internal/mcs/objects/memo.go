package objects

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// Memo keeps what ComputeWith built of each import of one member, and what
// from: the import as aggregated and its sources' EndpointSlices, compared
// by pointer (an informer replaces an object it sees change, never edits
// it). An import whose inputs are the same is not built again, and its
// objects keep their digest, so a write among 1,000 imports does not
// rebuild and re-encode 999 (docs/benchmarks.md).
//
// The objects a Memo holds are shared between calls: nobody changes them.
type Memo struct {
	mu sync.Mutex
	// member, limits and allowed are those the imports were built for;
	// another of any drops them all.
	member  string
	limits  Limits
	allowed cidr.List
	imports map[aggregate.Key]*built
	// next are the imports of the call running: the others are dropped.
	next map[aggregate.Key]*built
}

// NewMemo returns a Memo that knows no import.
func NewMemo() *Memo { return &Memo{} }

// built is what the member gets of one import before the caps over all
// the imports of a source: the derived Service, each source's slices and
// what was refused, then its ServiceImport and digest as last computed.
type built struct {
	imp       aggregate.Import
	endpoints map[string][]*discoveryv1.EndpointSlice
	service   *corev1.Service
	parts     []*contribution
	refused   []string

	// si was made for ips, written and cuts besides imp.
	si      *mcsv1beta1.ServiceImport
	ips     []string
	written bool
	cuts    []string
	// digest is that of si, service and the uncut slices, once known.
	digest      uint64
	digestKnown bool
}

// start begins a call for member; m may be nil (no memo).
func (m *Memo) start(member string, lim Limits, allowed cidr.List) *Memo {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	if m.member != member || m.limits != lim || !slices.Equal(m.allowed, allowed) {
		m.member, m.limits, m.allowed, m.imports = member, lim, slices.Clone(allowed), nil
	}
	m.next = make(map[aggregate.Key]*built, len(m.imports))
	return m
}

// finish keeps the imports of this call only.
func (m *Memo) finish() {
	if m == nil {
		return
	}
	m.imports, m.next = m.next, nil
	m.mu.Unlock()
}

// built returns what was built of imp from the same inputs, or nil.
func (m *Memo) built(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice) *built {
	if m == nil {
		return nil
	}
	b := m.imports[imp.Key]
	if b == nil || !SameEndpoints(b.endpoints, endpoints, imp.Clusters) || !b.imp.Equal(imp) {
		return nil
	}
	m.next[imp.Key] = b
	return b
}

// keep remembers b for the next call.
func (m *Memo) keep(b *built) {
	if m != nil {
		m.next[b.imp.Key] = b
	}
}

// SameEndpoints reports whether the sources' slices are the very same
// objects in a and b, for each of clusters: what a memo of an import
// compares its sources by.
func SameEndpoints(a, b map[string][]*discoveryv1.EndpointSlice, clusters []string) bool {
	for _, c := range clusters {
		if !slices.Equal(a[c], b[c]) {
			return false
		}
	}
	return true
}

// serviceImport is the import's ServiceImport for st and cuts: the last
// one when they are those it was made for.
func (b *built) serviceImport(imp aggregate.Import, st ImportState, cuts []string) *mcsv1beta1.ServiceImport {
	if b.si != nil && b.written == st.Written && slices.Equal(b.ips, st.ClusterIPs) && slices.Equal(b.cuts, cuts) {
		return b.si
	}
	b.si, b.ips, b.written, b.cuts = serviceImport(imp, st, cuts), slices.Clone(st.ClusterIPs), st.Written, slices.Clone(cuts)
	b.digestKnown = false
	return b.si
}

// digestOf is the digest of the import's objects, its slices after the
// caps being sl: the one kept unless it changed or was cut (cut slices
// are new copies each call, and rare).
func (b *built) digestOf(sl []*discoveryv1.EndpointSlice, cut bool) uint64 {
	if b.digestKnown && !cut {
		return b.digest
	}
	var svcs []*corev1.Service
	if b.service != nil {
		svcs = []*corev1.Service{b.service}
	}
	d := Digest([]*mcsv1beta1.ServiceImport{b.si}, svcs, sl)
	if !cut {
		b.digest, b.digestKnown = d, true
	}
	return d
}

// Digest is a digest of one import's objects: a Service and a slice in
// their protobuf encoding (deterministic, and several times cheaper than
// JSON), a ServiceImport, which has none, in JSON. Maps are encoded in
// key order by both.
func Digest(imports []*mcsv1beta1.ServiceImport, services []*corev1.Service, sl []*discoveryv1.EndpointSlice) uint64 {
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	for _, o := range imports {
		_ = enc.Encode(o)
	}
	for _, o := range services {
		b, _ := o.Marshal()
		_, _ = h.Write(b)
	}
	for _, o := range sl {
		b, _ := o.Marshal()
		_, _ = h.Write(b)
	}
	return h.Sum64()
}
