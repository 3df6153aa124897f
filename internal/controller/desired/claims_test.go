package desired

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

// One address claimed by two clusters of a namespace is found whichever
// GatewayDNS of it publishes each; the other GatewayDNS is named as
// affected whenever the claim appears or goes, so it re-syncs its status.
// A claim in another namespace is invisible both ways: no conflict, no
// name, no re-sync.
func TestAddressClaims(t *testing.T) {
	a := NewAddressClaims()
	steps := []struct {
		name     string
		gd       string
		claims   Claims // nil: the GatewayDNS is gone
		shared   map[string]map[string][]string
		affected []string
	}{
		{"first GatewayDNS alone", "team-a/gw", Claims{"team-a/c1": {"192.0.2.10", "192.0.2.11"}},
			map[string]map[string][]string{}, nil},
		{"a cluster of another namespace claims one of its addresses: nothing is said either way", "team-b/gw", Claims{"team-b/c9": {"192.0.2.11"}},
			map[string]map[string][]string{}, nil},
		{"the first syncs again and still sees nothing of the other namespace", "team-a/gw", Claims{"team-a/c1": {"192.0.2.10", "192.0.2.11"}},
			map[string]map[string][]string{}, nil},
		{"a cluster of the same namespace claims it", "team-a/gw4", Claims{"team-a/c9": {"192.0.2.11"}},
			map[string]map[string][]string{"team-a/c9": {"192.0.2.11": {"team-a/c1"}}}, []string{"team-a/gw"}},
		{"the first syncs again and sees the conflict", "team-a/gw", Claims{"team-a/c1": {"192.0.2.10", "192.0.2.11"}},
			map[string]map[string][]string{"team-a/c1": {"192.0.2.11": {"team-a/c9"}}}, nil},
		{"one cluster's gateway and api on one address is no conflict", "team-a/gw2", Claims{"team-a/c2": {"198.51.100.1"}},
			map[string]map[string][]string{}, nil},
		// The other GatewayDNS re-syncs (its claim's holders changed) and finds no conflict either.
		{"the same cluster under two GatewayDNS (a name Conflict) is no address conflict", "team-a/gw3", Claims{"team-a/c2": {"198.51.100.1"}},
			map[string]map[string][]string{}, []string{"team-a/gw2"}},
		{"the other namespace's claim moves away: still nothing for team-a", "team-b/gw", Claims{"team-b/c9": {"192.0.2.99"}},
			map[string]map[string][]string{}, nil},
		{"the claim moves away", "team-a/gw4", Claims{"team-a/c9": {"192.0.2.99"}},
			map[string]map[string][]string{}, []string{"team-a/gw"}},
		{"a GatewayDNS that goes releases its claims", "team-a/gw", nil,
			map[string]map[string][]string{}, nil},
	}
	for _, s := range steps {
		shared, affected := a.Set(s.gd, s.claims)
		if !maps.EqualFunc(shared.all(), s.shared, func(x, y map[string][]string) bool { return maps.EqualFunc(x, y, slices.Equal) }) {
			t.Errorf("%s: shared %v, want %v", s.name, shared.all(), s.shared)
		}
		if !slices.Equal(affected, s.affected) {
			t.Errorf("%s: affected %v, want %v", s.name, affected, s.affected)
		}
	}
	if _, ok := a.byGD["team-a/gw"]; ok {
		t.Error("claims of a gone GatewayDNS kept")
	}
}

// all is, by cluster, every other cluster claiming each of its shared
// addresses.
func (s Shared) all() map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for id := range s.claims {
		for _, addr := range s.Conflicts(id) {
			if out[id] == nil {
				out[id] = map[string][]string{}
			}
			out[id][addr], _ = s.Others(id, addr, len(s.holders[addr]))
		}
	}
	return out
}

func TestClusterClaims(t *testing.T) {
	d := Result{
		Clusters: []v1alpha1.ClusterStatus{
			{Name: "c1", Addresses: []string{"192.0.2.11", "192.0.2.10", "lb.example.com"}, APIAddresses: []string{"192.0.2.10"}},
			{Name: "c2", Addresses: []string{"lb2.example.com"}},
			{Name: "kept"},
		},
		Keep: map[string]bool{"kept": true},
	}
	got := ClusterClaims("ns", d, Claims{"ns/kept": {"192.0.2.7"}, "ns/c1": {"10.0.0.1"}})
	want := Claims{"ns/c1": {"192.0.2.10", "192.0.2.11"}, "ns/kept": {"192.0.2.7"}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("claims %v, want %v (hostnames are no claim; a kept cluster keeps its last)", got, want)
	}
}

func TestMarkAddressConflicts(t *testing.T) {
	in := []v1alpha1.ClusterStatus{
		{Name: "c1", Reason: ReasonPublished, Ready: true},
		{Name: "c2", Reason: ReasonInvalidServiceRef, Message: "spec.service: bad"},
		{Name: "c3", Reason: ReasonPublished, Ready: true},
	}
	shared := Shared{
		claims:  Claims{"ns/c1": {"192.0.2.10"}, "ns/c2": {"192.0.2.20"}, "ns/c3": {"192.0.2.30"}},
		holders: map[string][]string{"192.0.2.10": {"ns/c1", "ns/x"}, "192.0.2.20": {"ns/c2", "ns/c9", "ns/y"}},
	}
	got := MarkAddressConflicts(in, "ns", shared)
	want := []v1alpha1.ClusterStatus{
		{Name: "c1", Reason: ReasonAddressConflict, Ready: true,
			Message: "address conflict: 192.0.2.10 also claimed by x; no PTR is published for a shared address"},
		{Name: "c2", Reason: ReasonInvalidServiceRef,
			Message: "spec.service: bad; address conflict: 192.0.2.20 also claimed by c9, y; no PTR is published for a shared address"},
		{Name: "c3", Reason: ReasonPublished, Ready: true},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if in[0].Reason != ReasonPublished {
		t.Error("the input was changed")
	}
}

// Clusters a tenant points at one address: each entry names a few of the
// others and counts the rest, so the status grows with the clusters, not
// with their square; so do the claims kept to find them.
func TestAddressConflictsOfManyClustersAreBounded(t *testing.T) {
	const n = 1000
	a := NewAddressClaims()
	claims := Claims{}
	var clusters []v1alpha1.ClusterStatus
	for i := range n {
		name := fmt.Sprintf("c%04d", i)
		claims["ns/"+name] = []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"}
		clusters = append(clusters, v1alpha1.ClusterStatus{Name: name, Reason: ReasonPublished, Ready: true})
	}
	shared, _ := a.Set("ns/gw", claims)
	if got := len(shared.holders); got != 5 {
		t.Fatalf("%d shared addresses kept, want 5", got)
	}
	got := MarkAddressConflicts(clusters, "ns", shared)
	want := "address conflict: 192.0.2.1 also claimed by c0001, c0002, c0003, 996 more; " +
		"192.0.2.2 also claimed by c0001, c0002, c0003, 996 more; 192.0.2.3 also claimed by c0001, c0002, c0003, 996 more; " +
		"2 more shared addresses; no PTR is published for a shared address"
	if got[0].Message != want || got[0].Reason != ReasonAddressConflict {
		t.Errorf("first entry %s: %q\nwant %q", got[0].Reason, got[0].Message, want)
	}
	if m := got[1].Message; !strings.Contains(m, "also claimed by c0000, c0002, c0003, 996 more") {
		t.Errorf("second entry names %q, want the first three others", m)
	}
	for _, c := range got {
		if len(c.Message) > 300 {
			t.Fatalf("entry %s: message of %d bytes", c.Name, len(c.Message))
		}
	}
}
