package member

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xccdns "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
)

// t0 is the creation time of the oldest object of a case; at(n) is n
// seconds later.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// set selects the Clusters labelled set=<label>.
func set(name string, sec int, label string) ClusterSet {
	return ClusterSet{Name: name, Created: at(sec), Selector: metav1.LabelSelector{MatchLabels: map[string]string{"set": label}}}
}

// cl is an installed Cluster created at sec, labelled set=<label> for
// each label given.
func cl(name string, sec int, label string) Cluster {
	return Cluster{Name: name, Created: at(sec), Installed: true, Labels: map[string]string{"set": label}}
}

// prop gives c the ClusterProperty value v.
func prop(c Cluster, v string) Cluster { c.ClusterIDProperty = &v; return c }

func notInstalled(c Cluster) Cluster { c.Installed = false; return c }

// heldAs records that c joined its set with id.
func heldAs(c Cluster, id string) Cluster { c.HeldID = id; return c }

// view is a Result as one line: members as cluster=id, then refused
// Clusters as cluster!Reason (and the id a ClusterIDConflict asked for).
func view(r Result) string {
	var parts []string
	for _, m := range r.Members {
		if m.Reason != xccdns.ReasonMember {
			parts = append(parts, fmt.Sprintf("%s=%s?%s", m.Cluster, m.ClusterID, m.Reason))
			continue
		}
		parts = append(parts, m.Cluster+"="+m.ClusterID)
	}
	for _, m := range r.Refused {
		v := m.Cluster + "!" + string(m.Reason)
		if m.ClusterID != "" {
			v += ":" + m.ClusterID
		}
		parts = append(parts, v)
	}
	v := r.Name + ": " + strings.Join(parts, " ")
	if r.SelectorError != "" {
		v += " (selector error)"
	}
	return v
}

func views(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = view(r)
	}
	return out
}

func TestResolve(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, c := range []struct {
		name     string
		sets     []ClusterSet
		clusters []Cluster
		want     []string
		// messages: per refused Cluster, text its message must contain.
		messages map[string][]string
	}{
		{name: "nothing", want: []string{}},
		{name: "a set without Clusters", sets: []ClusterSet{set("prod", 0, "prod")}, want: []string{"prod: "}},
		{name: "Clusters without a set", clusters: []Cluster{cl("a", 0, "prod")}, want: []string{}},
		{
			name:     "the selector picks",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{cl("a", 0, "prod"), cl("b", 0, "dev"), cl("c", 0, "prod"), {Name: "d", Installed: true}},
			want:     []string{"prod: a=a c=c"},
		},
		{
			name:     "an empty selector selects every Cluster of the namespace",
			sets:     []ClusterSet{{Name: "all", Created: at(0)}},
			clusters: []Cluster{cl("a", 0, "prod"), {Name: "b", Installed: true}},
			want:     []string{"all: a=a b=b"},
		},
		{
			name: "a selector that does not parse selects nothing",
			sets: []ClusterSet{{Name: "bad", Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "set", Operator: "Near", Values: []string{"prod"}}}}}, set("prod", 5, "prod")},
			clusters: []Cluster{cl("a", 0, "prod")},
			// And so takes nothing from a newer set.
			want: []string{"bad:  (selector error)", "prod: a=a"},
		},
		{
			name:     "two sets, disjoint",
			sets:     []ClusterSet{set("prod", 0, "prod"), set("dev", 1, "dev")},
			clusters: []Cluster{cl("a", 0, "prod"), cl("b", 0, "dev")},
			want:     []string{"dev: b=b", "prod: a=a"},
		},
		{
			name: "a Cluster selected by two sets belongs to the older",
			sets: []ClusterSet{
				set("new", 10, "x"),
				{Name: "old", Created: at(5), Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "set", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "y"}}}}},
			},
			clusters: []Cluster{cl("a", 0, "x"), cl("b", 0, "y")},
			want:     []string{"new: a!Conflict", "old: a=a b=b"},
			messages: map[string][]string{"a": {`ClusterSet "old"`, "older"}},
		},
		{
			name:     "an older set being deleted keeps its Clusters until its objects are removed",
			sets:     []ClusterSet{set("new", 10, "x"), {Name: "old", Created: at(5), Deleting: true, Selector: set("", 0, "x").Selector}},
			clusters: []Cluster{cl("a", 0, "x")},
			want:     []string{"new: a!Conflict", "old: a=a"},
			messages: map[string][]string{"a": {`ClusterSet "old"`, "being deleted", "once its objects are removed"}},
		},
		{
			name:     "sets of one instant: the name decides",
			sets:     []ClusterSet{set("b-set", 5, "x"), set("a-set", 5, "x")},
			clusters: []Cluster{cl("a", 0, "x")},
			want:     []string{"a-set: a=a", "b-set: a!Conflict"},
		},
		{
			name:     "three sets over one Cluster: the two newer report it",
			sets:     []ClusterSet{set("s3", 3, "x"), set("s1", 1, "x"), set("s2", 2, "x")},
			clusters: []Cluster{cl("a", 0, "x")},
			want:     []string{"s1: a=a", "s2: a!Conflict", "s3: a!Conflict"},
			messages: map[string][]string{"a": {`"s1"`}},
		},
		{
			name:     "the older set has the Cluster even where it refuses it",
			sets:     []ClusterSet{set("old", 0, "x"), set("new", 1, "x")},
			clusters: []Cluster{notInstalled(cl("a", 0, "x")), prop(cl("b", 0, "x"), "B")},
			want:     []string{"new: a!Conflict b!Conflict", "old: a!NotInstalled b!InvalidClusterID"},
		},
		{
			name:     "without the workload chart",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{notInstalled(cl("a", 0, "prod")), cl("b", 0, "prod")},
			want:     []string{"prod: b=b a!NotInstalled"},
			messages: map[string][]string{"a": {"workload chart"}},
		},
		{
			name:     "the ClusterProperty is the id",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("cluster-a", 0, "prod"), "east-1"), cl("cluster-b", 0, "prod")},
			want:     []string{"prod: cluster-a=east-1 cluster-b=cluster-b"},
		},
		{
			name:     "a ClusterProperty equal to its own name",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("a", 0, "prod"), "a")},
			want:     []string{"prod: a=a"},
		},
		{
			name:     "one id from two properties: the older Cluster keeps it",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("young", 9, "prod"), "east"), prop(cl("old", 1, "prod"), "east")},
			want:     []string{"prod: old=east young!ClusterIDConflict:east"},
			messages: map[string][]string{"young": {`"east"`, `Cluster "old"`, "ClusterProperty"}},
		},
		{
			name:     "a property equal to an older Cluster's name",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{cl("east", 1, "prod"), prop(cl("b", 2, "prod"), "east")},
			want:     []string{"prod: east=east b!ClusterIDConflict:east"},
			messages: map[string][]string{"b": {`Cluster "east"`}},
		},
		{
			name:     "a property equal to a newer Cluster's name: the newer loses its own name",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("b", 1, "prod"), "east"), cl("east", 2, "prod")},
			want:     []string{"prod: b=east east!ClusterIDConflict:east"},
			messages: map[string][]string{"east": {`Cluster "b"`, "its name"}},
		},
		{
			name:     "an older member that changes its id to a newer member's: refused, the holder keeps it",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{heldAs(prop(cl("old", 1, "prod"), "west"), "old"), heldAs(cl("west", 2, "prod"), "west")},
			want:     []string{"prod: west=west old!ClusterIDConflict:west"},
			messages: map[string][]string{"old": {`member "west"`, "keeps its id", `held "old"`}},
		},
		{
			name:     "a newer Cluster that asks for a member's id: refused, though the member is newer still",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("new", 1, "prod"), "east"), heldAs(prop(cl("member", 5, "prod"), "east"), "east")},
			want:     []string{"prod: member=east new!ClusterIDConflict:east"},
			messages: map[string][]string{"new": {`member "member"`}},
		},
		{
			name:     "a member that changes its id to a free one moves, and its old id is free at once",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{heldAs(prop(cl("a", 1, "prod"), "north"), "east"), prop(cl("b", 2, "prod"), "east")},
			want:     []string{"prod: a=north b=east"},
		},
		{
			name:     "a member refused for a taken id holds nothing: changed back, it is a member again",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("old", 1, "prod"), "old"), heldAs(cl("west", 2, "prod"), "west")},
			want:     []string{"prod: old=old west=west"},
		},
		{
			name:     "a held id of a Cluster another set has is not held in this one",
			sets:     []ClusterSet{set("prod", 0, "prod"), set("dev", 1, "")},
			clusters: []Cluster{heldAs(cl("a", 1, "prod"), "a"), prop(cl("b", 2, ""), "a")},
			want:     []string{"dev: b=a", "prod: a=a"},
		},
		{
			name:     "Clusters of one instant: the name decides who keeps the id",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("b", 1, "prod"), "east"), prop(cl("a", 1, "prod"), "east")},
			want:     []string{"prod: a=east b!ClusterIDConflict:east"},
		},
		{
			name:     "three want one id: the oldest keeps it, both others name it",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{prop(cl("c", 3, "prod"), "x"), prop(cl("a", 1, "prod"), "x"), prop(cl("b", 2, "prod"), "x")},
			want:     []string{"prod: a=x b!ClusterIDConflict:x c!ClusterIDConflict:x"},
			messages: map[string][]string{"b": {`Cluster "a"`}, "c": {`Cluster "a"`}},
		},
		{
			name:     "a Cluster refused for its id holds none: the next keeps it",
			sets:     []ClusterSet{set("prod", 0, "prod")},
			clusters: []Cluster{notInstalled(prop(cl("a", 1, "prod"), "x")), prop(cl("b", 2, "prod"), "x")},
			want:     []string{"prod: b=x a!NotInstalled"},
		},
		{
			name:     "one id in two sets is no conflict: ids are per set",
			sets:     []ClusterSet{set("prod", 0, "prod"), set("dev", 0, "dev")},
			clusters: []Cluster{prop(cl("a", 0, "prod"), "x"), prop(cl("b", 1, "dev"), "x")},
			want:     []string{"dev: b=x", "prod: a=x"},
		},
		{
			name:     "a Cluster in the older set takes part in no id conflict of the newer",
			sets:     []ClusterSet{set("old", 0, "o"), {Name: "new", Created: at(1)}},
			clusters: []Cluster{prop(cl("a", 0, "o"), "x"), prop(cl("b", 1, "n"), "x")},
			want:     []string{"new: b=x a!Conflict", "old: a=x"},
		},
		// Ids that are refused, never rewritten.
		{name: "upper case", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "East")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {`"East"`, "upper-case", "ClusterProperty " + ClusterIDProperty}}},
		{name: "dots", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "a.b")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {`"a.b"`, "not a DNS label"}}},
		{name: "63 bytes", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), long)},
			want: []string{"s: a=" + long}},
		{name: "64 bytes", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), long+"a")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {"64 bytes", "63"}}},
		{name: "empty property: refused, not the name instead", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {`""`, "empty"}}},
		{name: "any", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "any")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {`"any"`, "reserved"}}},
		{name: "a Cluster named any", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{cl("any", 0, "s")},
			want: []string{"s: any!InvalidClusterID"}, messages: map[string][]string{"any": {"its name"}}},
		{name: "a Cluster named any with a property", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("any", 0, "s"), "any-1")},
			want: []string{"s: any=any-1"}},
		{name: "ANY", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "ANY")},
			want: []string{"s: a!InvalidClusterID"}},
		{name: "unicode", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "zürich")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {`"zürich"`}}},
		{name: "unicode that looks like ASCII", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "eаst")}, // Cyrillic а
			want: []string{"s: a!InvalidClusterID"}},
		{name: "leading hyphen", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "-east")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {"'-'"}}},
		{name: "trailing hyphen", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "east-")},
			want: []string{"s: a!InvalidClusterID"}},
		{name: "one hyphen", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "-")},
			want: []string{"s: a!InvalidClusterID"}},
		{name: "inner hyphens and a leading digit", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "1-east--2")},
			want: []string{"s: a=1-east--2"}},
		{name: "one character", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "z")},
			want: []string{"s: a=z"}},
		{name: "underscore", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "east_1")},
			want: []string{"s: a!InvalidClusterID"}},
		{name: "space and newline", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "east 1\n")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {`"east 1\n"`}}},
		{name: "a NUL byte", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "east\x00")},
			want: []string{"s: a!InvalidClusterID"}},
		{name: "invalid UTF-8", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), "east\xff")},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {`\xff`}}},
		{name: "a long hostile value is cut in the message", sets: []ClusterSet{set("s", 0, "s")}, clusters: []Cluster{prop(cl("a", 0, "s"), strings.Repeat("Ä", 5000))},
			want: []string{"s: a!InvalidClusterID"}, messages: map[string][]string{"a": {"cut, 10000 bytes"}}},
		{
			name:     "an invalid id holds nothing: a valid one of the same letters is no conflict",
			sets:     []ClusterSet{set("s", 0, "s")},
			clusters: []Cluster{prop(cl("a", 0, "s"), "East"), prop(cl("b", 1, "s"), "east")},
			want:     []string{"s: b=east a!InvalidClusterID"},
		},
		{
			name: "everything at once, in one namespace",
			sets: []ClusterSet{set("prod", 0, "prod"), {Name: "wide", Created: at(1), Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "set", Operator: metav1.LabelSelectorOpExists}}}}},
			clusters: []Cluster{
				cl("p1", 0, "prod"), prop(cl("p2", 1, "prod"), "p1"), notInstalled(cl("p3", 2, "prod")), prop(cl("p4", 3, "prod"), "P4"),
				cl("d1", 0, "dev"), prop(cl("d2", 4, "dev"), "east"), prop(cl("d3", 5, "dev"), "east"),
			},
			want: []string{
				"prod: p1=p1 p2!ClusterIDConflict:p1 p3!NotInstalled p4!InvalidClusterID",
				"wide: d1=d1 d2=east d3!ClusterIDConflict:east p1!Conflict p2!Conflict p3!Conflict p4!Conflict",
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Resolve(c.sets, c.clusters)
			if g, w := strings.Join(views(got), "\n"), strings.Join(c.want, "\n"); g != w {
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
			checked := map[string]bool{}
			for _, r := range got {
				for _, m := range r.Members {
					if m.Message != "" {
						t.Errorf("%s: member %s has a message: %s", r.Name, m.Cluster, m.Message)
					}
				}
				for _, m := range r.Refused {
					if m.Message == "" {
						t.Errorf("%s: %s refused (%s) without a message", r.Name, m.Cluster, m.Reason)
					}
					for _, want := range c.messages[m.Cluster] {
						checked[m.Cluster] = true
						if !strings.Contains(m.Message, want) {
							t.Errorf("%s: %s: message %q lacks %q", r.Name, m.Cluster, m.Message, want)
						}
					}
				}
			}
			for cluster := range c.messages {
				if !checked[cluster] {
					t.Errorf("no refused Cluster %s to check the message of", cluster)
				}
			}
		})
	}
}

func TestValidClusterID(t *testing.T) {
	for id, valid := range map[string]bool{
		"a": true, "0": true, "a-b": true, "a--b": true, "0a": true, "a0": true, strings.Repeat("z", 63): true, "any-1": true, "anyx": true,
		"": false, "-": false, "-a": false, "a-": false, "A": false, "aB": false, "a.b": false, "a_b": false, "a b": false,
		strings.Repeat("z", 64): false, "any": false, "é": false, "a\x00": false, "a/b": false, "*": false,
	} {
		if err := ValidClusterID(id); (err == nil) != valid {
			t.Errorf("ValidClusterID(%q) = %v, want valid %t", id, err, valid)
		}
	}
}
