package objects

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// world is a member's view of a ClusterSet that random steps change: the
// exports of three clusters and their Services' slices, as informers
// hold them (a changed slice is a new object).
type world struct {
	exports   map[string]aggregate.Export // by cluster/name
	endpoints map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice
	ips       map[aggregate.Key][]string
	written   bool
	rev       int
	// versioned: input numbers each import (ImportState.Version) as a
	// ClusterSet's sync does, a new number when its inputs change.
	versioned bool
	versions  map[aggregate.Key]*versionOf
	next      uint64
}

type versionOf struct {
	in Inputs
	v  uint64
}

var memoClusters = []string{"a", "b", "c"}

func newWorld() *world {
	w := &world{exports: map[string]aggregate.Export{}, endpoints: map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice{},
		ips: map[aggregate.Key][]string{}}
	for i := range 12 {
		w.export(memoClusters[i%3], fmt.Sprintf("svc%d", i%6), i%5 == 0)
	}
	return w
}

func (w *world) export(cluster, name string, headless bool) {
	e := aggregate.Export{Cluster: cluster, Namespace: ns, Name: name, Created: t0.Add(time.Duration(len(w.exports)) * time.Second),
		Service: &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.0.0.1", Ports: []aggregate.Port{tcp("http", 80)}}}
	if headless {
		e.Service.ClusterIP = aggregate.ClusterIPNone
	}
	w.exports[cluster+"/"+name] = e
	w.slices(cluster, name)
}

// slices gives cluster's Service name a new slice of 1 to 6 endpoints.
func (w *world) slices(cluster, name string) {
	w.rev++
	k := aggregate.Key{Namespace: ns, Name: name}
	if w.endpoints[k] == nil {
		w.endpoints[k] = map[string][]*discoveryv1.EndpointSlice{}
	}
	var eps []discoveryv1.Endpoint
	for i := range 1 + w.rev%6 {
		eps = append(eps, ep(fmt.Sprintf("10.%d.%d.%d", w.rev%200, i, len(cluster)), hostname(fmt.Sprintf("pod%d", i))))
	}
	w.endpoints[k][cluster] = []*discoveryv1.EndpointSlice{
		slice(fmt.Sprintf("%s-%d", name, w.rev), discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{port("http", 8080)}, eps...)}
}

// step changes one thing at random.
func (w *world) step(r *rand.Rand) {
	cluster, name := memoClusters[r.IntN(3)], fmt.Sprintf("svc%d", r.IntN(8))
	switch r.IntN(6) {
	case 0:
		w.export(cluster, name, r.IntN(4) == 0)
	case 1:
		delete(w.exports, cluster+"/"+name)
	case 2:
		w.slices(cluster, name)
	case 3:
		w.ips[aggregate.Key{Namespace: ns, Name: name}] = []string{fmt.Sprintf("10.96.0.%d", r.IntN(250))}
	case 4:
		w.written = !w.written
	default: // nothing changes
	}
}

func (w *world) input(t *testing.T, lim Limits) Input {
	var exports []aggregate.Export
	for _, e := range w.exports {
		exports = append(exports, e)
	}
	agg := aggregated(t, exports...)
	states := map[aggregate.Key]ImportState{}
	for _, imp := range agg.Imports {
		states[imp.Key] = ImportState{Endpoints: w.endpoints[imp.Key], ClusterIPs: w.ips[imp.Key], Written: w.written,
			Version: w.version(imp)}
	}
	return Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: agg, Imports: states, Limits: lim}
}

// version is imp's number when the world is versioned, else 0.
func (w *world) version(imp aggregate.Import) uint64 {
	if !w.versioned {
		return 0
	}
	if w.versions == nil {
		w.versions = map[aggregate.Key]*versionOf{}
	}
	v := w.versions[imp.Key]
	if v == nil || !v.in.Same(imp, w.endpoints[imp.Key], 0) {
		w.next++
		v = &versionOf{in: NewInputs(imp, w.endpoints[imp.Key], 0), v: w.next}
		w.versions[imp.Key] = v
	}
	return v.v
}

// Whatever changes, a Memo gives the digests of the objects built
// afresh, and builds every import that Skip does not hold settled as it
// would be built afresh; with caps that cut, too. An import whose inputs
// did not change is skipped.
func TestMemoEqualsFresh(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lim       Limits
		versioned bool
	}{
		{name: "no cap reached"},
		{name: "caps that cut", lim: Limits{EndpointsPerMember: 9, SlicesPerMember: 4}},
		{name: "imports versioned", versioned: true},
		{name: "imports versioned, caps that cut", lim: Limits{EndpointsPerMember: 9, SlicesPerMember: 4}, versioned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			w, memo := newWorld(), NewMemo()
			w.versioned = tc.versioned
			skipped := 0
			for i := range 300 {
				in := w.input(t, tc.lim)
				fresh := Compute(in)
				// Every import whose digest is known is skipped.
				in.Skip = func(aggregate.Key, uint64) bool { return true }
				got := ComputeWith(in, memo)
				if !maps.Equal(got.Digests, fresh.Digests) {
					t.Fatalf("step %d: digests with the memo\n%s\nafresh\n%s", i, view(got), view(fresh))
				}
				if want := withoutImports(fresh, got.Skipped); !reflect.DeepEqual(withoutDigests(got), withoutDigests(want)) {
					t.Fatalf("step %d: with the memo\n%s\nafresh, but what it skipped\n%s", i, view(got), view(want))
				}
				skipped += len(got.Skipped)
				w.step(r)
			}
			if skipped == 0 {
				t.Error("no import was skipped from one call to the next")
			}
		})
	}
}

// withoutImports is objs without the objects of the imports skipped.
func withoutImports(objs Objects, skipped []aggregate.Key) Objects {
	skip := map[aggregate.Key]bool{}
	for _, k := range skipped {
		skip[k] = true
	}
	keep := func(ns, name string) bool { return !skip[aggregate.Key{Namespace: ns, Name: name}] }
	out := objs
	out.Imports, out.Services, out.Slices, out.Skipped = nil, nil, nil, skipped
	for _, si := range objs.Imports {
		if keep(si.Namespace, si.Name) {
			out.Imports = append(out.Imports, si)
		}
	}
	for _, s := range objs.Services {
		if keep(s.Namespace, s.Labels[LabelServiceName]) {
			out.Services = append(out.Services, s)
		}
	}
	for _, s := range objs.Slices {
		if keep(s.Namespace, s.Labels[LabelServiceName]) {
			out.Slices = append(out.Slices, s)
		}
	}
	return out
}

func withoutDigests(objs Objects) Objects {
	objs.Digests = nil
	return objs
}

// One changed slice among many imports: only its import is built again,
// the others are skipped with the digests they had.
func TestMemoRebuildsTheChangedImport(t *testing.T) {
	w, memo := newWorld(), NewMemo()
	all := func(aggregate.Key, uint64) bool { return true }
	in := w.input(t, Limits{})
	in.Skip = all
	before := ComputeWith(in, memo)
	if len(before.Skipped) != 0 {
		t.Fatalf("skipped %v on the first call: nothing was known", before.Skipped)
	}
	w.slices("b", "svc1")
	in = w.input(t, Limits{})
	in.Skip = all
	after := ComputeWith(in, memo)
	var built []string
	for _, si := range after.Imports {
		built = append(built, si.Name)
	}
	if !slices.Equal(built, []string{"svc1"}) {
		t.Errorf("built %v; want only svc1", built)
	}
	for k, d := range after.Digests {
		if same := before.Digests[k] == d; same == (k.Name == "svc1") {
			t.Errorf("import %s: digest kept %v", k.Name, same)
		}
	}
}

// With versions, a Memo compares them and not the slices: an import
// whose slice is another object, under the version it had, is taken as
// unchanged (the caller numbers its imports); under a new one it is
// built again.
func TestMemoComparesVersions(t *testing.T) {
	w, memo := newWorld(), NewMemo()
	w.versioned = true
	all := func(aggregate.Key, uint64) bool { return true }
	k := aggregate.Key{Namespace: ns, Name: "svc1"}
	in := w.input(t, Limits{})
	in.Skip = all
	ComputeWith(in, memo)
	was := in.Imports[k].Version
	w.slices("b", "svc1")
	built := func(in Input) []string {
		in.Skip = all
		var out []string
		for _, si := range ComputeWith(in, memo).Imports {
			out = append(out, si.Name)
		}
		return out
	}
	in = w.input(t, Limits{})
	now := in.Imports[k].Version
	if now == was {
		t.Fatalf("svc1's version %d kept though its slice changed", now)
	}
	st := in.Imports[k]
	st.Version = was
	in.Imports[k] = st
	if got := built(in); len(got) != 0 {
		t.Errorf("under its old version built %v; want none", got)
	}
	st.Version = now
	in.Imports[k] = st
	if got := built(in); !slices.Equal(got, []string{"svc1"}) {
		t.Errorf("under its new version built %v; want svc1", got)
	}
}

// view is objs as lines: each slice, and the digest of each import.
func view(objs Objects) string {
	var lines []string
	for _, s := range objs.Slices {
		lines = append(lines, s.Name+": "+sliceView(s))
	}
	for k, d := range objs.Digests {
		lines = append(lines, fmt.Sprintf("%s: %x", k.Name, d))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// A member's objects at 1,000 imports from five clusters after one
// source's slice changed: built afresh, and with a Memo. The ratio is in
// docs/benchmarks.md.
func BenchmarkComputeOneChanged(b *testing.B) {
	const imports = 1000
	var exports []aggregate.Export
	states := map[aggregate.Key]ImportState{}
	for i := range imports {
		cluster := fmt.Sprintf("c%d", i%5)
		name := fmt.Sprintf("svc%d", i)
		exports = append(exports, aggregate.Export{Cluster: cluster, Namespace: ns, Name: name, Created: t0,
			Service: &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.0.0.1", Ports: []aggregate.Port{tcp("http", 80)}}})
		states[aggregate.Key{Namespace: ns, Name: name}] = ImportState{
			Endpoints:  map[string][]*discoveryv1.EndpointSlice{cluster: {benchSlice(name, i, 0)}},
			ClusterIPs: []string{fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)}, Written: true}
	}
	agg, err := aggregate.Aggregate(exports)
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Cluster: "c0", Namespaces: map[string]bool{ns: true}, Result: agg, Imports: states}
	for _, tc := range []struct {
		name string
		memo *Memo
	}{{name: "afresh"}, {name: "memo", memo: NewMemo()}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.memo != nil {
				// The member holds every import's objects: only the
				// changed one is built.
				in.Skip = func(aggregate.Key, uint64) bool { return true }
			}
			ComputeWith(in, tc.memo)
			for i := 0; b.Loop(); i++ {
				// One more version of one import's slice, as an informer
				// gives it: a new object.
				k := aggregate.Key{Namespace: ns, Name: fmt.Sprintf("svc%d", i%imports)}
				st := states[k]
				cluster := fmt.Sprintf("c%d", i%imports%5)
				st.Endpoints = map[string][]*discoveryv1.EndpointSlice{cluster: {benchSlice(k.Name, i%imports, i)}}
				states[k] = st
				ComputeWith(in, tc.memo)
			}
		})
	}
}

func benchSlice(name string, i, rev int) *discoveryv1.EndpointSlice {
	return slice(fmt.Sprintf("%s-%d", name, rev), discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{port("http", 8080)},
		ep(fmt.Sprintf("10.%d.%d.1", i/250, i%250)), ep(fmt.Sprintf("10.%d.%d.2", i/250, i%250)), ep(fmt.Sprintf("10.%d.%d.3", i/250, rev%250)))
}
