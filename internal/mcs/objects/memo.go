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

// Memo keeps, of each import of one member, what ComputeWith needs to know
// its objects' digest without building them: the inputs it was built
// from (Inputs: the import as aggregated, and its version or else its
// sources' EndpointSlices, compared by pointer: an informer replaces an
// object it sees change, never edits it), the size of each slice (the caps over all the imports
// of a source count them) and the digest last computed, with the
// member's state it was computed for. It keeps no object: at 1,000
// imports in five members the objects a memo kept were a fifth of the
// controller's heap (docs/benchmarks.md).
type Memo struct {
	mu sync.Mutex
	// member, limits and allowed are those the imports were built for;
	// another of any drops them all.
	member  string
	limits  Limits
	allowed cidr.List
	imports map[aggregate.Key]*known
	// next are the imports of the call running: the others are dropped.
	next map[aggregate.Key]*known
	// gateways are the east-west gateways' slices made in the last call,
	// nextGateways those of the call running (gatewaySlices).
	gateways, nextGateways map[gatewayKey]*gatewayMade
}

// NewMemo returns a Memo that knows no import.
func NewMemo() *Memo { return &Memo{} }

// known is what a Memo keeps of one import.
type known struct {
	Inputs
	// sizes are, per source in the order of imp.Clusters, the endpoints
	// of each of its slices before the caps.
	sizes   [][]int
	refused []string

	// digest is that of the objects for ips, cuts and kept (whether the
	// import is written everywhere changes only its exports).
	ips         []string
	cuts        []string
	kept        []int
	digest      uint64
	digestKnown bool
}

// newKnown is what is kept of imp, of version, built as b from
// endpoints.
func newKnown(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, version uint64, b *built) *known {
	k := &known{Inputs: NewInputs(imp, endpoints, version), refused: b.refused}
	for _, sl := range b.slices {
		sizes := make([]int, len(sl))
		for i, s := range sl {
			sizes[i] = len(s.Endpoints)
		}
		k.sizes = append(k.sizes, sizes)
	}
	return k
}

// contributions are the import's parts for the caps, one per source.
func (k *known) contributions() []*contribution {
	out := make([]*contribution, len(k.imp.Clusters))
	for i, cluster := range k.imp.Clusters {
		out[i] = &contribution{key: k.imp.Key, cluster: cluster, created: k.imp.Created[cluster], sizes: k.sizes[i]}
	}
	return out
}

// digestFor returns the digest of the import's objects for the member's
// state st, the caps' notes cuts and what they kept, if it is known.
func (k *known) digestFor(st ImportState, cuts []string, kept []int) (uint64, bool) {
	ok := k.digestKnown && slices.Equal(k.ips, st.ClusterIPs) &&
		slices.Equal(k.cuts, cuts) && slices.Equal(k.kept, kept)
	return k.digest, ok
}

// setDigest records the digest d of the objects for st, cuts and kept.
func (k *known) setDigest(st ImportState, cuts []string, kept []int, d uint64) {
	k.ips, k.cuts, k.kept = slices.Clone(st.ClusterIPs), slices.Clone(cuts), kept
	k.digest, k.digestKnown = d, true
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
	m.next = make(map[aggregate.Key]*known, len(m.imports))
	return m
}

// finish keeps the imports of this call only.
func (m *Memo) finish() {
	if m == nil {
		return
	}
	m.imports, m.next = m.next, nil
	m.gateways, m.nextGateways = m.nextGateways, nil
	m.mu.Unlock()
}

// known returns what is kept of imp if it was built from the same
// inputs (Inputs.Same), else nil.
func (m *Memo) known(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, version uint64) *known {
	if m == nil {
		return nil
	}
	k := m.imports[imp.Key]
	if k == nil || !k.Same(imp, endpoints, version) {
		return nil
	}
	m.next[imp.Key] = k
	return k
}

// keep remembers k for the next call.
func (m *Memo) keep(k *known) {
	if m != nil {
		m.next[k.imp.Key] = k
	}
}

// Inputs are what the objects of one import were built from, as a memo
// keeps them: the import as aggregated, and its version (the caller's
// number for the import and its sources' slices, ImportState.Version)
// or, without one, its sources' slices themselves, compared by pointer
// (an informer replaces an object it sees change, never edits it). A
// version spares each member's memo a copy of every import's slices and
// a comparison of them at each write.
type Inputs struct {
	imp       aggregate.Import
	version   uint64
	endpoints map[string][]*discoveryv1.EndpointSlice
}

// NewInputs keeps imp and its version; without one (0), of endpoints,
// the slices of its clusters as they are now: a caller may change its
// map after.
func NewInputs(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, version uint64) Inputs {
	if version != 0 {
		return Inputs{imp: imp, version: version}
	}
	in := Inputs{imp: imp, endpoints: make(map[string][]*discoveryv1.EndpointSlice, len(imp.Clusters))}
	for _, c := range imp.Clusters {
		in.endpoints[c] = slices.Clone(endpoints[c])
	}
	return in
}

// Same reports whether imp, endpoints and version are the inputs kept:
// by version where both have one, in full where neither has; never
// where only one has. When they are, imp, the newest, is kept instead:
// the memos of every member then share the last aggregation's imports,
// and older ones are freed.
func (in *Inputs) Same(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, version uint64) bool {
	switch {
	case version != 0 || in.version != 0:
		if version != in.version {
			return false
		}
	case !sameEndpoints(in.endpoints, endpoints, imp.Clusters) || !in.imp.Equal(imp):
		return false
	}
	in.imp = imp
	return true
}

// sameEndpoints reports whether the sources' slices are the very same
// objects in a and b, for each of clusters: what a memo of an import
// compares its sources by.
func sameEndpoints(a, b map[string][]*discoveryv1.EndpointSlice, clusters []string) bool {
	for _, c := range clusters {
		if !slices.Equal(a[c], b[c]) {
			return false
		}
	}
	return true
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
