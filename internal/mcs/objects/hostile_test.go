package objects

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// computeOne computes member "m"'s objects of an import of ns/svc whose
// only exporter "a" has the given slices.
func computeOne(t *testing.T, lim Limits, in ...*discoveryv1.EndpointSlice) Objects {
	t.Helper()
	res := aggregated(t, export("a", 0, true, tcp("db", 5432), tcp("", 80)))
	return Compute(Input{
		Cluster: "m", Namespaces: map[string]bool{ns: true}, Result: res, Limits: lim,
		Imports: map[aggregate.Key]ImportState{key: {Endpoints: map[string][]*discoveryv1.EndpointSlice{"a": in}}},
	})
}

func TestComputeHostileEndpoints(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	db := []discoveryv1.EndpointPort{port("db", 5432)}
	cases := []struct {
		name    string
		in      []*discoveryv1.EndpointSlice
		want    []string
		refused int
	}{
		{"not an address, loopback, link-local, unspecified", []*discoveryv1.EndpointSlice{slice("s", v4, db,
			ep("10.0.0.300"), ep("127.0.0.1"), ep("169.254.0.1"), ep("0.0.0.0"), ep("10.1.0.1"))},
			[]string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.1"}, 4},
		{"wrong family", []*discoveryv1.EndpointSlice{slice("s", v4, db, ep("fd00::1"), ep("10.1.0.1")), slice("t", v6, db, ep("10.1.0.2"))},
			[]string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.1"}, 2},
		{"FQDN slice", []*discoveryv1.EndpointSlice{slice("s", discoveryv1.AddressTypeFQDN, db, ep("example.com"))}, nil, 1},
		{"hostname not a label", []*discoveryv1.EndpointSlice{slice("s", v4, db,
			ep("10.1.0.1", hostname("a.b")), ep("10.1.0.2", hostname("UPPER")), ep("10.1.0.3", hostname(strings.Repeat("x", 64))), ep("10.1.0.4", hostname("db-0")))},
			[]string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.4(db-0)"}, 3},
		{"not ready, not serving, terminating, no address", []*discoveryv1.EndpointSlice{slice("s", v4, db,
			ep("10.1.0.1", func(e *discoveryv1.Endpoint) { e.Conditions.Ready = ptr.To(false) }),
			ep("10.1.0.2", func(e *discoveryv1.Endpoint) { e.Conditions.Serving = ptr.To(false) }),
			ep("10.1.0.3", func(e *discoveryv1.Endpoint) { e.Conditions.Terminating = ptr.To(true) }),
			ep("10.1.0.4", func(e *discoveryv1.Endpoint) { e.Addresses = nil }),
			ep("10.1.0.5"))},
			[]string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.5"}, 0},
		{"one address twice, second address ignored", []*discoveryv1.EndpointSlice{slice("s", v4, db,
			ep("10.1.0.1"), ep("10.1.0.1"), ep("10.1.0.2", func(e *discoveryv1.Endpoint) { e.Addresses = append(e.Addresses, "8.8.8.8") }))},
			[]string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.1,10.1.0.2"}, 0},
		{"one address in two slices", []*discoveryv1.EndpointSlice{slice("t", v4, db, ep("10.1.0.1", hostname("db-1"))), slice("s", v4, db, ep("10.1.0.1", hostname("db-0")))},
			[]string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.1(db-0)"}, 0},
		{"bad, foreign and repeated ports", []*discoveryv1.EndpointSlice{slice("s", v4, []discoveryv1.EndpointPort{
			port("db", 5432), port("db", 6000), port("Bad_Name", 1), port("db", 0),
			{Name: ptr.To("db"), Protocol: ptr.To(corev1.Protocol("ICMP")), Port: ptr.To(int32(1))},
			port("admin", 9000), {Port: ptr.To(int32(8080))}}, ep("10.1.0.1"))},
			[]string{"a IPv4 headless ports=/TCP/8080,db/TCP/5432 eps=10.1.0.1"}, 3},
		{"thousands refused, few reported", []*discoveryv1.EndpointSlice{slice("s", v4, db, slices.Repeat([]discoveryv1.Endpoint{ep("::1")}, 5000)...)},
			nil, maxRefusedPerSource + 1},
		{"nil slice", []*discoveryv1.EndpointSlice{nil, slice("s", v4, db, ep("10.1.0.1"))},
			[]string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.1"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := computeOne(t, Limits{}, c.in...)
			if got := sliceViews(out); !slices.Equal(got, c.want) {
				t.Errorf("slices\n got %q\nwant %q", got, c.want)
			}
			if len(out.Refused) != c.refused {
				t.Errorf("refused %d: want %d: %q", len(out.Refused), c.refused, out.Refused)
			}
		})
	}
}

// manyEndpoints is one IPv4 slice of n endpoints 10.x.y.z.
func manyEndpoints(name string, n int, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	s := slice(name, discoveryv1.AddressTypeIPv4, ports)
	for i := range n {
		s.Endpoints = append(s.Endpoints, ep(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)))
	}
	return s
}

func TestComputeThousandsOfEndpoints(t *testing.T) {
	out := computeOne(t, Limits{}, manyEndpoints("s", 5000, []discoveryv1.EndpointPort{port("db", 5432)}))
	total := 0
	for _, s := range out.Slices {
		if len(s.Endpoints) > MaxEndpointsPerSlice {
			t.Errorf("slice %s has %d endpoints, more than %d", s.Name, len(s.Endpoints), MaxEndpointsPerSlice)
		}
		total += len(s.Endpoints)
	}
	if total != DefaultEndpointsPerSource || len(out.Slices) != DefaultEndpointsPerSource/MaxEndpointsPerSlice {
		t.Errorf("%d endpoints in %d slices: want %d in %d", total, len(out.Slices), DefaultEndpointsPerSource, DefaultEndpointsPerSource/MaxEndpointsPerSlice)
	}
	if len(out.Refused) != 1 || !strings.Contains(out.Refused[0], "5000 endpoints") {
		t.Errorf("refused %q: want the cut named", out.Refused)
	}
	names := map[string]bool{}
	for _, s := range out.Slices {
		if names[s.Name] || len(s.Name) > 253 {
			t.Errorf("slice name %q repeated or too long", s.Name)
		}
		names[s.Name] = true
	}
}

func TestComputePortSetsBounded(t *testing.T) {
	var in []*discoveryv1.EndpointSlice
	for i := range 20 {
		in = append(in, slice(fmt.Sprintf("s%02d", i), discoveryv1.AddressTypeIPv4,
			[]discoveryv1.EndpointPort{port("db", int32(5000+i))}, ep(fmt.Sprintf("10.1.0.%d", i+1))))
	}
	out := computeOne(t, Limits{PortSetsPerSource: 3, EndpointsPerSource: 2}, in...)
	if n := len(out.Slices); n != 2 {
		t.Errorf("%d slices: want 2 (3 port sets, 2 endpoints)", n)
	}
	if len(out.Refused) != 2 {
		t.Errorf("refused %q: want the port sets and the endpoints cut", out.Refused)
	}
}

func TestComputeDeterministic(t *testing.T) {
	res := aggregated(t, export("a", 0, false, tcp("http", 80)), export("b", 0, false, tcp("http", 80)))
	sa := []*discoveryv1.EndpointSlice{
		manyEndpoints("s1", 150, []discoveryv1.EndpointPort{port("http", 8080)}),
		slice("s2", discoveryv1.AddressTypeIPv6, []discoveryv1.EndpointPort{port("http", 8080)}, ep("fd00::2"), ep("fd00::1")),
	}
	in := Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: res, Imports: map[aggregate.Key]ImportState{key: {
		Endpoints: map[string][]*discoveryv1.EndpointSlice{"a": sa, "b": {manyEndpoints("s3", 3, nil)}}}}}
	first := fmt.Sprint(sliceNames(Compute(in)), sliceViews(Compute(in)))
	for range 10 {
		rand.Shuffle(len(sa), func(i, j int) { sa[i], sa[j] = sa[j], sa[i] })
		eps := sa[0].Endpoints
		rand.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
		if got := fmt.Sprint(sliceNames(Compute(in)), sliceViews(Compute(in))); got != first {
			t.Fatalf("output changed with the input's order:\n%s\n%s", got, first)
		}
	}
}

func sliceNames(out Objects) []string {
	var n []string
	for _, s := range out.Slices {
		n = append(n, s.Name)
	}
	return n
}
