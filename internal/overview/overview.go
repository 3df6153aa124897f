// Package overview is the one-screen view of an installation that
// `xcc-syncer status` prints: every GatewayDNS and ClusterSet of the
// management cluster, what each publishes, and everything behind (a
// cluster not Published, a target not holding the latest records, a
// member refused or unreachable), each with since when and why, as the
// controller wrote it in their status; and what each serve pod of each
// workload cluster holds, as its metrics say (ServeClusters, SetServe).
// Build is pure; the command reads the objects and prints the Report.
package overview

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/printable"
)

// Report is the view of an installation. Its names, reasons and
// messages come from clusters a tenant or a workload cluster's admin
// runs: WriteText and its JSON print them printable.Clean.
type Report struct {
	GatewayDNS  []GatewayDNS `json:"gatewayDNS"`
	ClusterSets []ClusterSet `json:"clusterSets"`
	// Serve is what the serve pods of each workload cluster hold; nil
	// when not read (status --serve-records=false).
	Serve []ServeCluster `json:"serve,omitempty"`
	// Unread are the facts that could not be read, each with why.
	Unread []string `json:"unread,omitempty"`
}

// MarshalJSON is r's JSON, every string of it printable.Line.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(plain(printable.Clean(r)))
}

// GatewayDNS is one GatewayDNS: its counts, and what is behind.
type GatewayDNS struct {
	Name     string `json:"name"` // namespace/name
	Ready    bool   `json:"ready"`
	Reason   string `json:"reason"`
	Message  string `json:"message,omitempty"`
	Selected int32  `json:"selected"`
	// Published and Healthy count the selected clusters whose gateway
	// name is in every target, and whose gateway counts as healthy.
	Published int32 `json:"published"`
	Healthy   int32 `json:"healthy"`
	// Behind are the clusters not Published and the targets that do not
	// hold the latest records.
	Behind []Problem `json:"behind,omitempty"`
}

// ClusterSet is one ClusterSet: its counts, and what is behind.
type ClusterSet struct {
	Name     string    `json:"name"` // namespace/name
	Ready    bool      `json:"ready"`
	Reason   string    `json:"reason"`
	Message  string    `json:"message,omitempty"`
	Selected int32     `json:"selected"`
	Members  int32     `json:"members"`
	Exports  int32     `json:"exports"`
	Imports  int32     `json:"imports"`
	Behind   []Problem `json:"behind,omitempty"`
	// ExportProblems are, per member, its exports in Conflict or not
	// Valid, as the controller aggregates the last reads it keeps.
	ExportProblems []MemberExports `json:"exportProblems,omitempty"`
}

// MemberExports counts one member's exports in Conflict and not Valid,
// and lists the first few (maxShownExports) by namespace/name.
type MemberExports struct {
	Member   string          `json:"member"` // the Cluster's name, else its cluster id
	Conflict int             `json:"conflict"`
	Invalid  int             `json:"invalid"`
	First    []ExportProblem `json:"first"`
}

// ExportProblem is one export in Conflict or not Valid.
type ExportProblem struct {
	Export    string `json:"export"`    // namespace/name
	Condition string `json:"condition"` // Valid (False) or Conflict (True)
	Reason    string `json:"reason"`
	Message   string `json:"message,omitempty"`
}

// maxShownExports keeps a member with many bad exports to a few lines;
// the counts say how many there are.
const maxShownExports = 3

// Problem is one thing behind: a cluster, target or member, its reason,
// since when (zero when status does not say), and the message.
type Problem struct {
	What    string    `json:"what"` // "cluster cluster-a", "target cluster-b", "member cluster-c"
	Reason  string    `json:"reason"`
	Since   time.Time `json:"since,omitzero"`
	Message string    `json:"message,omitempty"`
}

// Build makes the Report of gds and sets, each sorted by namespace/name.
// An object whose status is of an older generation than its spec is
// behind too: the controller has not seen its last change.
func Build(gds []v1alpha1.GatewayDNS, sets []xccv1alpha1.ClusterSet) Report {
	var r Report
	for _, gd := range gds {
		st := gd.Status
		row := GatewayDNS{Name: gd.Namespace + "/" + gd.Name, Selected: st.SelectedClusters, Published: st.ReadyClusters, Healthy: st.HealthyClusters}
		row.Ready, row.Reason = ready(st.Conditions, v1alpha1.ConditionReady)
		// Its clusters and targets say what is behind, but for a failed
		// API discovery, which the message alone says.
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil && c.Reason == xccv1alpha1.ReasonAPIDiscoveryFailed {
			row.Message = c.Message
		}
		if st.ObservedGeneration < gd.Generation && row.Reason != xccv1alpha1.ReasonAPIDiscoveryFailed {
			row.Ready, row.Reason = false, "NotObserved"
		}
		for _, c := range st.Clusters {
			if !c.Ready && c.Reason != "Conflict" {
				p := Problem{What: "cluster " + c.Name, Reason: c.Reason, Message: c.Message}
				if c.Since != nil {
					p.Since = c.Since.Time
				}
				row.Behind = append(row.Behind, p)
			}
		}
		for _, t := range st.Targets {
			row.Behind = append(row.Behind, Problem{What: "target " + t.Name, Reason: t.Reason, Since: t.Since.Time, Message: t.Message})
		}
		r.GatewayDNS = append(r.GatewayDNS, row)
	}
	for _, cs := range sets {
		st := cs.Status
		row := ClusterSet{Name: cs.Namespace + "/" + cs.Name, Selected: st.SelectedClusters, Members: st.Members, Exports: st.Exports, Imports: st.Imports}
		row.Ready, row.Reason = ready(st.Conditions, xccv1alpha1.ConditionReady)
		if c := meta.FindStatusCondition(st.Conditions, xccv1alpha1.ConditionReady); c != nil && !row.Ready {
			row.Message = c.Message
		}
		// A failed API discovery says why the controller has not observed it.
		if st.ObservedGeneration < cs.Generation && row.Reason != xccv1alpha1.ReasonAPIDiscoveryFailed {
			row.Ready, row.Reason = false, "NotObserved"
		}
		for _, m := range st.Clusters {
			// A member says in its message when it is not read or written.
			if m.Reason != xccv1alpha1.ReasonMember || m.Message != "" {
				row.Behind = append(row.Behind, Problem{What: "member " + m.Name, Reason: string(m.Reason), Message: m.Message})
			}
		}
		r.ClusterSets = append(r.ClusterSets, row)
	}
	slices.SortFunc(r.GatewayDNS, func(a, b GatewayDNS) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(r.ClusterSets, func(a, b ClusterSet) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// ExportProblems are the exports of cs's members in Conflict or not
// Valid, per member in the order of cs's status, from kept: what the
// controller keeps of the ClusterSet (its members' last reads), run
// through the aggregation the controller runs, so the conditions are
// those it writes into the members' ServiceExports.
func ExportProblems(cs xccv1alpha1.ClusterSet, kept *state.ClusterSet) ([]MemberExports, error) {
	if kept == nil {
		return nil, nil
	}
	var exports []aggregate.Export
	for id, m := range kept.Members {
		for _, k := range m.Exports {
			exports = append(exports, aggregate.Export{Cluster: id, Namespace: k.Namespace, Name: k.Name, Created: k.Created, Seen: k.Seen,
				Service: k.Service, OverLimit: k.OverLimit, Labels: k.Labels, Annotations: k.Annotations})
		}
	}
	agg, err := aggregate.Aggregate(exports)
	if err != nil {
		return nil, fmt.Errorf("aggregate the kept exports of %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	byID := map[string]*MemberExports{}
	for _, e := range agg.Exports {
		for _, c := range e.Conditions {
			bad := (c.Type == aggregate.ConditionValid && c.Status == aggregate.StatusFalse) ||
				(c.Type == aggregate.ConditionConflict && c.Status == aggregate.StatusTrue)
			if !bad {
				continue
			}
			m := byID[e.Cluster]
			if m == nil {
				m = &MemberExports{Member: e.Cluster}
				byID[e.Cluster] = m
			}
			if c.Type == aggregate.ConditionValid {
				m.Invalid++
			} else {
				m.Conflict++
			}
			if len(m.First) < maxShownExports {
				m.First = append(m.First, ExportProblem{Export: e.Namespace + "/" + e.Name, Condition: string(c.Type), Reason: string(c.Reason), Message: c.Message})
			}
		}
	}
	var out []MemberExports
	for _, st := range cs.Status.Clusters {
		if m := byID[st.ClusterID]; m != nil && st.Reason == xccv1alpha1.ReasonMember {
			m.Member = st.Name
			out = append(out, *m)
			delete(byID, st.ClusterID)
		}
	}
	// Members the status leaves out (past its 1000 entries), by id.
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, *byID[id])
	}
	return out, nil
}

// SetExports sets the export problems of the ClusterSet key (namespace/name).
func (r *Report) SetExports(key string, members []MemberExports) {
	for i := range r.ClusterSets {
		if r.ClusterSets[i].Name == key {
			r.ClusterSets[i].ExportProblems = members
		}
	}
}

// ready is whether the condition typ is True, and its reason ("Unknown"
// when the controller has written none yet).
func ready(conds []metav1.Condition, typ string) (bool, string) {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return false, "Unknown"
	}
	return c.Status == metav1.ConditionTrue, c.Reason
}

// NotReady is the objects that are not Ready, by "kind namespace/name",
// and the serve pods that hold no record where a Ready object expects
// some: what makes `xcc-syncer status` exit non-zero. A serve pod that
// could not be read does not: reading it needs rights on the workload
// cluster a rollout gate may not have.
func (r Report) NotReady() []string {
	var out []string
	for _, g := range r.GatewayDNS {
		if !g.Ready {
			out = append(out, "GatewayDNS "+g.Name)
		}
	}
	for _, s := range r.ClusterSets {
		if !s.Ready {
			out = append(out, "ClusterSet "+s.Name)
		}
	}
	for _, c := range r.Serve {
		for _, p := range c.Pods {
			if p.Behind {
				// A pod's name is its API server's word.
				out = append(out, printable.Line("serve "+p.Name+" in "+c.Cluster))
			}
		}
	}
	return out
}

// maxMessage keeps a line of the text view readable; -o json has all.
const maxMessage = 160

// WriteText prints r as two tables, then under each what is behind of
// every object, and a last line that says whether everything is Ready;
// now dates "since". Every string of r is printed printable.Clean.
func (r Report) WriteText(w io.Writer, now time.Time) error {
	r = printable.Clean(r)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GATEWAYDNS\tREADY\tSTATUS\tPUBLISHED\tHEALTHY\tBEHIND")
	for _, g := range r.GatewayDNS {
		fmt.Fprintf(tw, "%s\t%t\t%s\t%d/%d\t%d\t%d\n", g.Name, g.Ready, g.Reason, g.Published, g.Selected, g.Healthy, len(g.Behind))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range r.GatewayDNS {
		writeBehind(w, g.Name, g.Message, g.Behind, now, nil)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "CLUSTERSET\tREADY\tSTATUS\tMEMBERS\tEXPORTS/IMPORTS\tBEHIND")
	for _, s := range r.ClusterSets {
		fmt.Fprintf(tw, "%s\t%t\t%s\t%d/%d\t%d/%d\t%d\n", s.Name, s.Ready, s.Reason, s.Members, s.Selected, s.Exports, s.Imports, len(s.Behind))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.ClusterSets {
		writeBehind(w, s.Name, s.Message, s.Behind, now, s.ExportProblems)
	}
	if err := r.writeServe(w, now); err != nil {
		return err
	}
	if len(r.Unread) > 0 {
		fmt.Fprintln(w)
	}
	for _, u := range r.Unread {
		fmt.Fprintf(w, "not read: %s\n", Cut(u))
	}
	if bad := r.NotReady(); len(bad) > 0 {
		_, err := fmt.Fprintf(w, "\n%d not Ready: %s\n", len(bad), strings.Join(bad, ", "))
		return err
	}
	_, err := fmt.Fprintf(w, "\nall %d GatewayDNS and %d ClusterSets Ready\n", len(r.GatewayDNS), len(r.ClusterSets))
	return err
}

// writeBehind prints, for the object name, its message, each problem,
// and its members' exports in Conflict or not Valid.
func writeBehind(w io.Writer, name, message string, ps []Problem, now time.Time, exports []MemberExports) {
	if message == "" && len(ps) == 0 && len(exports) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n", name)
	if message != "" {
		fmt.Fprintf(w, "  %s\n", Cut(message))
	}
	for _, p := range ps {
		fmt.Fprintf(w, "  %s: %s%s\n", p.What, p.Reason, Since(p.Since, now))
		if p.Message != "" {
			fmt.Fprintf(w, "    %s\n", Cut(p.Message))
		}
	}
	for _, m := range exports {
		fmt.Fprintf(w, "  exports of member %s: %d in Conflict, %d not Valid\n", m.Member, m.Conflict, m.Invalid)
		for _, p := range m.First {
			what := "Conflict"
			if p.Condition == string(aggregate.ConditionValid) {
				what = "not Valid"
			}
			line := fmt.Sprintf("%s: %s (%s)", p.Export, what, p.Reason)
			if p.Message != "" {
				line += ": " + p.Message
			}
			fmt.Fprintf(w, "    %s\n", Cut(line))
		}
	}
}

// Since says how long ago t was, and when, as the text views print it
// (" for 1m30s (since 2026-11-26T12:00:00Z)"); "" for a zero t.
func Since(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmt.Sprintf(" for %s (since %s)", now.Sub(t).Round(time.Second), t.UTC().Format(time.RFC3339))
}

// Cut is s on one line, its lines joined by "; ", printable and cut to
// maxMessage bytes (printable.Cut), as the text views print a status
// message.
func Cut(s string) string {
	return printable.Cut(strings.ReplaceAll(s, "\n", "; "), maxMessage)
}
