package member

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	xccdns "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
)

// label is RFC 1123's DNS label, written apart from ValidClusterID so
// the fuzz target does not check the code with itself.
var label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// fuzzInput decodes bytes into ClusterSets and Clusters from a small
// alphabet of labels, instants, ids and selectors, so that shared
// selections, ties and colliding ids are common, and returns a
// permutation seed from what is left.
func fuzzInput(data []byte) (sets []ClusterSet, clusters []Cluster, rest []byte) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	values := []string{"x", "y", "z"}
	ids := []string{"a", "b", "east", "East", "", "any", "a.b", strings.Repeat("q", 64), "c", "ü"}
	selectors := []metav1.LabelSelector{
		{},
		{MatchLabels: map[string]string{"set": "x"}},
		{MatchLabels: map[string]string{"set": "y"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "set", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "y"}}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "set", Operator: metav1.LabelSelectorOpDoesNotExist}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "set", Operator: "Near"}}},
	}
	for i := range next() % 5 {
		sets = append(sets, ClusterSet{Name: string(rune('p' + i)), Created: at(next() % 3), Selector: selectors[next()%len(selectors)]})
	}
	for i := range next() % 9 {
		c := Cluster{Name: string(rune('a' + i)), Created: at(next() % 3), Installed: next()%4 != 0}
		if v := next() % 4; v < 3 {
			c.Labels = map[string]string{"set": values[v]}
		}
		if v := next() % (len(ids) + 3); v < len(ids) {
			id := ids[v]
			c.ClusterIDProperty = &id
		}
		clusters = append(clusters, c)
	}
	return sets, clusters, data
}

// shuffle permutes s by the bytes of seed (Fisher-Yates).
func shuffle[T any](s []T, seed []byte) []T {
	out := append([]T(nil), s...)
	for i := len(out) - 1; i > 0; i-- {
		var b int
		if len(seed) > 0 {
			b, seed = int(seed[0]), seed[1:]
		}
		j := b % (i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// FuzzResolve checks the invariants of membership on any input: every
// selected Cluster is reported once by every set that selects it and is
// had by exactly one set, the older; member ids are valid, unique in
// their set and the Cluster's property or name; an id conflict names an
// older member holding the id; and the input's order changes nothing.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{3, 0, 1, 1, 1, 2, 1, 6, 0, 1, 0, 2, 1, 1, 0, 2, 2, 1, 1, 2})
	f.Add([]byte{4, 1, 0, 0, 3, 2, 5, 8, 2, 1, 0, 0, 0, 1, 1, 0, 2, 2, 1, 1, 4, 0, 1, 1, 0, 3, 1, 1, 1, 9, 7, 3, 1})
	f.Add([]byte{2, 0, 0, 0, 0, 5, 1, 0, 0, 0, 9, 0, 0, 3, 12, 0, 0, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		sets, clusters, rest := fuzzInput(data)
		got := Resolve(sets, clusters)

		if again := Resolve(shuffle(sets, rest), shuffle(clusters, rest[min(len(rest), 8):])); !reflect.DeepEqual(got, again) {
			t.Fatalf("shuffled input, other output:\n%v\n%v", got, again)
		}
		if len(got) != len(sets) {
			t.Fatalf("%d results for %d sets", len(got), len(sets))
		}

		byName := map[string]Cluster{}
		for _, c := range clusters {
			byName[c.Name] = c
		}
		setOf := map[string]ClusterSet{}
		for _, s := range sets {
			setOf[s.Name] = s
		}
		had := map[string]string{} // Cluster -> the set that has it
		for i, r := range got {
			if i > 0 && got[i-1].Name >= r.Name {
				t.Fatalf("results not sorted by name: %s, %s", got[i-1].Name, r.Name)
			}
			set := setOf[r.Name]
			sel, err := metav1.LabelSelectorAsSelector(&set.Selector)
			if (err != nil) != (r.SelectorError != "") {
				t.Fatalf("%s: selector error %v, reported %q", r.Name, err, r.SelectorError)
			}
			if err != nil {
				sel = labels.Nothing()
			}
			seen := map[string]bool{}
			ids := map[string]string{}
			for _, list := range [][]Member{r.Members, r.Refused} {
				for j, m := range list {
					if j > 0 && list[j-1].Cluster >= m.Cluster {
						t.Fatalf("%s: not sorted by Cluster: %s, %s", r.Name, list[j-1].Cluster, m.Cluster)
					}
					c, ok := byName[m.Cluster]
					if !ok || seen[m.Cluster] || !sel.Matches(labels.Set(c.Labels)) {
						t.Fatalf("%s: %s reported twice, unknown or not selected", r.Name, m.Cluster)
					}
					seen[m.Cluster] = true
					if m.Reason != xccdns.ReasonConflict {
						if o, dup := had[m.Cluster]; dup {
							t.Fatalf("Cluster %s is had by sets %s and %s", m.Cluster, o, r.Name)
						}
						had[m.Cluster] = r.Name
					}
				}
			}
			for _, c := range clusters {
				if sel.Matches(labels.Set(c.Labels)) && !seen[c.Name] {
					t.Fatalf("%s: selected Cluster %s not reported", r.Name, c.Name)
				}
			}
			for _, m := range r.Members {
				c := byName[m.Cluster]
				want := c.Name
				if c.ClusterIDProperty != nil {
					want = *c.ClusterIDProperty
				}
				if m.Reason != xccdns.ReasonMember || m.ClusterID != want || !label.MatchString(m.ClusterID) || m.ClusterID == "any" || !c.Installed {
					t.Fatalf("%s: member %+v of Cluster %+v", r.Name, m, c)
				}
				if o, dup := ids[m.ClusterID]; dup {
					t.Fatalf("%s: id %q of members %s and %s", r.Name, m.ClusterID, o, m.Cluster)
				}
				ids[m.ClusterID] = m.Cluster
			}
			for _, m := range r.Refused {
				c := byName[m.Cluster]
				switch m.Reason {
				case xccdns.ReasonClusterIDConflict:
					h, ok := ids[m.ClusterID]
					if !ok || olderFirst(byName[h].Created, h, c.Created, c.Name) >= 0 || !strings.Contains(m.Message, `"`+h+`"`) {
						t.Fatalf("%s: %s conflicts on %q, held by %q (older: %t)", r.Name, m.Cluster, m.ClusterID, h, ok)
					}
				case xccdns.ReasonInvalidClusterID, xccdns.ReasonNotInstalled, xccdns.ReasonConflict:
				default:
					t.Fatalf("%s: %s refused for %q", r.Name, m.Cluster, m.Reason)
				}
			}
		}
		// The set that has a Cluster is the oldest that selects it.
		for name, s := range had {
			for _, r := range got {
				other := setOf[r.Name]
				if r.Name != s && r.SelectorError == "" && olderFirst(other.Created, other.Name, setOf[s].Created, s) < 0 {
					sel, _ := metav1.LabelSelectorAsSelector(&other.Selector)
					if sel.Matches(labels.Set(byName[name].Labels)) {
						t.Fatalf("Cluster %s is had by %s, but the older %s selects it", name, s, r.Name)
					}
				}
			}
		}
	})
}
