package clusterset

import (
	"hash/maphash"

	discoveryv1 "k8s.io/api/discovery/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// A sync writes every member, and most members most of the time have
// nothing new to be written: a new export changes every member's
// objects once, but its Ready, written at the next sync, is only its
// exporter's. Walking a member's thousand imports to find nothing to do
// was most of what one more export cost (docs/benchmarks.md). So each
// import gets a version that changes when the import or its sources'
// slices do, compared once per sync, and a member's write is skipped
// when nothing it is computed from changed since its last one ended
// well: the versions of the imports, what the member's exports say, its
// namespaces, and the controller's objects it holds (workload
// Owned.Total, which any write of anyone's to them changes).

// importVersions numbers the imports of one ClusterSet: an import keeps
// its version while it and its sources' slices are the same objects
// (objects.Inputs), and gets a new one when anything of them changes.
// Only the set's sync uses it, one at a time.
type importVersions struct {
	byKey map[aggregate.Key]*importVersion
	next  uint64
}

type importVersion struct {
	in objects.Inputs
	v  uint64
}

// of returns the version of each import of agg, whose sources' slices
// are endpoints, and forgets the imports agg no longer has.
func (iv *importVersions) of(agg aggregate.Result, endpoints map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice) map[aggregate.Key]uint64 {
	out := make(map[aggregate.Key]uint64, len(agg.Imports))
	next := make(map[aggregate.Key]*importVersion, len(agg.Imports))
	for _, imp := range agg.Imports {
		v := iv.byKey[imp.Key]
		if v == nil || !v.in.Same(imp, endpoints[imp.Key], 0) {
			iv.next++
			v = &importVersion{in: objects.NewInputs(imp, endpoints[imp.Key], 0), v: iv.next}
		}
		next[imp.Key] = v
		out[imp.Key] = v.v
	}
	iv.byKey = next
	return out
}

// memberInput is what a member's write is computed from, hashed:
// equal, the write would find nothing to do. own is the controller's
// objects in the member (workload Owned.Total) as the write left them.
type memberInput struct {
	imports, exports, namespaces uint64
	own                          uint64
}

// inputSeed seeds the hashes of memberInput: compared within this
// process only.
var inputSeed = maphash.MakeSeed()

// inputOf is the memberInput of member id's write, but own: the
// versions of the imports (and, of the imports it exports, whether they
// are written everywhere: Ready on its exports), what the aggregate says
// of its exports, the exports as the member holds them (their UIDs and
// resourceVersions, its status writes in place) and its namespaces.
// Each part is a sum of one hash per item, so no order is needed.
func inputOf(id string, agg aggregate.Result, versions map[aggregate.Key]uint64, written map[aggregate.Key]written,
	exports []*mcsv1beta1.ServiceExport, namespaces map[string]bool) memberInput {
	var in memberInput
	for _, imp := range agg.Imports {
		h := hashOf(imp.Namespace, imp.Name)
		_, _ = h.WriteString(uint64String(versions[imp.Key]))
		for _, c := range imp.Clusters {
			if c == id {
				_ = h.WriteByte(byte(written[imp.Key]))
			}
		}
		in.imports += h.Sum64()
	}
	for _, e := range agg.Exports {
		if e.Cluster != id {
			continue
		}
		h := hashOf(e.Namespace, e.Name)
		for _, c := range e.Conditions {
			_, _ = h.WriteString(string(c.Type) + "\x00" + string(c.Status) + "\x00" + string(c.Reason) + "\x00" + c.Message + "\x00")
		}
		for _, f := range e.ConflictFields {
			_, _ = h.WriteString(string(f) + "\x00")
		}
		in.exports += h.Sum64()
	}
	for _, e := range exports {
		h := hashOf(e.Namespace, e.Name)
		_, _ = h.WriteString(string(e.UID) + "\x00" + e.ResourceVersion)
		in.exports += h.Sum64()
	}
	for ns := range namespaces {
		h := hashOf(ns, "")
		in.namespaces += h.Sum64()
	}
	return in
}

// hashOf is a hash begun with the two names.
func hashOf(a, b string) *maphash.Hash {
	h := &maphash.Hash{}
	h.SetSeed(inputSeed)
	_, _ = h.WriteString(a)
	_ = h.WriteByte(0)
	_, _ = h.WriteString(b)
	_ = h.WriteByte(0)
	return h
}

// uint64String is v as eight bytes.
func uint64String(v uint64) string {
	var b [8]byte
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return string(b[:])
}
