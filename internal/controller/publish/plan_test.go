package publish

import (
	"maps"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

func names(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// singleCluster drops the slices of the multi-cluster name from d: these
// tests are about the per-cluster names and the keep rule they follow.
func singleCluster(d desired.Result) desired.Result {
	d.Slices = slices.DeleteFunc(slices.Clone(d.Slices), func(s *discoveryv1.EndpointSlice) bool {
		return s.Labels[contract.LabelRecord] == string(contract.KindGateways)
	})
	return d
}

// good is a selected cluster whose gateway Service has the given IPs.
func good(name string, addrs ...string) desired.Input {
	return desired.Input{Name: name, Selected: true, ServiceSynced: true, Service: testfixture.GatewayService(testfixture.IPs(addrs...)...)}
}

func TestComputePlan(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	ref := "dev-team/gw"
	desiredAB := singleCluster(desired.Compute(gd, "xcc.test", nil, []desired.Input{good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2")}))
	nameA, nameB := desiredAB.Slices[0].Name, desiredAB.Slices[1].Name
	movedA := singleCluster(desired.Compute(gd, "xcc.test", nil, []desired.Input{good("cluster-a", "10.0.0.9"), good("cluster-b", "10.0.0.2")}))

	foreign := desiredAB.Slices[0].DeepCopy()
	foreign.Name = "hand-written"
	foreign.Labels = map[string]string{contract.LabelServiceName: "gw"} // not managed by us
	otherGD := desiredAB.Slices[1].DeepCopy()
	otherGD.Name = "other-gatewaydns"
	otherGD.Annotations[contract.AnnotationGatewayRef] = "dev-team/other"

	heldByOther := desiredAB.Slices[1].DeepCopy()
	heldByOther.Annotations[contract.AnnotationGatewayRef] = "dev-team/other"

	withExtra := desiredAB.Slices[0].DeepCopy()
	withExtra.Labels["team"] = "x"
	withExtra.Annotations["note"] = "y"

	tests := []struct {
		name                   string
		desired, existing      []*discoveryv1.EndpointSlice
		keep                   map[string]bool
		create, update, delete []string
		refused                []string
	}{
		{name: "empty target gets everything", desired: desiredAB.Slices, create: []string{nameA, nameB}},
		{name: "in sync writes nothing", desired: desiredAB.Slices, existing: desiredAB.Slices},
		{name: "address change is an update", desired: movedA.Slices, existing: desiredAB.Slices, update: []string{nameA}},
		{name: "gone source is deleted", desired: desiredAB.Slices[1:], existing: desiredAB.Slices, delete: []string{nameA}},
		{name: "unreachable source is kept, not updated", desired: movedA.Slices[1:], existing: desiredAB.Slices, keep: map[string]bool{"cluster-a": true}},
		{name: "slices we did not write are never touched", existing: []*discoveryv1.EndpointSlice{foreign, otherGD}},
		{name: "a name another GatewayDNS holds is refused, not written", desired: desiredAB.Slices, existing: []*discoveryv1.EndpointSlice{heldByOther}, create: []string{nameA}, refused: []string{nameB}},
		{name: "extra labels and annotations of others are not a diff", desired: desiredAB.Slices[:1], existing: []*discoveryv1.EndpointSlice{withExtra}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := computePlan(ref, "", tt.desired, tt.existing, tt.keep)
			if got := names(p.Create); !slices.Equal(got, tt.create) {
				t.Errorf("create %v, want %v", got, tt.create)
			}
			if got := names(p.Update); !slices.Equal(got, tt.update) {
				t.Errorf("update %v, want %v", got, tt.update)
			}
			if got := names(p.Delete); !slices.Equal(got, tt.delete) {
				t.Errorf("delete %v, want %v", got, tt.delete)
			}
			if got := names(p.Refused); !slices.Equal(got, tt.refused) {
				t.Errorf("refused %v, want %v", got, tt.refused)
			}
		})
	}
}

func TestMergeForUpdateKeepsOthersMarks(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	d := desired.Compute(gd, "xcc.test", nil, []desired.Input{good("cluster-a", "10.0.0.1")})
	existing := d.Slices[0].DeepCopy()
	existing.Labels["team"] = "x"
	existing.Annotations[contract.AnnotationTTL] = "60"
	existing.ResourceVersion = "7"
	u := contract.MergeSlice(existing, d.Slices[0])
	if u.Labels["team"] != "x" || u.ResourceVersion != "7" {
		t.Errorf("merge lost labels or resourceVersion: %v %q", u.Labels, u.ResourceVersion)
	}
	if _, ok := u.Annotations[contract.AnnotationTTL]; ok {
		t.Errorf("ttl annotation no longer wanted but kept")
	}
	if contract.SameSlice(existing, d.Slices[0]) {
		t.Errorf("stale ttl annotation not seen as a diff")
	}
}

func TestComputeDelta(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	set := func(keep []string, clusters ...desired.Input) Generation {
		d := singleCluster(desired.Compute(gd, "xcc.test", nil, clusters))
		for _, k := range keep {
			d.Keep[k] = true
		}
		return NewGeneration(d)
	}
	unreachable := func(name string) desired.Input { return desired.Input{Name: name, Selected: true} }
	ab := set(nil, good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2"))
	nameA := contract.SliceName("dev-team", "gw", "cluster-a", contract.KindGateway, "ipv4")
	nameB := contract.SliceName("dev-team", "gw", "cluster-b", contract.KindGateway, "ipv4")
	nameA6 := contract.SliceName("dev-team", "gw", "cluster-a", contract.KindGateway, "ipv6")

	tests := []struct {
		name                   string
		from, to               Generation
		create, update, delete []string
		kept                   map[string]string
		released               []string
	}{
		{name: "first generation creates everything", to: ab, create: []string{nameA, nameB}},
		{name: "same set is empty", from: ab, to: ab},
		{name: "address change is an update", from: ab, to: set(nil, good("cluster-a", "10.0.0.9"), good("cluster-b", "10.0.0.2")), update: []string{nameA}},
		{name: "family change creates one and deletes the other", from: ab, to: set(nil, good("cluster-a", "2001:db8::1"), good("cluster-b", "10.0.0.2")),
			create: []string{nameA6}, delete: []string{nameA}},
		{name: "source gone is deleted", from: ab, to: set(nil, good("cluster-b", "10.0.0.2")), delete: []string{nameA}},
		{name: "source kept stays, not deleted", from: ab, to: set([]string{"cluster-a"}, unreachable("cluster-a"), good("cluster-b", "10.0.0.2")),
			kept: map[string]string{nameA: "cluster-a"}},
		{name: "source back from kept is released and created", from: set([]string{"cluster-a"}, unreachable("cluster-a"), good("cluster-b", "10.0.0.2")), to: ab,
			create: []string{nameA}, released: []string{"cluster-a"}},
		{name: "source released without slices", from: set([]string{"cluster-a"}, unreachable("cluster-a"), good("cluster-b", "10.0.0.2")), to: set(nil, good("cluster-b", "10.0.0.2")),
			released: []string{"cluster-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ComputeDelta(tt.from, tt.to)
			if got := names(d.Create); !slices.Equal(got, tt.create) {
				t.Errorf("create %v, want %v", got, tt.create)
			}
			if got := names(d.Update); !slices.Equal(got, tt.update) {
				t.Errorf("update %v, want %v", got, tt.update)
			}
			if !slices.Equal(d.Delete, tt.delete) {
				t.Errorf("delete %v, want %v", d.Delete, tt.delete)
			}
			if len(d.Kept)+len(tt.kept) > 0 && !maps.Equal(d.Kept, tt.kept) {
				t.Errorf("kept %v, want %v", d.Kept, tt.kept)
			}
			if got := slices.Sorted(maps.Keys(d.Released)); !slices.Equal(got, tt.released) {
				t.Errorf("released %v, want %v", got, tt.released)
			}
			if d.empty() != (len(tt.create)+len(tt.update)+len(tt.delete)+len(tt.kept)+len(tt.released) == 0) {
				t.Errorf("empty() = %v", d.empty())
			}
		})
	}
}

// A cluster whose Services are not listed yet keeps its name slices, and
// only those: its gateway slices follow the desired result.
func TestComputePlanKeepsNamesOnly(t *testing.T) {
	ref := "dev-team/gw"
	gw := contract.Build(contract.Source{Namespace: "dev-team", GatewayDNS: "gw", Cluster: "cluster-a", Kind: contract.KindGateway,
		Hostname: contract.GatewayHostname("cluster-a", "dev-team", "xcc.test")}, contract.Addresses{IPv4: []string{"10.0.0.1"}})[0]
	name := contract.Build(contract.Source{Namespace: "dev-team", GatewayDNS: "gw", Cluster: "cluster-a", Kind: contract.KindName,
		Hostname: "web.dev-team.names.xcc.test"}, contract.Addresses{IPv4: []string{"10.1.0.1"}})[0]
	for _, tt := range []struct {
		keep       map[string]bool
		wantDelete []string
	}{
		{nil, names([]*discoveryv1.EndpointSlice{gw, name})},
		{map[string]bool{desired.KeepNamesKey("cluster-a"): true}, []string{gw.Name}},
		{map[string]bool{"cluster-a": true}, nil},
	} {
		p := computePlan(ref, "", nil, []*discoveryv1.EndpointSlice{gw, name}, tt.keep)
		if got := names(p.Delete); !slices.Equal(got, tt.wantDelete) {
			t.Errorf("keep %v: deletes %q, want %q", slices.Collect(maps.Keys(tt.keep)), got, tt.wantDelete)
		}
	}
}
