package objects

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// memberInput is member "m"'s input when cluster "a" exports n Services
// shop/svc<i>, created i seconds after t0, of per ready IPv4 endpoints
// each, and cluster "b" exports shop/other with per endpoints.
func memberInput(t *testing.T, n, per int, lim Limits) Input {
	t.Helper()
	http := []discoveryv1.EndpointPort{port("http", 8080)}
	endpoints := func(prefix string) []*discoveryv1.EndpointSlice {
		var eps []discoveryv1.Endpoint
		for j := range per {
			eps = append(eps, ep(fmt.Sprintf("%s.%d.%d", prefix, j/250, j%250+1)))
		}
		return []*discoveryv1.EndpointSlice{slice("s", discoveryv1.AddressTypeIPv4, http, eps...)}
	}
	var exports []aggregate.Export
	states := map[aggregate.Key]ImportState{}
	for i := range n {
		e := export("a", i, false, tcp("http", 80))
		e.Name = fmt.Sprintf("svc%d", i)
		exports = append(exports, e)
		states[aggregate.Key{Namespace: ns, Name: e.Name}] = ImportState{
			Endpoints: map[string][]*discoveryv1.EndpointSlice{"a": endpoints(fmt.Sprintf("10.%d", i+1))}}
	}
	other := export("b", 1000, false, tcp("http", 80))
	other.Name = "other"
	exports = append(exports, other)
	states[aggregate.Key{Namespace: ns, Name: "other"}] = ImportState{
		Endpoints: map[string][]*discoveryv1.EndpointSlice{"b": endpoints("10.200")}}
	return Input{Cluster: "m", Namespaces: map[string]bool{ns: true}, Result: aggregated(t, exports...), Imports: states, Limits: lim}
}

// endpointsBySource counts the endpoints and slices of out per source.
func endpointsBySource(out Objects) (endpoints, slices map[string]int) {
	endpoints, slices = map[string]int{}, map[string]int{}
	for _, s := range out.Slices {
		endpoints[s.Labels[LabelSourceCluster]] += len(s.Endpoints)
		slices[s.Labels[LabelSourceCluster]]++
	}
	return endpoints, slices
}

// endpointsOf counts the endpoints of out's slices of import name.
func endpointsOf(out Objects, name string) int {
	n := 0
	for _, s := range out.Slices {
		if s.Labels[LabelServiceName] == name {
			n += len(s.Endpoints)
		}
	}
	return n
}

func importNamed(out Objects, name string) *mcsv1beta1.ServiceImport {
	for _, si := range out.Imports {
		if si.Name == name {
			return si
		}
	}
	return nil
}

// A member's endpoints in another member, over all its imports, stop at
// the cap: its oldest exports keep theirs, the newest are cut and their
// import says so; another member's are not touched.
func TestComputeMemberEndpointCap(t *testing.T) {
	out := Compute(memberInput(t, 3, 30, Limits{EndpointsPerMember: 50}))
	eps, _ := endpointsBySource(out)
	if eps["a"] != 50 || eps["b"] != 30 {
		t.Errorf("endpoints a=%d b=%d, want a=50 (its cap), b=30", eps["a"], eps["b"])
	}
	if got := []int{endpointsOf(out, "svc0"), endpointsOf(out, "svc1"), endpointsOf(out, "svc2")}; !slices.Equal(got, []int{30, 20, 0}) {
		t.Errorf("endpoints per import %v, want the oldest first: [30 20 0]", got)
	}
	for name, cut := range map[string]bool{"svc0": false, "svc1": true, "svc2": true, "other": false} {
		msg := importNamed(out, name).Status.Conditions[0].Message
		if says := strings.Contains(msg, "cluster a") && strings.Contains(msg, "50 endpoints"); says != cut {
			t.Errorf("import %s: Ready message %q: says the cut %v, want %v", name, msg, says, cut)
		}
	}
	if !slices.ContainsFunc(out.Refused, func(s string) bool { return strings.Contains(s, "import shop/svc2: cluster a") }) {
		t.Errorf("refused %q: want a line for shop/svc2", out.Refused)
	}
}

// The same for the slices a member causes in another.
func TestComputeMemberSliceCap(t *testing.T) {
	out := Compute(memberInput(t, 4, 150, Limits{SlicesPerMember: 5}))
	eps, sl := endpointsBySource(out)
	if sl["a"] != 5 || sl["b"] != 2 {
		t.Errorf("slices a=%d b=%d, want a=5 (its cap), b=2", sl["a"], sl["b"])
	}
	if eps["a"] != 400 {
		t.Errorf("endpoints of a %d, want 400: two whole imports (2 slices each) and the first slice of the third", eps["a"])
	}
	if got := endpointsOf(out, "svc3"); got != 0 {
		t.Errorf("the newest import got %d endpoints, want 0", got)
	}
}

// The cut is the same whatever the order of the imports' creation:
// by age of the member's exports, not by name.
func TestComputeMemberCapByAge(t *testing.T) {
	in := memberInput(t, 2, 30, Limits{EndpointsPerMember: 30})
	// svc1 older than svc0.
	var exports []aggregate.Export
	for i, name := range []string{"svc1", "svc0"} {
		e := export("a", i, false, tcp("http", 80))
		e.Name = name
		exports = append(exports, e)
	}
	in.Result = aggregated(t, exports...)
	out := Compute(in)
	if a, b := endpointsOf(out, "svc1"), endpointsOf(out, "svc0"); a != 30 || b != 0 {
		t.Errorf("svc1 %d svc0 %d, want the older svc1 whole", a, b)
	}
}
