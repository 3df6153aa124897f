// Package member decides which Cluster API Clusters form each clusterset
// of a namespace, and their cluster ids, by the rules of docs/mcs.md
// (sections 1 and 3). Resolve is a pure function of its input, so every
// rule is a table test without a client; the controller reads the
// ClusterSets, the Clusters and their ClusterProperties, and writes the
// ClusterSets' status from what it returns.
//
// The rules:
//
//   - A ClusterSet's selector sees the Clusters of its own namespace
//     only: the caller passes one namespace at a time. A selector that
//     does not parse selects nothing (the API server validates it; one
//     that slips through must not select everything).
//   - A Cluster selected by two ClusterSets belongs to the older
//     (creationTimestamp, then name); the newer reports it Conflict. This
//     goes by selection alone, so a Cluster refused in the older set for
//     another reason is still not the newer's: what it is refused for
//     (no chart, a bad id) would not change membership elsewhere.
//   - A member must have the workload chart installed, else NotInstalled.
//   - Its cluster id is the value of its ClusterProperty
//     cluster.clusterset.k8s.io when it has one (even an empty one), else
//     its name. An id that is not one DNS label, or is "any", is refused
//     (InvalidClusterID, naming the value), never rewritten.
//   - An id is the Cluster's that joined with it (Cluster.HeldID, which
//     the controller keeps across restarts): a Cluster whose wanted id
//     another member holds is ClusterIDConflict, whichever is older, so
//     no member can take another's id by changing its ClusterProperty. A
//     member that changes its own id to a free one moves to it.
//   - Of the Clusters of one set that want one id nobody holds, the older
//     gets it; the others are ClusterIDConflict, naming the owner.
//
// A refused Cluster takes no part: its exports are not aggregated and it
// receives no import.
package member

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	xccdns "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
)

// ClusterIDProperty is the name of the KEP-2149 ClusterProperty
// (about.k8s.io) whose value is a member's cluster id.
const ClusterIDProperty = "cluster.clusterset.k8s.io"

// ReservedClusterID is never a cluster id: "any" is not a cluster's name
// in MCS DNS, so a member named so would be ambiguous.
const ReservedClusterID = "any"

// MaxClusterIDLength is the most bytes of a cluster id: one DNS label.
const MaxClusterIDLength = 63

// maxQuoted bounds how much of a refused value a message repeats: a
// ClusterProperty value may be long, and status is one etcd value.
const maxQuoted = 80

// ClusterSet is what membership reads of one ClusterSet.
type ClusterSet struct {
	Name     string
	Created  time.Time
	Selector metav1.LabelSelector
	// Deleting: the ClusterSet is being deleted. It keeps its members
	// until its objects are removed from them; a newer one that selects
	// them says so.
	Deleting bool
}

// Cluster is what membership reads of one Cluster API Cluster of the
// namespace. Names are unique, as they are in a namespace.
type Cluster struct {
	Name    string
	Labels  map[string]string
	Created time.Time
	// Installed: the workload chart is installed in the Cluster (its
	// slice namespace exists). For a Cluster that cannot be reached the
	// caller passes what it last knew, so an outage does not change
	// membership.
	Installed bool
	// ClusterIDProperty is the value of the Cluster's ClusterProperty
	// cluster.clusterset.k8s.io; nil when it has none (or the CRD is not
	// served). As Installed, the last known value while unreachable.
	ClusterIDProperty *string
	// HeldID is the id the Cluster holds in the set as a member, as the
	// controller recorded it when it joined (or last moved); "" for a
	// Cluster that is not a member yet.
	HeldID string
}

// Member is one selected Cluster of a set: its cluster id and Reason
// Member, or the reason it takes no part and a message naming what.
type Member struct {
	Cluster string
	// ClusterID: the id, for a member; the id it asked for, for a
	// ClusterIDConflict; empty otherwise (an invalid one is only quoted
	// in Message, cut to a length status can hold).
	ClusterID string
	Reason    xccdns.MemberReason
	Message   string
}

// Result is the membership of one ClusterSet.
type Result struct {
	Name string
	// Members take part, sorted by Cluster name; their ids are unique.
	Members []Member
	// Refused are the other selected Clusters, sorted by Cluster name.
	Refused []Member
	// SelectorError is set when the selector does not parse; it then
	// selects nothing.
	SelectorError string
}

// Resolve returns the membership of every ClusterSet of one namespace,
// sorted by ClusterSet name. The order of its input does not matter.
func Resolve(sets []ClusterSet, clusters []Cluster) []Result {
	// Older first: a set sees the Clusters no older set has taken.
	order := slices.Clone(sets)
	slices.SortFunc(order, func(a, b ClusterSet) int { return olderFirst(a.Created, a.Name, b.Created, b.Name) })
	cs := slices.Clone(clusters)
	slices.SortFunc(cs, func(a, b Cluster) int { return olderFirst(a.Created, a.Name, b.Created, b.Name) })

	owner := map[string]string{} // Cluster name -> the set that has it
	deleting := map[string]bool{}
	for _, set := range sets {
		deleting[set.Name] = set.Deleting
	}
	results := make([]Result, 0, len(order))
	for _, set := range order {
		r := Result{Name: set.Name}
		sel, err := metav1.LabelSelectorAsSelector(&set.Selector)
		if err != nil {
			r.SelectorError = err.Error()
			sel = labels.Nothing()
		}
		joined := held(cs, sel, owner)
		holder := maps.Clone(joined) // cluster id -> the Cluster that has it
		for _, c := range cs {
			if !sel.Matches(labels.Set(c.Labels)) {
				continue
			}
			if o, taken := owner[c.Name]; taken {
				msg := fmt.Sprintf("ClusterSet %q, which is older, selects this Cluster too and has it", o)
				if deleting[o] {
					msg += "; it is being deleted, and this ClusterSet takes the Cluster once its objects are removed"
				}
				r.Refused = append(r.Refused, Member{Cluster: c.Name, Reason: xccdns.ReasonConflict, Message: msg})
				continue
			}
			owner[c.Name] = set.Name
			r.add(c, holder, joined)
		}
		slices.SortFunc(r.Members, byCluster)
		slices.SortFunc(r.Refused, byCluster)
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b Result) int { return strings.Compare(a.Name, b.Name) })
	return results
}

// held is the ids the set's members keep, by id: each selected Cluster
// not taken by an older set, installed, that still wants the id it
// holds. A Cluster that wants another id gives its own up.
func held(cs []Cluster, sel labels.Selector, owner map[string]string) map[string]string {
	out := map[string]string{}
	for _, c := range cs {
		if _, taken := owner[c.Name]; taken || c.HeldID == "" || !c.Installed || !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		if id, _ := wantedID(c); id == c.HeldID {
			if _, dup := out[id]; !dup { // older first: a duplicate is only in damaged state
				out[id] = c.Name
			}
		}
	}
	return out
}

// wantedID is the id c asks for, and where it comes from.
func wantedID(c Cluster) (string, string) {
	if c.ClusterIDProperty != nil {
		return *c.ClusterIDProperty, "its ClusterProperty " + ClusterIDProperty
	}
	return c.Name, "its name"
}

// add decides c, a Cluster this set has; Clusters come older first, so
// the first to want an id nobody holds gets it.
func (r *Result) add(c Cluster, holder, joined map[string]string) {
	if !c.Installed {
		r.Refused = append(r.Refused, Member{Cluster: c.Name, Reason: xccdns.ReasonNotInstalled,
			Message: "the workload chart is not installed in this Cluster"})
		return
	}
	id, from := wantedID(c)
	if err := ValidClusterID(id); err != nil {
		r.Refused = append(r.Refused, Member{Cluster: c.Name, Reason: xccdns.ReasonInvalidClusterID,
			Message: fmt.Sprintf("cluster id %s (%s) %v", quote(id), from, err)})
		return
	}
	if h, taken := holder[id]; taken && h != c.Name {
		msg := fmt.Sprintf("cluster id %q (%s) is Cluster %q's, which is older", id, from, h)
		if joined[id] == h {
			msg = fmt.Sprintf("cluster id %q (%s) is held by member %q, which joined with it; a member keeps its id", id, from, h)
		}
		if c.HeldID != "" {
			msg += fmt.Sprintf(" (this Cluster held %q)", c.HeldID)
		}
		r.Refused = append(r.Refused, Member{Cluster: c.Name, ClusterID: id, Reason: xccdns.ReasonClusterIDConflict, Message: msg})
		return
	}
	holder[id] = c.Name
	r.Members = append(r.Members, Member{Cluster: c.Name, ClusterID: id, Reason: xccdns.ReasonMember})
}

// ValidClusterID returns nil when id can be a cluster id: one RFC 1123
// DNS label (1 to 63 lower-case letters, digits and '-', starting and
// ending with a letter or digit) and not "any". It says what is wrong
// otherwise.
func ValidClusterID(id string) error {
	switch {
	case id == "":
		return errors.New("is empty, not a DNS label")
	case len(id) > MaxClusterIDLength:
		return fmt.Errorf("is %d bytes long, longer than a DNS label (%d)", len(id), MaxClusterIDLength)
	case id == ReservedClusterID:
		return fmt.Errorf("is reserved: %q is no cluster's name in MCS DNS", ReservedClusterID)
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		switch {
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9':
		case b == '-':
			if i == 0 || i == len(id)-1 {
				return errors.New("starts or ends with '-', not a DNS label")
			}
		case b >= 'A' && b <= 'Z':
			return errors.New("has an upper-case letter, not a DNS label (lower-case letters, digits and '-')")
		default:
			return errors.New("has a character other than lower-case letters, digits and '-', not a DNS label")
		}
	}
	return nil
}

// quote quotes s for a message, cut to maxQuoted runes.
func quote(s string) string {
	if r := []rune(s); len(r) > maxQuoted {
		return fmt.Sprintf("%q (cut, %d bytes)", string(r[:maxQuoted]), len(s))
	}
	return fmt.Sprintf("%q", s)
}

func olderFirst(at time.Time, an string, bt time.Time, bn string) int {
	if c := at.Compare(bt); c != 0 {
		return c
	}
	return strings.Compare(an, bn)
}

func byCluster(a, b Member) int { return strings.Compare(a.Cluster, b.Cluster) }
