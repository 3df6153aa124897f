package contract

import (
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

func gatewaysSource(cluster string, loc Locality, unhealthy bool) Source {
	return Source{Namespace: "dev-team", GatewayDNS: "gw", Cluster: cluster, Kind: KindGateways,
		Hostname: GatewaysHostname("gw", "dev-team", "xcc.test"), Locality: loc, Unhealthy: unhealthy}
}

// The controller's gateways slices read back with their source, health,
// policy and the failover TTL.
func TestGatewaysRoundTrip(t *testing.T) {
	loc := Locality{Policy: PolicyFailover, Order: []string{"cluster-b", "cluster-a"}}
	for _, unhealthy := range []bool{false, true} {
		built := Build(gatewaysSource("cluster-a", loc, unhealthy), Classify([]string{"192.0.2.10", "2001:db8::a"}, nil, "xcc.test"))
		if len(built) != 2 {
			t.Fatalf("%d slices, want one per family", len(built))
		}
		for _, s := range built {
			if s.Labels[LabelRecord] != string(KindGateways) || s.Annotations[AnnotationLocality] != "failover" || s.Annotations[AnnotationFailoverOrder] != "cluster-b,cluster-a" {
				t.Errorf("slice %s: labels %v annotations %v", s.Name, s.Labels, s.Annotations)
			}
			p, ok, problems := Parse(s, "xcc.test")
			if !ok || len(problems) > 0 {
				t.Fatalf("Parse(%s): ok %v, %v", s.Name, ok, problems)
			}
			if p.Kind != KindGateways || p.Source != "cluster-a" || p.GatewayDNS != "gw" || p.TTL != DefaultGatewaysTTL || !p.Locality.Equal(loc) {
				t.Errorf("Parse(%s) = %+v", s.Name, p)
			}
			if got := len(p.Hosts) > 0; got == unhealthy || len(p.Hosts)+len(p.Unready) != 1 {
				t.Errorf("unhealthy %v: ready %v, unready %v", unhealthy, p.Hosts, p.Unready)
			}
		}
	}
	// The per-cluster names never carry health or a policy.
	s := Build(Source{Namespace: "dev-team", GatewayDNS: "gw", Cluster: "cluster-a", Kind: KindGateway,
		Hostname: GatewayHostname("cluster-a", "dev-team", "xcc.test"), Locality: loc, Unhealthy: true}, Classify([]string{"192.0.2.10"}, nil, "xcc.test"))[0]
	if _, set := s.Annotations[AnnotationLocality]; set || !*s.Endpoints[0].Conditions.Ready {
		t.Errorf("gateway slice with locality or not ready: %v %v", s.Annotations, s.Endpoints)
	}
}

// A multi-cluster slice whose policy, order or source cannot be read
// exactly is refused whole, never guessed.
func TestParseGatewaysRefused(t *testing.T) {
	good := func() *discoveryv1.EndpointSlice {
		return Build(gatewaysSource("cluster-a", Locality{Policy: PolicyLocal}, false), Classify([]string{"192.0.2.10"}, nil, "xcc.test"))[0]
	}
	for name, mutate := range map[string]func(*discoveryv1.EndpointSlice){
		"unknown policy":         func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationLocality] = "nearest" },
		"policy in API spelling": func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationLocality] = "Local" },
		"empty policy":           func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationLocality] = "" },
		"failover without order": func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationLocality] = "failover" },
		"order without failover": func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationFailoverOrder] = "cluster-a" },
		"order with a bad cluster": func(s *discoveryv1.EndpointSlice) {
			s.Annotations[AnnotationLocality] = "failover"
			s.Annotations[AnnotationFailoverOrder] = "a,B"
		},
		"order with a cluster twice": func(s *discoveryv1.EndpointSlice) {
			s.Annotations[AnnotationLocality] = "failover"
			s.Annotations[AnnotationFailoverOrder] = "a,b,a"
		},
		"order with an empty entry": func(s *discoveryv1.EndpointSlice) {
			s.Annotations[AnnotationLocality] = "failover"
			s.Annotations[AnnotationFailoverOrder] = "a,,b"
		},
		"no source cluster":         func(s *discoveryv1.EndpointSlice) { delete(s.Labels, LabelSourceCluster) },
		"source cluster any":        func(s *discoveryv1.EndpointSlice) { s.Labels[LabelSourceCluster] = "any" },
		"another GatewayDNS's name": func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationGatewayRef] = "dev-team/other" },
		"another namespace's name":  func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationGatewayRef] = "other/gw" },
	} {
		s := good()
		mutate(s)
		if p, ok, problems := Parse(s, "xcc.test"); ok || len(problems) != 1 {
			t.Errorf("%s: Parse = %+v, ok %v, problems %v; want refused with one problem", name, p, ok, problems)
		}
	}
	// No locality annotation at all: all.
	s := good()
	delete(s.Annotations, AnnotationLocality)
	if p, ok, _ := Parse(s, "xcc.test"); !ok || p.Locality.Policy != PolicyAll {
		t.Errorf("no locality: %+v ok %v, want policy all", p.Locality, ok)
	}
}

func TestLocalityFromAPI(t *testing.T) {
	for _, tc := range []struct {
		in   *v1alpha1.Locality
		want Locality
		ok   bool
	}{
		{nil, Locality{Policy: PolicyAll}, true},
		{&v1alpha1.Locality{}, Locality{Policy: PolicyAll}, true},
		{&v1alpha1.Locality{Policy: v1alpha1.LocalityLocal}, Locality{Policy: PolicyLocal}, true},
		{&v1alpha1.Locality{Policy: v1alpha1.LocalityFailover, FailoverOrder: []string{"b", "a"}}, Locality{Policy: PolicyFailover, Order: []string{"b", "a"}}, true},
		{&v1alpha1.Locality{Policy: v1alpha1.LocalityFailover}, Locality{}, false},
		{&v1alpha1.Locality{Policy: v1alpha1.LocalityAll, FailoverOrder: []string{"a"}}, Locality{}, false},
		{&v1alpha1.Locality{Policy: "local"}, Locality{}, false},
	} {
		got, err := LocalityFromAPI(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("LocalityFromAPI(%+v) = %+v, %v; want %+v ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func src(cluster string, healthy bool, hosts ...string) SourceHosts {
	if healthy {
		return SourceHosts{Cluster: cluster, Ready: hosts}
	}
	return SourceHosts{Cluster: cluster, Unready: hosts}
}

func TestSelect(t *testing.T) {
	a, b, c := src("cluster-a", true, "192.0.2.10", "2001:db8::a"), src("cluster-b", true, "192.0.2.20"), src("cluster-c", true, "192.0.2.30")
	aDown, bDown, cDown := src("cluster-a", false, "192.0.2.10", "2001:db8::a"), src("cluster-b", false, "192.0.2.20"), src("cluster-c", false, "192.0.2.30")
	cHost, dHost := src("cluster-c", true, "lb-c.example.net"), src("cluster-d", true, "lb-d.example.net")
	all := Locality{Policy: PolicyAll}
	local := Locality{Policy: PolicyLocal}
	failover := Locality{Policy: PolicyFailover, Order: []string{"cluster-b", "cluster-a"}}
	for _, tc := range []struct {
		name     string
		loc      Locality
		sources  []SourceHosts
		self     []string
		hosts    []string
		fallback bool
	}{
		{"all: every healthy gateway", all, []SourceHosts{a, bDown, c}, []string{"cluster-b"}, []string{"192.0.2.10", "2001:db8::a", "192.0.2.30"}, false},
		{"zero locality is all", Locality{}, []SourceHosts{a, b}, nil, []string{"192.0.2.10", "2001:db8::a", "192.0.2.20"}, false},
		{"none healthy: every published gateway", all, []SourceHosts{aDown, bDown}, nil, []string{"192.0.2.10", "2001:db8::a", "192.0.2.20"}, true},
		{"local: own first", local, []SourceHosts{a, b, c}, []string{"cluster-b"}, []string{"192.0.2.20"}, false},
		{"local: another cluster's own", local, []SourceHosts{a, b, c}, []string{"cluster-a"}, []string{"192.0.2.10", "2001:db8::a"}, false},
		{"local: own unhealthy, the others", local, []SourceHosts{a, bDown, c}, []string{"cluster-b"}, []string{"192.0.2.10", "2001:db8::a", "192.0.2.30"}, false},
		{"local: twins are one place", local, []SourceHosts{a, b, c}, []string{"cluster-b", "cluster-c"}, []string{"192.0.2.20", "192.0.2.30"}, false},
		{"local: no self marker, all healthy", local, []SourceHosts{a, b}, nil, []string{"192.0.2.10", "2001:db8::a", "192.0.2.20"}, false},
		{"local: none healthy, all published", local, []SourceHosts{aDown, bDown}, []string{"cluster-b"}, []string{"192.0.2.10", "2001:db8::a", "192.0.2.20"}, true},
		{"failover: first of the order", failover, []SourceHosts{a, b, c}, []string{"cluster-a"}, []string{"192.0.2.20"}, false},
		{"failover: next of the order", failover, []SourceHosts{a, bDown, c}, nil, []string{"192.0.2.10", "2001:db8::a"}, false},
		{"failover: none of the order, the rest", failover, []SourceHosts{aDown, bDown, c}, nil, []string{"192.0.2.30"}, false},
		{"failover: none healthy, all published", failover, []SourceHosts{aDown, bDown, cDown}, nil, []string{"192.0.2.10", "2001:db8::a", "192.0.2.20", "192.0.2.30"}, true},
		{"hostname beside addresses: addresses only", all, []SourceHosts{a, cHost}, nil, []string{"192.0.2.10", "2001:db8::a"}, false},
		{"hostnames only: one CNAME, first by cluster", all, []SourceHosts{cHost, dHost}, nil, []string{"lb-c.example.net"}, false},
		{"local: own hostname is the CNAME", local, []SourceHosts{a, cHost}, []string{"cluster-c"}, []string{"lb-c.example.net"}, false},
		{"failover: selected hostname is the CNAME", Locality{Policy: PolicyFailover, Order: []string{"cluster-d", "cluster-a"}}, []SourceHosts{a, dHost}, nil, []string{"lb-d.example.net"}, false},
		{"duplicate addresses of twins once", all, []SourceHosts{a, src("cluster-a2", true, "192.0.2.10")}, nil, []string{"192.0.2.10", "2001:db8::a"}, false},
		{"nothing published", all, nil, nil, nil, true},
	} {
		got := Select(tc.loc, tc.sources, tc.self)
		if !slices.Equal(got.Hosts, tc.hosts) || got.Fallback != tc.fallback {
			t.Errorf("%s: Select = %+v, want hosts %v fallback %v", tc.name, got, tc.hosts, tc.fallback)
		}
	}
}

func TestAnswered(t *testing.T) {
	a, b := src("cluster-a", true, "192.0.2.10"), src("cluster-b", true, "192.0.2.20")
	cDown, dHost := src("cluster-c", false, "192.0.2.30"), src("cluster-d", true, "lb-d.example.net")
	sources := []SourceHosts{a, b, cDown, dHost}
	selves := [][]string{{"cluster-a"}, {"cluster-b"}, {"cluster-c"}, {"cluster-d"}}
	keys := func(m map[string]bool) string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	for loc, want := range map[*Locality]string{
		{Policy: PolicyAll}: "cluster-a,cluster-b",
		// cluster-d's DNS answers its own hostname gateway.
		{Policy: PolicyLocal}: "cluster-a,cluster-b,cluster-d",
		{Policy: PolicyFailover, Order: []string{"cluster-b", "a"}}: "cluster-b",
	} {
		if got := keys(Answered(*loc, sources, selves)); got != want {
			t.Errorf("Answered(%+v) = %s, want %s", *loc, got, want)
		}
	}
}

func TestSelfMarker(t *testing.T) {
	s := BuildSelf(Self{Namespace: "dev-team", Clusters: []string{"cluster-b", "cluster-a", "cluster-b"}})
	if s.Name != SelfSliceName("dev-team") || len(s.Name) > 63 || s.Labels[LabelRecord] != string(KindSelf) || len(s.Endpoints) != 0 {
		t.Fatalf("BuildSelf = %+v", s)
	}
	if p, ok, problems := Parse(s, "xcc.test"); ok || len(problems) > 0 || len(p.Hosts) > 0 {
		t.Errorf("the marker publishes a name: %+v %v %v", p, ok, problems)
	}
	got, err := ParseSelf(s)
	if err != nil || got.Namespace != "dev-team" || !slices.Equal(got.Clusters, []string{"cluster-a", "cluster-b"}) {
		t.Errorf("ParseSelf = %+v, %v", got, err)
	}
	if n := SelfSliceName(strings.Repeat("n", 63)); len(n) > 63 || n == SelfSliceName(strings.Repeat("n", 62)) {
		t.Errorf("SelfSliceName of a long namespace: %q", n)
	}
	for name, mutate := range map[string]func(*discoveryv1.EndpointSlice){
		"named for another namespace": func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationSelfNamespace] = "other-team" },
		"bad cluster":                 func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationSelfClusters] = "cluster-a,Cluster-B" },
		"no cluster":                  func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationSelfClusters] = "" },
	} {
		bad := BuildSelf(Self{Namespace: "dev-team", Clusters: []string{"cluster-a"}})
		mutate(bad)
		if got, err := ParseSelf(bad); err == nil {
			t.Errorf("%s: ParseSelf = %+v, want refused", name, got)
		}
	}
}
