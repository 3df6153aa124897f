package aggregate

import (
	"fmt"
	"slices"
	"testing"
)

// member is one member's exports: for each namespace, n exports named
// <prefix><i>, created at start+i seconds, with s as their Service.
func memberExports(namespace, prefix string, n, start int, s *Service) []Export {
	var out []Export
	for i := range n {
		out = append(out, Export{Cluster: "a", Namespace: namespace, Name: fmt.Sprintf("%s%d", prefix, i), Created: at(start + i), Service: s})
	}
	return out
}

// admitted names the exports Admit left under the limit and valid.
func admitted(t *testing.T, exports []Export, limit int) []string {
	t.Helper()
	var out []string
	for _, e := range Admit(exports, limit) {
		if r, _ := validity(normalize(e)); r == ReasonValid {
			out = append(out, e.Namespace+"/"+e.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Exports without a Service, or with one that cannot be exported, cost
// nothing: a thousand of them (here ten, the limit two) older than the
// valid ones do not push the valid ones out.
func TestAdmitInvalidCostNothing(t *testing.T) {
	ok := svc(nil, tcp("http", 80))
	var in []Export
	in = append(in, memberExports("junk", "none", 10, 0, nil)...)
	in = append(in, memberExports("junk", "portless", 3, 20, svc(nil))...)
	in = append(in, memberExports("shop", "web", 2, 100, ok)...)
	got := admitted(t, in, 2)
	if want := []string{"shop/web0", "shop/web1"}; !slices.Equal(got, want) {
		t.Errorf("admitted %v, want %v", got, want)
	}
	for _, e := range Admit(in, 2) {
		if e.Namespace == "junk" && e.OverLimit {
			t.Errorf("%s/%s over the limit: an invalid export keeps its own reason", e.Namespace, e.Name)
		}
	}
}

// One namespace of a member cannot crowd out another's exports: over the
// limit each namespace gets an equal share, oldest first within it, and
// what a namespace does not use goes to the others.
func TestAdmitNamespacesShare(t *testing.T) {
	ok := svc(nil, tcp("http", 80))
	cases := []struct {
		name  string
		in    [][]Export
		limit int
		want  []string
	}{{
		name:  "an older namespace of many exports takes only its share",
		in:    [][]Export{memberExports("bulk", "x", 10, 0, ok), memberExports("shop", "web", 2, 100, ok)},
		limit: 4,
		want:  []string{"bulk/x0", "bulk/x1", "shop/web0", "shop/web1"},
	}, {
		name:  "a namespace under its share leaves the rest to the others",
		in:    [][]Export{memberExports("bulk", "x", 10, 0, ok), memberExports("shop", "web", 1, 100, ok), memberExports("tiny", "t", 1, 200, ok)},
		limit: 6,
		want:  []string{"bulk/x0", "bulk/x1", "bulk/x2", "bulk/x3", "shop/web0", "tiny/t0"},
	}, {
		name:  "an odd slot goes to the oldest candidate of the last round",
		in:    [][]Export{memberExports("a", "x", 3, 50, ok), memberExports("b", "y", 3, 10, ok)},
		limit: 3,
		want:  []string{"a/x0", "b/y0", "b/y1"},
	}, {
		name:  "invalid exports take no share",
		in:    [][]Export{memberExports("bulk", "x", 3, 0, ok), memberExports("bulk", "gone", 5, 0, nil), memberExports("shop", "web", 3, 100, ok)},
		limit: 4,
		want:  []string{"bulk/x0", "bulk/x1", "shop/web0", "shop/web1"},
	}, {
		name:  "under the limit every valid export",
		in:    [][]Export{memberExports("bulk", "x", 2, 0, ok), memberExports("shop", "web", 2, 100, ok)},
		limit: 10,
		want:  []string{"bulk/x0", "bulk/x1", "shop/web0", "shop/web1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in []Export
			for _, ns := range tc.in {
				in = append(in, ns...)
			}
			got := admitted(t, in, tc.limit)
			if !slices.Equal(got, tc.want) {
				t.Errorf("admitted %v, want %v", got, tc.want)
			}
			// The order of the input does not matter.
			slices.Reverse(in)
			if again := admitted(t, in, tc.limit); !slices.Equal(again, got) {
				t.Errorf("reversed input admitted %v, want %v", again, got)
			}
		})
	}
}
