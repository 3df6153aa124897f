package controller

import (
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// memberMemo is what the writes of one member keep from one to the next,
// so that a change costs the imports it touches: the objects built per
// import (objects.Memo), the imports settled since the last write
// (apply.Settled), and the contract slices built per import (dnsMemo).
type memberMemo struct {
	objects *objects.Memo
	settled *apply.Settled
	dns     *dnsMemo
}

func newMemberMemo() *memberMemo {
	return &memberMemo{objects: objects.NewMemo(), settled: apply.NewSettled(), dns: newDNSMemo()}
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
	if b := m.imports[imp.Key]; b != nil && slices.Equal(b.ips, ips) && b.imp.Equal(imp) && sameSources(b.endpoints, endpoints, imp.Clusters) {
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

// sameSources reports whether the sources' slices are the very same
// objects in a and b, for each of clusters.
func sameSources(a, b map[string][]*discoveryv1.EndpointSlice, clusters []string) bool {
	for _, c := range clusters {
		if !slices.Equal(a[c], b[c]) {
			return false
		}
	}
	return true
}

// knownSame reports whether want and have were found the same last time.
func (m *dnsMemo) knownSame(want, have *discoveryv1.EndpointSlice) bool {
	return m != nil && m.same[want.Name] == [2]*discoveryv1.EndpointSlice{want, have}
}
