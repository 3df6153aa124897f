package clusterset

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// memberCost is what one source puts into one member.
type memberCost struct{ imports, services, slices, endpoints int }

// costOf counts, in objs, what the exports of source cost the member:
// the imports and derived Services only it exports, and its slices and
// their endpoints.
func costOf(objs objects.Objects, agg aggregate.Result, source string) memberCost {
	var c memberCost
	only := map[string]bool{}
	for _, imp := range agg.Imports {
		if len(imp.Clusters) == 1 && imp.Clusters[0] == source {
			only[imp.Namespace+"/"+imp.Name] = true
		}
	}
	for _, si := range objs.Imports {
		if only[si.Namespace+"/"+si.Name] {
			c.imports++
		}
	}
	for _, s := range objs.Services {
		if only[s.Namespace+"/"+s.Labels[objects.LabelServiceName]] {
			c.services++
		}
	}
	for _, s := range objs.Slices {
		if s.Labels[objects.LabelSourceCluster] == source {
			c.slices++
			c.endpoints += len(s.Endpoints)
		}
	}
	return c
}

// hostileMember is a member at every cap and past it: twice the exports
// it may have, in many namespaces, half of them without a Service, each
// Service of the most port sets a source may have, each with more
// endpoints than a source may have, in both families.
func hostileMember(id string, maxExports int, lim objects.Limits) ([]aggregate.Export, map[aggregate.Key][]*discoveryv1.EndpointSlice) {
	var exports []aggregate.Export
	endpoints := map[aggregate.Key][]*discoveryv1.EndpointSlice{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2 * maxExports {
		ns := fmt.Sprintf("ns%d", i%7)
		e := aggregate.Export{Cluster: id, Namespace: ns, Name: fmt.Sprintf("svc%d", i), Created: t0.Add(time.Duration(i) * time.Second)}
		if i%2 == 0 {
			exports = append(exports, e)
			continue
		}
		var ports []aggregate.Port
		for p := range lim.PortSetsPerSource + 1 {
			ports = append(ports, aggregate.Port{Name: fmt.Sprintf("p%d", p), Protocol: "TCP", Port: int32(1000 + p)})
		}
		e.Service = &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.1", Ports: ports}
		exports = append(exports, e)
		var slices []*discoveryv1.EndpointSlice
		for p, port := range ports {
			for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
				s := &discoveryv1.EndpointSlice{AddressType: family, Ports: []discoveryv1.EndpointPort{
					{Name: ptr.To(port.Name), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(port.Port)}}}
				s.Name = fmt.Sprintf("svc%d-%d-%s", i, p, family)
				for j := range lim.EndpointsPerSource + 1 {
					addr := fmt.Sprintf("10.%d.%d.%d", i%250, p, j%250+1)
					if family == discoveryv1.AddressTypeIPv6 {
						addr = fmt.Sprintf("fd00:%x:%x::%x", i, p, j+1)
					}
					s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr},
						Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
				}
				slices = append(slices, s)
			}
		}
		endpoints[aggregate.Key{Namespace: ns, Name: e.Name}] = slices
	}
	return exports, endpoints
}

// The product of the limits: what one hostile member, at every cap and
// past it, costs another member at most (docs/threat-model.md). The caps
// are scaled down so the test is quick; the bound is the same formula,
// and the document names it with the defaults.
func TestClusterSetHostileMemberCost(t *testing.T) {
	const maxExports = 40
	lim := objects.Limits{EndpointsPerSource: 30, PortSetsPerSource: 3, EndpointsPerMember: 500, SlicesPerMember: 60}
	hostile, hostileEndpoints := hostileMember("evil", maxExports, lim)
	admitted := aggregate.Admit(hostile, maxExports)
	honest := aggregate.Export{Cluster: "good", Namespace: "ns0", Name: "web", Created: time.Unix(0, 0),
		Service: &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.2",
			Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 80}}}}
	agg, err := aggregate.Aggregate(append(admitted, honest))
	if err != nil {
		t.Fatal(err)
	}
	states := map[aggregate.Key]objects.ImportState{}
	for k, s := range hostileEndpoints {
		states[k] = objects.ImportState{Endpoints: map[string][]*discoveryv1.EndpointSlice{"evil": s}}
	}
	web := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.250.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.250.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}
	web.Name = "web-1"
	states[aggregate.Key{Namespace: "ns0", Name: "web"}] = objects.ImportState{Endpoints: map[string][]*discoveryv1.EndpointSlice{"good": {web}}}
	namespaces := map[string]bool{}
	for i := range 7 {
		namespaces[fmt.Sprintf("ns%d", i)] = true
	}
	objs := objects.Compute(objects.Input{Cluster: "other", Namespaces: namespaces, Result: agg, Imports: states, Limits: lim})

	bound := memberCost{imports: maxExports, services: maxExports, slices: lim.SlicesPerMember, endpoints: lim.EndpointsPerMember}
	got := costOf(objs, agg, "evil")
	if got.imports > bound.imports || got.services > bound.services || got.slices > bound.slices || got.endpoints > bound.endpoints {
		t.Errorf("the hostile member costs another %+v, more than the product of the limits %+v", got, bound)
	}
	// At the caps, not under them: the test would hold nothing else.
	if got.imports != bound.imports || got.slices != bound.slices && got.endpoints != bound.endpoints {
		t.Errorf("the hostile member costs %+v: want it at the caps %+v (imports, and slices or endpoints)", got, bound)
	}
	if good := costOf(objs, agg, "good"); good.slices != 1 || good.endpoints != 2 {
		t.Errorf("the honest member's import has %d slices, %d endpoints: want 1, 2 untouched", good.slices, good.endpoints)
	}

	doc, err := os.ReadFile("../../../docs/threat-model.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		fmt.Sprintf("| ServiceImports | %s | `--max-exports-per-member` |", thousands(DefaultMaxExportsPerMember)),
		fmt.Sprintf("| derived Services, one ClusterSetIP each | %s | `--max-exports-per-member` |", thousands(DefaultMaxExportsPerMember)),
		fmt.Sprintf("| EndpointSlices | %s | `--max-slices-per-member` |", thousands(objects.DefaultSlicesPerMember)),
		fmt.Sprintf("| endpoints | %s | `--max-endpoints-per-member` |", thousands(objects.DefaultEndpointsPerMember)),
	} {
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/threat-model.md lacks the row %q", row)
		}
	}
}

// thousands writes n with commas, as the documents do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
