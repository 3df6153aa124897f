package write_test

import (
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/write"
)

// withPort is slice with one port number, the field the table compares.
func withPort(name, owner string, port int32) *discoveryv1.EndpointSlice {
	s := slice(name, owner)
	s.Ports = []discoveryv1.EndpointPort{{Port: &port}}
	return s
}

func port(s *discoveryv1.EndpointSlice) int32 { return *s.Ports[0].Port }

// Diff is the one plan of every workload writer: what is another's is
// never written, what is kept stays, the rest is created, updated or
// deleted, and an update carries what was read.
func TestDiff(t *testing.T) {
	kind := write.Kind[*discoveryv1.EndpointSlice]{
		Ours: ownedBy("us"),
		Same: func(h, d *discoveryv1.EndpointSlice) bool { return port(h) == port(d) },
		Merge: func(h, d *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
			u := h.DeepCopy()
			u.Ports = d.Ports
			return u
		},
		Keep: func(s *discoveryv1.EndpointSlice) bool { return s.Labels["kept"] == "true" },
	}
	kept := func(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
		s.Labels["kept"] = "true"
		return s
	}
	read := withPort("changed", "us", 80)
	read.ResourceVersion = "7"
	for _, tt := range []struct {
		name                               string
		desired, held                      []*discoveryv1.EndpointSlice
		create, update, del, same, notOurs []string
	}{
		{name: "nothing held", desired: []*discoveryv1.EndpointSlice{withPort("a", "us", 80)}, create: []string{"a"}},
		{name: "held as desired", desired: []*discoveryv1.EndpointSlice{withPort("a", "us", 80)},
			held: []*discoveryv1.EndpointSlice{withPort("a", "us", 80)}, same: []string{"a"}},
		{name: "held otherwise is updated from what was read", desired: []*discoveryv1.EndpointSlice{withPort("changed", "us", 81)},
			held: []*discoveryv1.EndpointSlice{read}, update: []string{"changed"}},
		{name: "ours not desired is deleted, in name order", held: []*discoveryv1.EndpointSlice{withPort("b", "us", 80), withPort("a", "us", 80)},
			del: []string{"a", "b"}},
		{name: "another's is never touched, and its name is refused",
			desired: []*discoveryv1.EndpointSlice{withPort("a", "us", 81)},
			held:    []*discoveryv1.EndpointSlice{withPort("a", "them", 80), withPort("b", "them", 80)}, notOurs: []string{"a"}},
		{name: "kept stays, desired or not",
			desired: []*discoveryv1.EndpointSlice{withPort("a", "us", 81)},
			held:    []*discoveryv1.EndpointSlice{kept(withPort("a", "us", 80)), kept(withPort("b", "us", 80))}},
		{name: "another namespace is another name",
			desired: []*discoveryv1.EndpointSlice{withPort("a", "us", 80)},
			held:    []*discoveryv1.EndpointSlice{func() *discoveryv1.EndpointSlice { s := withPort("a", "us", 80); s.Namespace = "other"; return s }()},
			create:  []string{"a"}, del: []string{"a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write.Diff(tt.desired, tt.held, kind)
			for _, c := range []struct {
				what  string
				got   []*discoveryv1.EndpointSlice
				names []string
			}{
				{"create", p.Create, tt.create}, {"update", p.Update, tt.update}, {"delete", p.Delete, tt.del},
				{"same", p.Same, tt.same}, {"not ours", p.NotOurs, tt.notOurs},
			} {
				var got []string
				for _, s := range c.got {
					got = append(got, s.Name)
				}
				if !slices.Equal(got, c.names) {
					t.Errorf("%s %v, want %v", c.what, got, c.names)
				}
			}
			for _, u := range p.Update {
				if u.ResourceVersion != "7" || port(u) != 81 {
					t.Errorf("update %s: resourceVersion %q port %d, want what was read with the desired port", u.Name, u.ResourceVersion, port(u))
				}
			}
		})
	}
}
