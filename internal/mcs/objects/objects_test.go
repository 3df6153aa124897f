package objects

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

const (
	ns  = "shop"
	svc = "cart"
)

var key = aggregate.Key{Namespace: ns, Name: svc}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func tcp(name string, port int32) aggregate.Port {
	return aggregate.Port{Name: name, Protocol: "TCP", Port: port}
}

// export of ns/svc in cluster, created sec seconds after t0.
func export(cluster string, sec int, headless bool, ports ...aggregate.Port) aggregate.Export {
	s := &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.0.0.1", Ports: ports}
	if headless {
		s.ClusterIP = aggregate.ClusterIPNone
	}
	return aggregate.Export{Cluster: cluster, Namespace: ns, Name: svc, Created: t0.Add(time.Duration(sec) * time.Second), Service: s}
}

func aggregated(t *testing.T, exports ...aggregate.Export) aggregate.Result {
	t.Helper()
	r, err := aggregate.Aggregate(exports)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ep is a ready endpoint; edit changes it.
func ep(addr string, edit ...func(*discoveryv1.Endpoint)) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}
	for _, f := range edit {
		f(&e)
	}
	return e
}

func hostname(h string) func(*discoveryv1.Endpoint) {
	return func(e *discoveryv1.Endpoint) { e.Hostname = ptr.To(h) }
}

func node(n string) func(*discoveryv1.Endpoint) {
	return func(e *discoveryv1.Endpoint) { e.NodeName = ptr.To(n) }
}

func port(name string, p int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(p)}
}

func slice(name string, t discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: t, Ports: ports, Endpoints: eps}
	s.Name = name
	return s
}

// sliceView is a slice as one line: source cluster, family, headless
// mark, ports and endpoints (address, hostname, node).
func sliceView(s *discoveryv1.EndpointSlice) string {
	v := s.Labels[LabelSourceCluster] + " " + string(s.AddressType)
	if _, ok := s.Labels[LabelHeadless]; ok {
		v += " headless"
	}
	var ports []string
	for _, p := range s.Ports {
		ports = append(ports, fmt.Sprintf("%s/%s/%d", *p.Name, *p.Protocol, *p.Port))
	}
	v += " ports=" + strings.Join(ports, ",")
	var eps []string
	for _, e := range s.Endpoints {
		x := e.Addresses[0]
		if e.Hostname != nil {
			x += "(" + *e.Hostname + ")"
		}
		if e.NodeName != nil {
			x += "@" + *e.NodeName
		}
		eps = append(eps, x)
	}
	return v + " eps=" + strings.Join(eps, ",")
}

func sliceViews(out Objects) []string {
	var v []string
	for _, s := range out.Slices {
		v = append(v, sliceView(s))
	}
	return v
}

func TestComputeClusterSetIP(t *testing.T) {
	res := aggregated(t, export("a", 0, false, tcp("http", 80)), export("b", 1, false, tcp("http", 80)))
	in := Input{
		Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: res,
		Imports: map[aggregate.Key]ImportState{key: {
			ClusterIPs: []string{"10.96.0.10", "fd00::10"},
			Endpoints: map[string][]*discoveryv1.EndpointSlice{
				"a": {slice("cart-a1", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{port("http", 8080)},
					ep("10.1.0.2", node("node-1")), ep("10.1.0.1", hostname("web-0"), node("node-2")))},
				"b": {slice("cart-b1", discoveryv1.AddressTypeIPv6, []discoveryv1.EndpointPort{port("http", 9090)},
					ep("fd00:2::1", node("node-1")))},
				"c": {slice("cart-c1", discoveryv1.AddressTypeIPv4, nil, ep("10.3.0.1"))},
			},
		}},
	}
	out := Compute(in)
	if len(out.Imports) != 1 || len(out.Services) != 1 {
		t.Fatalf("imports %d, services %d: want 1 each", len(out.Imports), len(out.Services))
	}
	si, ds := out.Imports[0], out.Services[0]
	derived := DerivedServiceName(ns, svc)
	if si.Name != svc || si.Namespace != ns || si.Spec.Type != "ClusterSetIP" {
		t.Errorf("ServiceImport %s/%s type %s", si.Namespace, si.Name, si.Spec.Type)
	}
	if !slices.Equal(si.Spec.IPs, []string{"10.96.0.10", "fd00::10"}) || len(si.Spec.IPFamilies) != 2 {
		t.Errorf("ips %v families %v: want the derived Service's ClusterIPs", si.Spec.IPs, si.Spec.IPFamilies)
	}
	if len(si.Status.Clusters) != 2 || si.Status.Clusters[0].Cluster != "a" || si.Status.Clusters[1].Cluster != "b" {
		t.Errorf("status.clusters %v: want a, b", si.Status.Clusters)
	}
	if ds.Name != derived || ds.Spec.Selector != nil || ds.Spec.Type != corev1.ServiceTypeClusterIP ||
		ds.Spec.Ports[0].TargetPort.IntValue() != 80 || ds.Labels[LabelServiceName] != svc || !Ours(ds.Labels, false) {
		t.Errorf("derived Service %+v", ds)
	}
	// Node names only on the member's own endpoints; c is no exporter.
	want := []string{
		"a IPv4 ports=http/TCP/8080 eps=10.1.0.1(web-0)@node-2,10.1.0.2@node-1",
		"b IPv6 ports=http/TCP/9090 eps=fd00:2::1",
	}
	if got := sliceViews(out); !slices.Equal(got, want) {
		t.Errorf("slices\n got %q\nwant %q", got, want)
	}
	for _, s := range out.Slices {
		if s.Labels[LabelKubeServiceName] != derived || !Ours(s.Labels, true) || s.Namespace != ns {
			t.Errorf("slice %s labels %v", s.Name, s.Labels)
		}
		if e := s.Endpoints[0].Conditions; !*e.Ready || !*e.Serving || *e.Terminating {
			t.Errorf("slice %s conditions %+v: want ready, serving, not terminating", s.Name, e)
		}
	}
}

func TestComputeHeadless(t *testing.T) {
	res := aggregated(t, export("a", 0, true, tcp("db", 5432)))
	out := Compute(Input{
		Cluster: "b", Namespaces: map[string]bool{ns: true}, Result: res,
		Imports: map[aggregate.Key]ImportState{key: {
			ClusterIPs: []string{"10.96.0.10"},
			Endpoints: map[string][]*discoveryv1.EndpointSlice{"a": {slice("x", discoveryv1.AddressTypeIPv4,
				[]discoveryv1.EndpointPort{port("db", 5432)}, ep("10.1.0.1", hostname("db-0"), node("n")))}},
		}},
	})
	if len(out.Services) != 0 {
		t.Errorf("services %d: a Headless import has no derived Service", len(out.Services))
	}
	if si := out.Imports[0]; si.Spec.Type != "Headless" || si.Spec.IPs != nil || !slices.Equal(si.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) {
		t.Errorf("ServiceImport type %s ips %v families %v: want Headless without ips, family IPv4 of its endpoints", si.Spec.Type, si.Spec.IPs, si.Spec.IPFamilies)
	}
	want := []string{"a IPv4 headless ports=db/TCP/5432 eps=10.1.0.1(db-0)"}
	if got := sliceViews(out); !slices.Equal(got, want) {
		t.Errorf("slices\n got %q\nwant %q", got, want)
	}
	if got := out.Slices[0].Labels[LabelKubeServiceName]; got != DerivedServiceName(ns, svc) {
		t.Errorf("kubernetes.io/service-name %q: never the user's name %q", got, svc)
	}
	if len(out.Exports) != 0 {
		t.Errorf("exports %v: member b exports nothing", out.Exports)
	}
}

func TestComputeNamespaceMissing(t *testing.T) {
	res := aggregated(t, export("a", 0, false, tcp("http", 80)))
	out := Compute(Input{
		Cluster: "a", Namespaces: map[string]bool{"other": true}, Result: res,
		Imports: map[aggregate.Key]ImportState{key: {Endpoints: map[string][]*discoveryv1.EndpointSlice{
			"a": {slice("x", discoveryv1.AddressTypeIPv4, nil, ep("10.1.0.1"))}}}},
	})
	if len(out.Imports)+len(out.Services)+len(out.Slices) != 0 {
		t.Errorf("wrote %d imports, %d services, %d slices into a member without namespace %s",
			len(out.Imports), len(out.Services), len(out.Slices), ns)
	}
}

// TestEndpointFamilies: a Headless import's families are those of its
// sources' slices, IPv4 first, and none before a source has one.
func TestEndpointFamilies(t *testing.T) {
	imp := aggregate.Import{Clusters: []string{"a", "b"}}
	v4 := slice("x", discoveryv1.AddressTypeIPv4, nil, ep("10.1.0.1"))
	v6 := slice("y", discoveryv1.AddressTypeIPv6, nil, ep("fd00::1"))
	for _, tc := range []struct {
		name      string
		endpoints map[string][]*discoveryv1.EndpointSlice
		want      []corev1.IPFamily
	}{
		{"no slices yet", nil, nil},
		{"IPv4 only", map[string][]*discoveryv1.EndpointSlice{"a": {v4}}, []corev1.IPFamily{corev1.IPv4Protocol}},
		{"IPv6 in one, IPv4 in the other", map[string][]*discoveryv1.EndpointSlice{"a": {v6}, "b": {v4}},
			[]corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}},
		{"a cluster not a source is not read", map[string][]*discoveryv1.EndpointSlice{"c": {v6}}, nil},
	} {
		if got := endpointFamilies(imp, tc.endpoints); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestImportCarriesExportedMetadata: the ServiceImport has the exported
// labels and annotations of the oldest export, lists their keys, and
// keeps its own labels.
func TestImportCarriesExportedMetadata(t *testing.T) {
	a := export("a", 0, false, tcp("http", 80))
	a.Labels = map[string]string{"team": "shop", "tier": "web", LabelManagedBy: "someone"}
	a.Annotations = map[string]string{"note": "hi"}
	b := export("b", 1, false, tcp("http", 80))
	b.Labels = map[string]string{"team": "other"}
	out := Compute(Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: aggregated(t, a, b)})
	si := out.Imports[0]
	want := map[string]string{"team": "shop", "tier": "web", LabelManagedBy: ManagedByValue, LabelServiceName: svc}
	if fmt.Sprint(si.Labels) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", si.Labels, want)
	}
	wantAnn := map[string]string{"note": "hi", AnnotationExportedLabels: "team,tier", AnnotationExportedAnnotations: "note"}
	if fmt.Sprint(si.Annotations) != fmt.Sprint(wantAnn) {
		t.Errorf("annotations %v, want %v", si.Annotations, wantAnn)
	}
	if got := ExportedKeys(si, AnnotationExportedLabels); !slices.Equal(got, []string{"team", "tier"}) {
		t.Errorf("exported label keys %q", got)
	}
	// Every label the controller sets is one no export may set.
	for _, k := range ManagedLabels {
		if !aggregate.Reserved(k) {
			t.Errorf("label %q of the controller's is not reserved", k)
		}
	}
}
