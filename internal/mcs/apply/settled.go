package apply

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/owned"
)

// Settled remembers, for the imports of one member, what the last Apply
// that wrote them without an error was asked for and what the member
// held after it. An import asked for the same again, whose objects in
// the member are still those (same names, UIDs and resourceVersions),
// needs no write and no plan: Split leaves it out, so a change costs the
// imports it touches, not every import of the member. Anything else
// about the import (its desired objects, anyone's write of its objects,
// a refused write) makes it planned again.
//
// An import the member refused (Result.Refused) waits out a backoff of
// its own before it is planned again, unless what is desired of it
// changes: a refusal costs its import, not a request at every write of
// the member.
type Settled struct {
	mu      sync.Mutex
	imports map[aggregate.Key]settledImport
	refused map[aggregate.Key]refusedImport
	// now is the clock of the refusals' backoff.
	now func() time.Time
}

type settledImport struct {
	desired, held uint64
}

// refusedImport is an import whose last write the member refused: what
// was desired of it, the refusal, how many writes in a row were refused
// and when it is planned again.
type refusedImport struct {
	desired uint64
	err     error
	tries   int
	retry   time.Time
}

// The backoff of a refused import doubles from MinRefusedBackoff up to
// MaxRefusedBackoff with each refusal in a row (kubeclient.Backoff, the rule of
// a failed member write).
const (
	MinRefusedBackoff = time.Second
	MaxRefusedBackoff = 2 * time.Minute
)

// NewSettled returns a Settled that knows of no import.
func NewSettled() *Settled {
	return &Settled{imports: map[aggregate.Key]settledImport{}, refused: map[aggregate.Key]refusedImport{}, now: time.Now}
}

// desiredDigests are the digests of each import's desired objects:
// those Compute gave, else made here.
func desiredDigests(d objects.Objects) map[aggregate.Key]uint64 {
	if d.Digests != nil {
		return d.Digests
	}
	type group struct {
		imports  []*mcsv1beta1.ServiceImport
		services []*corev1.Service
		slices   []*discoveryv1.EndpointSlice
	}
	groups := map[aggregate.Key]*group{}
	at := func(o metav1.Object) *group {
		k := importKey(o)
		if groups[k] == nil {
			groups[k] = &group{}
		}
		return groups[k]
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
	out := make(map[aggregate.Key]uint64, len(groups))
	for k, g := range groups {
		out[k] = objects.Digest(g.imports, g.services, g.slices)
	}
	return out
}

// HeldDigest is the digest of one object the controller holds in a
// member, and the import it belongs to: owned.VersionDigest of its kind,
// so that any write of it changes the digest. An
// import's digest is the sum of its objects' (Existing.Digest), so the
// order they come in does not matter and nothing is sorted; ok is false
// for an object of no kind the controller writes.
func HeldDigest(o metav1.Object) (k aggregate.Key, digest uint64, ok bool) {
	var kind byte
	switch o.(type) {
	case *mcsv1beta1.ServiceImport:
		kind = 'i'
	case *corev1.Service:
		kind = 's'
	case *discoveryv1.EndpointSlice:
		kind = 'e'
	default:
		return k, 0, false
	}
	return importKey(o), owned.VersionDigest(kind, o), true
}

// heldDigests are, per import, the digest of which of its objects a
// member holds (HeldDigest): e.Digest when it is kept, else summed here.
// Summing costs a hash of every object the controller holds in the
// member at every write: at 5,000 imports in ten members it was a fifth
// of the controller's CPU while one export was added
// (docs/benchmarks.md).
func heldDigests(e Existing) func(aggregate.Key) uint64 {
	if e.Digest != nil {
		return e.Digest
	}
	out := make(map[aggregate.Key]uint64, len(e.Imports))
	add := func(o metav1.Object) {
		if k, d, ok := HeldDigest(o); ok {
			out[k] += d
		}
	}
	for _, o := range e.Imports {
		add(o)
	}
	for _, o := range e.Services {
		add(o)
	}
	for _, o := range e.Slices {
		add(o)
	}
	return func(k aggregate.Key) uint64 { return out[k] }
}

// Round is one write of a member: what it holds when the write begins,
// digested once (Begin), the desired objects' digests (Split), recorded
// once written (Done).
type Round struct {
	s       *Settled
	have    func(aggregate.Key) uint64
	desired map[aggregate.Key]uint64
	// waiting are the refused imports left out while they wait out their
	// backoff.
	waiting map[aggregate.Key]bool
}

// Begin starts a write of the member, which holds existing.
func (s *Settled) Begin(existing Existing) *Round {
	return &Round{s: s, have: heldDigests(existing), waiting: map[aggregate.Key]bool{}}
}

// Settled reports whether the import k, whose desired objects digest to
// d, needs no write: the member holds what the last write of it asked
// for, or it waits out a refusal's backoff. It is objects.Input.Skip, so
// a settled import is not even built.
func (r *Round) Settled(k aggregate.Key, d uint64) bool {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if was, ok := r.s.imports[k]; ok && was.desired == d && was.held == r.have(k) {
		return true
	}
	if was, ok := r.s.refused[k]; ok && was.desired == d && r.s.now().Before(was.retry) {
		r.waiting[k] = true
		return true
	}
	return false
}

// Split is Begin(existing).Split(desired, existing), and that Round.
func (s *Settled) Split(desired objects.Objects, existing Existing) (objects.Objects, Existing, []aggregate.Key, *Round) {
	r := s.Begin(existing)
	d, e, keys := r.Split(desired, existing)
	return d, e, keys, r
}

// Split returns the desired objects and the held ones of the imports
// that are not settled (Settled), and the keys of those left out, which
// include those objects.Compute skipped. Exports are always kept: their
// status is written apart from the imports.
func (r *Round) Split(desired objects.Objects, existing Existing) (objects.Objects, Existing, []aggregate.Key) {
	r.desired = desiredDigests(desired)
	settled := make(map[aggregate.Key]bool, len(desired.Skipped))
	for _, k := range desired.Skipped {
		settled[k] = true
	}
	built := 0
	for k, d := range r.desired {
		if !settled[k] && r.Settled(k, d) {
			settled[k] = true
			built++
		}
	}
	if len(settled) == 0 {
		return desired, existing, nil
	}
	keep := func(o metav1.Object) bool { return !settled[importKey(o)] }
	d := desired
	if built > 0 {
		d = objects.Objects{Imports: filter(desired.Imports, keep), Services: filter(desired.Services, keep),
			Slices: filter(desired.Slices, keep), Exports: desired.Exports, Refused: desired.Refused, Digests: desired.Digests}
	}
	e := Existing{Imports: filter(existing.Imports, keep), Services: filter(existing.Services, keep),
		Slices: filter(existing.Slices, keep), Exports: existing.Exports, Digest: existing.Digest}
	keys := make([]aggregate.Key, 0, len(settled))
	for k := range settled {
		keys = append(keys, k)
	}
	return d, e, keys
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
// member) were written with no error but the refusals of refused
// (Result.Refused), and that the member holds held now. A refused import
// is not settled: it waits out its backoff, then is planned again.
func (r *Round) Done(held Existing, refused map[aggregate.Key]error) {
	have := heldDigests(held)
	now := r.s.now()
	next := make(map[aggregate.Key]settledImport, len(r.desired))
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	nextRefused := map[aggregate.Key]refusedImport{}
	for k, d := range r.desired {
		switch err, ok := refused[k]; {
		case r.waiting[k]:
			nextRefused[k] = r.s.refused[k]
		case ok:
			tries := r.s.refused[k].tries + 1
			nextRefused[k] = refusedImport{desired: d, err: err, tries: tries, retry: now.Add(kubeclient.Backoff(MinRefusedBackoff, MaxRefusedBackoff, tries))}
		default:
			next[k] = settledImport{desired: d, held: have(k)}
		}
	}
	r.s.imports, r.s.refused = next, nextRefused
}

// Refused returns the refusal of each import refused at its last write
// (Done), and the soonest time one of them is planned again; none when
// the member refused nothing.
func (s *Settled) Refused() (map[aggregate.Key]error, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[aggregate.Key]error, len(s.refused))
	var retry time.Time
	for k, r := range s.refused {
		out[k] = r.err
		if retry.IsZero() || r.retry.Before(retry) {
			retry = r.retry
		}
	}
	return out, retry
}

// Holds reports whether the last write recorded (Done) wrote the import
// k, with no write of the member failing since.
func (s *Settled) Holds(k aggregate.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.imports[k]
	return ok
}

// Forget makes every import planned again at the next write, but those
// waiting out a refusal's backoff.
func (s *Settled) Forget() {
	s.mu.Lock()
	clear(s.imports)
	s.mu.Unlock()
}
