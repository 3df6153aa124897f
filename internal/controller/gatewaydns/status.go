package gatewaydns

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
)

// maxStatusClusters bounds status.clusters: the GatewayDNS, status and
// all, is one etcd value of at most 1.5 MiB by default (sizes measured in
// docs/benchmarks.md, section 4).
const maxStatusClusters = 1000

// writes is what the publish step came to, as status tells it: the
// targets whose writes failed or are still running, and the since-times
// of the last sync (the GatewayDNS's memory), so a since-time does not
// move while a target or cluster stays as it was.
type writes struct {
	errs    map[string]error
	pending []string
	// unreachable are the targets the shared cache sees as unreachable,
	// and why, by name.
	unreachable map[string]string
	since       sinces
	// now is the time of this sync, in seconds as status stores it.
	now time.Time
}

// sinces are the since-times of a sync, by name: of each target that does
// not hold the latest records, and of each cluster that is not Ready.
type sinces struct {
	targets, clusters map[string]time.Time
}

// buildStatus is the status a GatewayDNS should have after a sync: the
// per-cluster entries of d, made not Ready while a target lacks their
// records, the targets that lack them, and the Ready and Conflict
// conditions; and the since-times for the next sync. Condition transition
// times change only when a condition's status does.
func buildStatus(gd *v1alpha1.GatewayDNS, d desired.Result, w writes) (v1alpha1.GatewayDNSStatus, sinces) {
	st := v1alpha1.GatewayDNSStatus{
		ObservedGeneration: gd.Generation,
		Conditions:         append([]metav1.Condition(nil), gd.Status.Conditions...),
		SelectedClusters:   int32(len(d.Clusters)),
	}
	var next sinces
	behind, failed := targetsBehind(w, &next)
	clusters := stampSince(markUnwritten(d.Clusters, behind), d.Keep, w, &next)
	st.Clusters, st.OmittedClusters = listedClusters(clusters, maxStatusClusters)
	for i := range st.Clusters {
		// maxStatusClusters entries fit in one object only while each is
		// short; what a message quotes comes from tenants.
		st.Clusters[i].Message = mgmt.Truncate(st.Clusters[i].Message, mgmt.MaxConditionMessage)
	}
	st.Targets, st.OmittedTargets = listedTargets(behind, maxStatusClusters)
	st.Names, st.OmittedNames = listedNames(d.Names, v1alpha1.MaxNameStatuses)
	var notReady []string
	for _, c := range clusters {
		if c.Healthy {
			st.HealthyClusters++
		}
		switch {
		case c.Ready:
			st.ReadyClusters++
		case c.Reason != desired.ReasonConflict:
			notReady = append(notReady, c.Name+": "+c.Reason)
		}
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: gd.Generation, Status: metav1.ConditionFalse}
	var reason Reason
	switch {
	case len(failed) > 0:
		reason, ready.Message = ReasonWriteFailed, "EndpointSlices not written to: "+strings.Join(failed, "; ")
	case len(w.pending) > 0:
		reason, ready.Message = ReasonWriting, "EndpointSlices still being written to: "+strings.Join(w.pending, ", ")
	case len(behind) > 0:
		reason, ready.Message = ReasonTargetUnreachable, "targets not answering, serving the records they last got: "+strings.Join(unreachableNames(behind), "; ")
	case len(d.Clusters) == 0:
		reason, ready.Message = ReasonNoClustersSelected, "clusterSelector matches no Cluster in namespace "+gd.Namespace
	case st.ReadyClusters == 0 && len(d.ConflictOwners) > 0:
		reason, ready.Message = ReasonNamesOwnedByOlder, "every selected cluster's names are published by an older GatewayDNS"
	case len(notReady) > 0:
		reason, ready.Message = ReasonNotAllPublished, strings.Join(notReady, ", ")
	default:
		ready.Status, reason, ready.Message = metav1.ConditionTrue, ReasonPublished, fmt.Sprintf("%d cluster(s) published", st.ReadyClusters)
	}
	ready.Reason, ready.Message = string(reason), mgmt.Truncate(ready.Message, mgmt.MaxConditionMessage)
	meta.SetStatusCondition(&st.Conditions, ready)
	meta.SetStatusCondition(&st.Conditions, conflictCondition(gd, d))
	return st, next
}

// conflictCondition says which clusters' names an older GatewayDNS owns.
func conflictCondition(gd *v1alpha1.GatewayDNS, d desired.Result) metav1.Condition {
	conflict := metav1.Condition{Type: v1alpha1.ConditionConflict, ObservedGeneration: gd.Generation,
		Status: metav1.ConditionFalse, Reason: string(ReasonNoConflict)}
	if len(d.ConflictOwners) > 0 {
		var msgs []string
		for cluster, owner := range d.ConflictOwners {
			msgs = append(msgs, fmt.Sprintf("%s (owned by %s)", cluster, owner))
		}
		sort.Strings(msgs)
		conflict.Status, conflict.Reason = metav1.ConditionTrue, string(ReasonNamesOwnedByOlder)
		conflict.Message = mgmt.Truncate("names not published for clusters an older GatewayDNS selects: "+strings.Join(msgs, ", "), mgmt.MaxConditionMessage)
	}
	return conflict
}

// targetsBehind lists, by name, the targets that do not hold the latest
// records: WriteFailed with the error, Writing, or TargetUnreachable (it
// may not: nothing can be written to it). A target behind at the
// last sync keeps its since-time, a new one gets now; next records them.
// failed describes the failed ones for the Ready condition.
func targetsBehind(w writes, next *sinces) (behind []v1alpha1.TargetStatus, failed []string) {
	next.targets = make(map[string]time.Time, len(w.errs)+len(w.pending))
	add := func(name string, reason Reason, msg string) v1alpha1.TargetStatus {
		since, ok := w.since.targets[name]
		if !ok {
			since = w.now
		}
		next.targets[name] = since
		ts := v1alpha1.TargetStatus{Name: name, Reason: string(reason), Message: mgmt.Truncate(msg, mgmt.MaxConditionMessage), Since: metav1.NewTime(since)}
		behind = append(behind, ts)
		return ts
	}
	for _, name := range slices.Sorted(maps.Keys(w.errs)) {
		ts := add(name, ReasonWriteFailed, strings.ReplaceAll(w.errs[name].Error(), "\n", "; "))
		failed = append(failed, fmt.Sprintf("%s (since %s): %s", name, formatSince(ts.Since.Time), ts.Message))
	}
	pending := map[string]bool{}
	for _, name := range w.pending {
		if _, failedToo := w.errs[name]; !failedToo {
			add(name, ReasonWriting, "a write is still in flight")
			pending[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.unreachable)) {
		if _, failedToo := w.errs[name]; !failedToo && !pending[name] {
			add(name, ReasonTargetUnreachable, w.unreachable[name]+"; it serves the records it last got")
		}
	}
	sort.Slice(behind, func(i, j int) bool { return behind[i].Name < behind[j].Name })
	return behind, failed
}

// unreachableNames are the TargetUnreachable targets of behind, each with
// its since-time.
func unreachableNames(behind []v1alpha1.TargetStatus) []string {
	var out []string
	for _, t := range behind {
		if t.Reason == string(ReasonTargetUnreachable) {
			out = append(out, fmt.Sprintf("%s (since %s)", t.Name, formatSince(t.Since.Time)))
		}
	}
	return out
}

// maxTargetsNamed bounds the targets a cluster's message names; status.targets
// lists them all.
const maxTargetsNamed = 3

// markUnwritten returns clusters with each Ready one made not Ready while
// behind lists a target: its records are not in every target. The reason
// is WriteFailed when a target failed, else TargetUnreachable when one is
// unreachable, else Writing; the message names the targets. clusters is copied before it is changed.
func markUnwritten(clusters []v1alpha1.ClusterStatus, behind []v1alpha1.TargetStatus) []v1alpha1.ClusterStatus {
	if len(behind) == 0 {
		return clusters
	}
	reason := ReasonWriting
	var named []string
	for i, t := range behind {
		switch {
		case t.Reason == string(ReasonWriteFailed):
			reason = ReasonWriteFailed
		case t.Reason == string(ReasonTargetUnreachable) && reason == ReasonWriting:
			reason = ReasonTargetUnreachable
		}
		if i < maxTargetsNamed {
			named = append(named, fmt.Sprintf("%s (%s since %s)", t.Name, t.Reason, formatSince(t.Since.Time)))
		}
	}
	if more := len(behind) - len(named); more > 0 {
		named = append(named, fmt.Sprintf("%d more in status.targets", more))
	}
	msg := "records not in every target yet: " + strings.Join(named, ", ")
	out := slices.Clone(clusters)
	for i := range out {
		if !out[i].Ready {
			continue
		}
		out[i].Ready, out[i].Reason = false, string(reason)
		if out[i].Message != "" {
			out[i].Message = msg + "; " + out[i].Message
		} else {
			out[i].Message = msg
		}
	}
	return out
}

// stampSince gives each cluster that is not Ready the time it stopped
// being Ready (kept from the last sync, else now), and says of each kept
// cluster with records that they are still served; next records the
// times. clusters is copied before it is changed.
func stampSince(clusters []v1alpha1.ClusterStatus, keep map[string]bool, w writes, next *sinces) []v1alpha1.ClusterStatus {
	next.clusters = map[string]time.Time{}
	copied := false
	for i := range clusters {
		if clusters[i].Ready {
			continue
		}
		if !copied {
			clusters, copied = slices.Clone(clusters), true
		}
		c := &clusters[i]
		since, ok := w.since.clusters[c.Name]
		if !ok {
			since = w.now
		}
		next.clusters[c.Name] = since
		c.Since = &metav1.Time{Time: since}
		if keep[c.Name] && (len(c.Addresses) > 0 || c.Pods > 0) {
			c.Message += "; serving last known records since " + formatSince(since)
		}
	}
	return clusters
}

// sincesFromStatus are the since-times a stored status holds: where the
// first sync since the start takes them from.
func sincesFromStatus(st v1alpha1.GatewayDNSStatus) sinces {
	s := sinces{targets: map[string]time.Time{}, clusters: map[string]time.Time{}}
	for _, t := range st.Targets {
		s.targets[t.Name] = t.Since.UTC()
	}
	for _, c := range st.Clusters {
		if !c.Ready && c.Since != nil {
			s.clusters[c.Name] = c.Since.UTC()
		}
	}
	return s
}

// statusNow is the time of a sync as status stores it: UTC seconds, so a
// since-time read back from the stored status equals the one written.
func statusNow() time.Time { return time.Now().UTC().Truncate(time.Second) }

func formatSince(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// listedTargets returns at most most targets (sorted by name) and how
// many were left out.
func listedTargets(all []v1alpha1.TargetStatus, most int) ([]v1alpha1.TargetStatus, int32) {
	if len(all) <= most {
		return all, 0
	}
	return all[:most], int32(len(all) - most)
}

// listedClusters returns at most max entries of all (sorted by name), the
// ones not Ready first since they are the ones to act on, and how many
// were left out.
func listedClusters(all []v1alpha1.ClusterStatus, max int) ([]v1alpha1.ClusterStatus, int32) {
	if len(all) <= max {
		return all, 0
	}
	out := make([]v1alpha1.ClusterStatus, 0, max)
	for _, ready := range []bool{false, true} {
		for _, c := range all {
			if c.Ready == ready && len(out) < max {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, int32(len(all) - len(out))
}

// statusEqual tells whether writing st would change anything.
func statusEqual(a, b v1alpha1.GatewayDNSStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// updateStatus writes status when it differs from what the object has.
func (c *Reconciler) updateStatus(ctx context.Context, gd *v1alpha1.GatewayDNS, st v1alpha1.GatewayDNSStatus) error {
	if statusEqual(gd.Status, st) {
		return nil
	}
	cp := gd.DeepCopy()
	cp.Status = st
	return mgmt.WriteStatus(ctx, c.cfg.Dynamic, v1alpha1.GatewayDNSResource, v1alpha1.GatewayDNSKind, cp)
}

// toGatewayDNS converts an informer object into the typed GatewayDNS.
func toGatewayDNS(obj any) (*v1alpha1.GatewayDNS, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("GatewayDNS informer delivered %T", obj)
	}
	gd := &v1alpha1.GatewayDNS{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, gd); err != nil {
		return nil, fmt.Errorf("convert GatewayDNS %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return gd, nil
}
