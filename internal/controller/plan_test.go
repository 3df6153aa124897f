package controller

import (
	"maps"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

func names(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func TestComputePlan(t *testing.T) {
	gd := testGatewayDNS("gw")
	ref := "dev-team/gw"
	desiredAB := computeDesired(gd, "xcc.test", nil, []clusterInput{good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2")})
	nameA, nameB := desiredAB.Slices[0].Name, desiredAB.Slices[1].Name
	movedA := computeDesired(gd, "xcc.test", nil, []clusterInput{good("cluster-a", "10.0.0.9"), good("cluster-b", "10.0.0.2")})

	foreign := desiredAB.Slices[0].DeepCopy()
	foreign.Name = "hand-written"
	foreign.Labels = map[string]string{contract.LabelServiceName: "gw"} // not managed by us
	otherGD := desiredAB.Slices[1].DeepCopy()
	otherGD.Name = "other-gatewaydns"
	otherGD.Annotations[contract.AnnotationGatewayRef] = "dev-team/other"

	withExtra := desiredAB.Slices[0].DeepCopy()
	withExtra.Labels["team"] = "x"
	withExtra.Annotations["note"] = "y"

	tests := []struct {
		name                   string
		desired, existing      []*discoveryv1.EndpointSlice
		keep                   map[string]bool
		create, update, delete []string
	}{
		{name: "empty target gets everything", desired: desiredAB.Slices, create: []string{nameA, nameB}},
		{name: "in sync writes nothing", desired: desiredAB.Slices, existing: desiredAB.Slices},
		{name: "address change is an update", desired: movedA.Slices, existing: desiredAB.Slices, update: []string{nameA}},
		{name: "gone source is deleted", desired: desiredAB.Slices[1:], existing: desiredAB.Slices, delete: []string{nameA}},
		{name: "unreachable source is kept, not updated", desired: movedA.Slices[1:], existing: desiredAB.Slices, keep: map[string]bool{"cluster-a": true}},
		{name: "slices we did not write are never touched", existing: []*discoveryv1.EndpointSlice{foreign, otherGD}},
		{name: "extra labels and annotations of others are not a diff", desired: desiredAB.Slices[:1], existing: []*discoveryv1.EndpointSlice{withExtra}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := computePlan(ref, tt.desired, tt.existing, tt.keep)
			if got := names(p.Create); !slices.Equal(got, tt.create) {
				t.Errorf("create %v, want %v", got, tt.create)
			}
			if got := names(p.Update); !slices.Equal(got, tt.update) {
				t.Errorf("update %v, want %v", got, tt.update)
			}
			if got := names(p.Delete); !slices.Equal(got, tt.delete) {
				t.Errorf("delete %v, want %v", got, tt.delete)
			}
		})
	}
}

func TestMergeForUpdateKeepsOthersMarks(t *testing.T) {
	gd := testGatewayDNS("gw")
	d := computeDesired(gd, "xcc.test", nil, []clusterInput{good("cluster-a", "10.0.0.1")})
	existing := d.Slices[0].DeepCopy()
	existing.Labels["team"] = "x"
	existing.Annotations[contract.AnnotationTTL] = "60"
	existing.ResourceVersion = "7"
	u := mergeForUpdate(existing, d.Slices[0])
	if u.Labels["team"] != "x" || u.ResourceVersion != "7" {
		t.Errorf("merge lost labels or resourceVersion: %v %q", u.Labels, u.ResourceVersion)
	}
	if _, ok := u.Annotations[contract.AnnotationTTL]; ok {
		t.Errorf("ttl annotation no longer wanted but kept")
	}
	if sameSlice(existing, d.Slices[0]) {
		t.Errorf("stale ttl annotation not seen as a diff")
	}
}

func TestComputeDelta(t *testing.T) {
	gd := testGatewayDNS("gw")
	set := func(keep []string, clusters ...clusterInput) desiredSet {
		d := computeDesired(gd, "xcc.test", nil, clusters)
		for _, k := range keep {
			d.Keep[k] = true
		}
		return newDesiredSet(d)
	}
	unreachable := func(name string) clusterInput { return clusterInput{Name: name, Selected: true} }
	ab := set(nil, good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2"))
	nameA := contract.SliceName("dev-team", "gw", "cluster-a", contract.KindGateway, "ipv4")
	nameB := contract.SliceName("dev-team", "gw", "cluster-b", contract.KindGateway, "ipv4")
	nameA6 := contract.SliceName("dev-team", "gw", "cluster-a", contract.KindGateway, "ipv6")

	tests := []struct {
		name                   string
		from, to               desiredSet
		create, update, delete []string
		hold                   map[string]string
		release                []string
	}{
		{name: "first generation creates everything", to: ab, create: []string{nameA, nameB}},
		{name: "same set is empty", from: ab, to: ab},
		{name: "address change is an update", from: ab, to: set(nil, good("cluster-a", "10.0.0.9"), good("cluster-b", "10.0.0.2")), update: []string{nameA}},
		{name: "family change creates one and deletes the other", from: ab, to: set(nil, good("cluster-a", "2001:db8::1"), good("cluster-b", "10.0.0.2")),
			create: []string{nameA6}, delete: []string{nameA}},
		{name: "source gone is deleted", from: ab, to: set(nil, good("cluster-b", "10.0.0.2")), delete: []string{nameA}},
		{name: "source kept is held, not deleted", from: ab, to: set([]string{"cluster-a"}, unreachable("cluster-a"), good("cluster-b", "10.0.0.2")),
			hold: map[string]string{nameA: "cluster-a"}},
		{name: "source back from kept is released and created", from: set([]string{"cluster-a"}, unreachable("cluster-a"), good("cluster-b", "10.0.0.2")), to: ab,
			create: []string{nameA}, release: []string{"cluster-a"}},
		{name: "source released without slices", from: set([]string{"cluster-a"}, unreachable("cluster-a"), good("cluster-b", "10.0.0.2")), to: set(nil, good("cluster-b", "10.0.0.2")),
			release: []string{"cluster-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := computeDelta(tt.from, tt.to)
			if got := names(d.Create); !slices.Equal(got, tt.create) {
				t.Errorf("create %v, want %v", got, tt.create)
			}
			if got := names(d.Update); !slices.Equal(got, tt.update) {
				t.Errorf("update %v, want %v", got, tt.update)
			}
			if !slices.Equal(d.Delete, tt.delete) {
				t.Errorf("delete %v, want %v", d.Delete, tt.delete)
			}
			if len(d.Hold)+len(tt.hold) > 0 && !maps.Equal(d.Hold, tt.hold) {
				t.Errorf("hold %v, want %v", d.Hold, tt.hold)
			}
			if got := slices.Sorted(maps.Keys(d.Release)); !slices.Equal(got, tt.release) {
				t.Errorf("release %v, want %v", got, tt.release)
			}
			if d.empty() != (len(tt.create)+len(tt.update)+len(tt.delete)+len(tt.hold)+len(tt.release) == 0) {
				t.Errorf("empty() = %v", d.empty())
			}
		})
	}
}

func TestListedClusters(t *testing.T) {
	st := func(name string, ready bool) v1alpha1.ClusterStatus {
		return v1alpha1.ClusterStatus{Name: name, Ready: ready}
	}
	all := []v1alpha1.ClusterStatus{st("a", true), st("b", false), st("c", true), st("d", false), st("e", true)}
	view := func(cs []v1alpha1.ClusterStatus) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	tests := []struct {
		max     int
		want    []string
		omitted int32
	}{
		{max: 5, want: []string{"a", "b", "c", "d", "e"}},
		{max: 3, want: []string{"a", "b", "d"}, omitted: 2},
		{max: 2, want: []string{"b", "d"}, omitted: 3},
		{max: 1, want: []string{"b"}, omitted: 4},
	}
	for _, tt := range tests {
		got, omitted := listedClusters(all, tt.max)
		if !slices.Equal(view(got), tt.want) || omitted != tt.omitted {
			t.Errorf("max %d: %v omitted %d, want %v omitted %d", tt.max, view(got), omitted, tt.want, tt.omitted)
		}
	}
}
