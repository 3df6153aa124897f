package objects

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

func conditionsView(st ExportStatus) string {
	var v []string
	for _, c := range st.Conditions {
		v = append(v, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return st.Namespace + "/" + st.Name + " " + strings.Join(v, " ")
}

func TestComputeExportStatus(t *testing.T) {
	invalid := aggregate.Export{Cluster: "a", Namespace: ns, Name: "gone", Created: t0}
	cases := []struct {
		name    string
		exports []aggregate.Export
		written bool
		want    []string
	}{
		{"written everywhere", []aggregate.Export{export("a", 0, false, tcp("http", 80))}, true,
			[]string{"shop/cart Valid=True/Valid Conflict=False/NoConflicts Ready=True/Exported"}},
		{"not yet written everywhere", []aggregate.Export{export("a", 0, false, tcp("http", 80))}, false,
			[]string{"shop/cart Valid=True/Valid Conflict=False/NoConflicts Ready=False/Pending"}},
		{"invalid export", []aggregate.Export{invalid}, true,
			[]string{"shop/gone Valid=False/NoService Conflict=False/NotValid Ready=False/NotValid"}},
		{"conflicting ports, this member lost", []aggregate.Export{export("b", 0, false, tcp("http", 80)), export("a", 1, false, tcp("http", 8080))}, true,
			[]string{"shop/cart Valid=True/Valid Conflict=True/PortConflict Ready=True/Exported"}},
		{"another member's export only", []aggregate.Export{export("b", 0, false, tcp("http", 80))}, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Compute(Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: aggregated(t, c.exports...),
				Imports: map[aggregate.Key]ImportState{key: {Written: c.written}}})
			var got []string
			for _, st := range out.Exports {
				got = append(got, conditionsView(st))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("export status\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestComputeConflictingPorts: the import has the winner's port; each
// source's slices carry their own target port under the port's name, for
// the ports its Service declares as the import does: b's http is 8080,
// not the import's 80, so b's endpoints take no traffic of http (the
// conformance suite's StrictPortConflict), only of admin, which b adds.
func TestComputeConflictingPorts(t *testing.T) {
	res := aggregated(t, export("a", 0, false, tcp("http", 80)), export("b", 1, false, tcp("http", 8080), tcp("admin", 9000)))
	out := Compute(Input{Cluster: "b", Namespaces: map[string]bool{ns: true}, Result: res,
		Imports: map[aggregate.Key]ImportState{key: {Endpoints: map[string][]*discoveryv1.EndpointSlice{
			"a": {slice("a1", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{port("http", 8000)}, ep("10.1.0.1"))},
			"b": {slice("b1", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{port("http", 8001), port("admin", 9001)}, ep("10.2.0.1"))},
		}}}})
	var ports []string
	for _, p := range out.Imports[0].Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s/%d", p.Name, p.Port))
	}
	if want := []string{"admin/9000", "http/80"}; !slices.Equal(ports, want) {
		t.Errorf("import ports %q: want %q", ports, want)
	}
	want := []string{
		"a IPv4 ports=http/TCP/8000 eps=10.1.0.1",
		"b IPv4 ports=admin/TCP/9001 eps=10.2.0.1",
	}
	if got := sliceViews(out); !slices.Equal(got, want) {
		t.Errorf("slices\n got %q\nwant %q", got, want)
	}
	if got := conditionsView(out.Exports[0]); !strings.Contains(got, "Conflict=True/PortConflict") {
		t.Errorf("export of b: %s: want the port conflict", got)
	}
}

func TestComputeClusterIPsRead(t *testing.T) {
	cases := []struct {
		in   []string
		want []string
	}{
		{nil, nil},
		{[]string{"fd00::10", "10.96.0.10"}, []string{"fd00::10", "10.96.0.10"}},
		{[]string{"None", "10.96.0.10", "10.96.0.11", "fe80::1%eth0", "fd00::1", "fd00::2"}, []string{"10.96.0.10", "fd00::1"}},
		{[]string{"::ffff:10.96.0.10"}, []string{"10.96.0.10"}},
	}
	for _, c := range cases {
		res := aggregated(t, export("a", 0, false, tcp("http", 80)))
		out := Compute(Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: res,
			Imports: map[aggregate.Key]ImportState{key: {ClusterIPs: c.in}}})
		if got := out.Imports[0].Spec.IPs; !slices.Equal(got, c.want) {
			t.Errorf("ClusterIPs %q: ips %q, want %q", c.in, got, c.want)
		}
	}
}

// TestComputeUnnamedAmongNamedPorts: the union of an unnamed and a named
// port is no valid Service; the derived Service keeps the named one.
func TestComputeUnnamedAmongNamedPorts(t *testing.T) {
	res := aggregated(t, export("a", 0, false, tcp("", 80)), export("b", 1, false, tcp("http", 8080)))
	out := Compute(Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: res})
	var ports []string
	for _, p := range out.Services[0].Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s/%d", p.Name, p.Port))
	}
	if !slices.Equal(ports, []string{"http/8080"}) || len(out.Refused) != 1 {
		t.Errorf("derived Service ports %q, refused %q: want http/8080 and the unnamed port refused", ports, out.Refused)
	}
	single := Compute(Input{Cluster: "a", Namespaces: map[string]bool{ns: true}, Result: aggregated(t, export("a", 0, false, tcp("", 80)))})
	if n := len(single.Services[0].Spec.Ports); n != 1 {
		t.Errorf("%d ports: a single unnamed port is a valid Service", n)
	}
}

// importStatusView is a ServiceImport's status as one line: clusters,
// endpointSliceObjects, then each condition with its reason.
func importStatusView(st mcsv1beta1.ServiceImportStatus) string {
	var v []string
	for _, c := range st.Clusters {
		v = append(v, c.Cluster)
	}
	line := "clusters=" + strings.Join(v, ",") + " " + string(st.EndpointSliceObjects)
	for _, c := range st.Conditions {
		line += fmt.Sprintf(" %s=%s/%s", c.Type, c.Status, c.Reason)
	}
	return line
}

// TestComputeImportStatus: a ClusterSetIP import is Ready once its
// derived Service has an address (then in spec.ips), Pending before; a
// Headless one as soon as it is written. The writer owns the times.
func TestComputeImportStatus(t *testing.T) {
	derived := DerivedServiceName(ns, svc)
	clusterSetIP := aggregated(t, export("a", 0, false, tcp("http", 80)), export("b", 1, false, tcp("http", 80)))
	headless := aggregated(t, export("a", 0, true, tcp("db", 5432)))
	cases := []struct {
		name       string
		res        aggregate.Result
		clusterIPs []string
		want       string
		message    string // a part of Ready's message
	}{
		{"ClusterSetIP before its ClusterIP", clusterSetIP, nil,
			"clusters=a,b Present Ready=False/Pending", "awaiting the ClusterIP this cluster's API server allocates to the derived Service shop/" + derived},
		{"ClusterSetIP with no address among its ClusterIPs", clusterSetIP, []string{"None"},
			"clusters=a,b Present Ready=False/Pending", "awaiting"},
		{"ClusterSetIP with its ClusterIPs", clusterSetIP, []string{"10.96.0.10", "fd00::10"},
			"clusters=a,b Present Ready=True/Ready", "ClusterSetIP 10.96.0.10, fd00::10"},
		{"Headless, written", headless, nil, "clusters=a Present Ready=True/Ready", "Headless"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := Compute(Input{Cluster: "b", Namespaces: map[string]bool{ns: true}, Result: c.res,
				Imports: map[aggregate.Key]ImportState{key: {ClusterIPs: c.clusterIPs}}})
			st := out.Imports[0].Status
			if got := importStatusView(st); got != c.want {
				t.Errorf("status %q, want %q", got, c.want)
			}
			ready := meta.FindStatusCondition(st.Conditions, string(mcsv1beta1.ServiceImportConditionReady))
			if ready == nil || !strings.Contains(ready.Message, c.message) {
				t.Fatalf("Ready %+v: want a message with %q", ready, c.message)
			}
			if !ready.LastTransitionTime.IsZero() || ready.ObservedGeneration != 0 {
				t.Errorf("Ready at %v, generation %d: the writer sets them, Compute reads no clock", ready.LastTransitionTime, ready.ObservedGeneration)
			}
			if (ready.Status == metav1.ConditionTrue) != (len(out.Imports[0].Spec.IPs) > 0 || c.res.Imports[0].Type == aggregate.ImportHeadless) {
				t.Errorf("Ready %s with spec.ips %v: a ClusterSetIP import is Ready exactly when it has ips", ready.Status, out.Imports[0].Spec.IPs)
			}
		})
	}
}
