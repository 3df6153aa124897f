package apply

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// Settled remembers, for the imports of one member, what the last Apply
// that wrote them without an error was asked for and what the member
// held after it. An import asked for the same again, whose objects in
// the member are still those (same names, UIDs and resourceVersions),
// needs no write and no plan: Split leaves it out, so a change costs the
// imports it touches, not every import of the member. Anything else
// about the import (its desired objects, anyone's write of its objects,
// a refused write) makes it planned again.
type Settled struct {
	mu      sync.Mutex
	imports map[aggregate.Key]settledImport
}

type settledImport struct {
	desired, held uint64
}

// NewSettled returns a Settled that knows of no import.
func NewSettled() *Settled { return &Settled{imports: map[aggregate.Key]settledImport{}} }

// group is one import's objects, desired or held.
type group struct {
	imports  []*mcsv1beta1.ServiceImport
	services []*corev1.Service
	slices   []*discoveryv1.EndpointSlice
}

func groupDesired(d objects.Objects) map[aggregate.Key]*group {
	out := map[aggregate.Key]*group{}
	at := func(o metav1.Object) *group {
		k := importKey(o)
		if out[k] == nil {
			out[k] = &group{}
		}
		return out[k]
	}
	for _, o := range d.Imports {
		g := at(o)
		g.imports = append(g.imports, o)
	}
	for _, o := range d.Services {
		g := at(o)
		g.services = append(g.services, o)
	}
	for _, o := range d.Slices {
		g := at(o)
		g.slices = append(g.slices, o)
	}
	return out
}

func groupExisting(e Existing) map[aggregate.Key]*group {
	return groupDesired(objects.Objects{Imports: e.Imports, Services: e.Services, Slices: e.Slices})
}

// desiredHash is a digest of what an import's objects are asked to be:
// a Service and a slice in their protobuf encoding (deterministic, and
// several times cheaper than JSON), a ServiceImport, which has none, in
// JSON.
func desiredHash(g *group) uint64 {
	h := fnv.New64a()
	if g == nil {
		return h.Sum64()
	}
	enc := json.NewEncoder(h)
	for _, o := range g.imports {
		_ = enc.Encode(o)
	}
	for _, o := range g.services {
		b, _ := o.Marshal()
		_, _ = h.Write(b)
	}
	for _, o := range g.slices {
		b, _ := o.Marshal()
		_, _ = h.Write(b)
	}
	return h.Sum64()
}

// heldHash is a digest of which objects of an import a member holds and
// at which resourceVersion: any write to one of them changes it.
func heldHash(g *group) uint64 {
	h := fnv.New64a()
	if g == nil {
		return h.Sum64()
	}
	var ids []string
	add := func(kind string, o metav1.Object) {
		ids = append(ids, kind+"/"+o.GetNamespace()+"/"+o.GetName()+"/"+string(o.GetUID())+"/"+o.GetResourceVersion())
	}
	for _, o := range g.imports {
		add("i", o)
	}
	for _, o := range g.services {
		add("s", o)
	}
	for _, o := range g.slices {
		add("e", o)
	}
	slices.Sort(ids)
	for _, id := range ids {
		_, _ = h.Write([]byte(id))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// Round is one write's desired objects, digested once: Split gives it,
// Done records it.
type Round struct {
	s       *Settled
	desired map[aggregate.Key]uint64
}

// Split returns the desired objects and the held ones of the imports
// that are not settled, the keys of those that are, and the Round to
// record once written. Exports are always kept: their status is written
// apart from the imports.
func (s *Settled) Split(desired objects.Objects, existing Existing) (objects.Objects, Existing, []aggregate.Key, *Round) {
	want, have := groupDesired(desired), groupExisting(existing)
	r := &Round{s: s, desired: make(map[aggregate.Key]uint64, len(want))}
	for k, g := range want {
		r.desired[k] = desiredHash(g)
	}
	s.mu.Lock()
	settled := map[aggregate.Key]bool{}
	for k, was := range s.imports {
		if d, ok := r.desired[k]; ok && was.desired == d && was.held == heldHash(have[k]) {
			settled[k] = true
		}
	}
	s.mu.Unlock()
	if len(settled) == 0 {
		return desired, existing, nil, r
	}
	keep := func(o metav1.Object) bool { return !settled[importKey(o)] }
	d := objects.Objects{Imports: filter(desired.Imports, keep), Services: filter(desired.Services, keep),
		Slices: filter(desired.Slices, keep), Exports: desired.Exports, Refused: desired.Refused}
	e := Existing{Imports: filter(existing.Imports, keep), Services: filter(existing.Services, keep),
		Slices: filter(existing.Slices, keep), Exports: existing.Exports}
	keys := make([]aggregate.Key, 0, len(settled))
	for k := range settled {
		keys = append(keys, k)
	}
	return d, e, keys, r
}

func filter[T metav1.Object](in []T, keep func(metav1.Object) bool) []T {
	out := make([]T, 0, len(in))
	for _, o := range in {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// Done notes that the round's desired objects (every import of the
// member) were written without an error and that the member holds held
// now.
func (r *Round) Done(held Existing) {
	have := groupExisting(held)
	next := make(map[aggregate.Key]settledImport, len(r.desired))
	for k, d := range r.desired {
		next[k] = settledImport{desired: d, held: heldHash(have[k])}
	}
	r.s.mu.Lock()
	r.s.imports = next
	r.s.mu.Unlock()
}

// Forget makes every import planned again at the next write.
func (s *Settled) Forget() {
	s.mu.Lock()
	clear(s.imports)
	s.mu.Unlock()
}
