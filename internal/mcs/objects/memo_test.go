package objects

import (
	"fmt"
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
		states[imp.Key] = ImportState{Endpoints: w.endpoints[imp.Key], ClusterIPs: w.ips[imp.Key], Written: w.written}
	}
	return Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: agg, Imports: states, Limits: lim}
}

// Whatever changes, a Memo's objects are those built afresh, and an
// import whose inputs did not change keeps its very objects; with caps
// that cut, too, and the memo's objects are never cut in place.
func TestMemoEqualsFresh(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  Limits
	}{
		{name: "no cap reached"},
		{name: "caps that cut", lim: Limits{EndpointsPerMember: 9, SlicesPerMember: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			w, memo := newWorld(), NewMemo()
			var last Objects
			reused := 0
			for i := range 300 {
				in := w.input(t, tc.lim)
				got, fresh := ComputeWith(in, memo), Compute(in)
				if !reflect.DeepEqual(got, fresh) {
					t.Fatalf("step %d: with the memo\n%s\nafresh\n%s", i, view(got), view(fresh))
				}
				reused += kept(last, got)
				last = got
				w.step(r)
			}
			if reused == 0 {
				t.Error("no import's objects were kept from one call to the next")
			}
		})
	}
}

// kept counts the derived Services of got that are the very objects of
// last.
func kept(last, got Objects) int {
	n := 0
	for _, s := range got.Services {
		for _, l := range last.Services {
			if s == l {
				n++
			}
		}
	}
	return n
}

// One changed slice among many imports: only its import is built again.
func TestMemoRebuildsTheChangedImport(t *testing.T) {
	w, memo := newWorld(), NewMemo()
	before := ComputeWith(w.input(t, Limits{}), memo)
	w.slices("b", "svc1")
	after := ComputeWith(w.input(t, Limits{}), memo)
	for _, si := range after.Imports {
		k := aggregate.Key{Namespace: si.Namespace, Name: si.Name}
		same := before.Digests[k] == after.Digests[k]
		var was bool
		for _, b := range before.Imports {
			was = was || b == si
		}
		if changed := si.Name == "svc1"; changed == same || changed == was {
			t.Errorf("import %s: digest kept %v, object kept %v; want both %v", si.Name, same, was, !changed)
		}
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
