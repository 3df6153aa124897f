package clusterset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/member"
)

// Reasons of a ClusterSet's Ready condition.
const (
	ReasonWritten     = "Written"
	ReasonWriteFailed = "WriteFailed"
	// ReasonWriting: a member's write is still running (its API server
	// is slow or not answering); the others are written.
	ReasonWriting     = "Writing"
	ReasonUnreachable = "MembersUnreachable"
	ReasonNoMembers   = "NoMembers"
	// ReasonRemoving: the ClusterSet is being deleted and some member
	// still holds its objects; its finalizer stays.
	ReasonRemoving = "Removing"
)

// memberWrites is what writing the members did: the error of each member
// whose objects were not all written, and the members whose write was
// still running when the sync stopped waiting, by cluster id.
type memberWrites struct {
	errs    map[string]error
	writing map[string]bool
}

func (w memberWrites) err() error {
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(w.errs)) {
		errs = append(errs, fmt.Errorf("member %s: %w", id, w.errs[id]))
	}
	return errors.Join(errs...)
}

// clusterSetStatus is the status of cs after a sync: one entry per
// selected Cluster (refused ones first, as member returns them), counts,
// and Ready: True when every member was read and written.
func clusterSetStatus(cs *xccv1alpha1.ClusterSet, res member.Result, members []setMember, reads map[string]memberRead,
	agg aggregate.Result, written memberWrites) xccv1alpha1.ClusterSetStatus {
	st := xccv1alpha1.ClusterSetStatus{ObservedGeneration: cs.Generation, Imports: int32(len(agg.Imports))}
	for _, e := range agg.Exports {
		if len(e.Conditions) > 0 && e.Conditions[0].Status == aggregate.StatusTrue {
			st.Exports++
		}
	}
	entries := make([]xccv1alpha1.MemberStatus, 0, len(res.Refused)+len(members))
	for _, m := range res.Refused {
		entries = append(entries, xccv1alpha1.MemberStatus{Name: m.Cluster, ClusterID: m.ClusterID, Reason: m.Reason, Message: m.Message})
	}
	var unreachable []string
	for _, m := range members {
		msg := m.Message
		switch {
		case m.access != "":
			msg = "no client: " + m.access
			unreachable = append(unreachable, m.ClusterID)
		case m.cluster.Unreachable() != "" || m.cluster.CutOff() != "":
			msg = m.cluster.Unreachable() + m.cluster.CutOff() + "; its last known exports are kept"
			unreachable = append(unreachable, m.ClusterID)
		case !m.idKnown && m.cluster.PropertyError() != "":
			// Never read without its id: why it cannot be read is why.
			msg = "its ClusterProperty cannot be read: " + m.cluster.PropertyError() + "; its last known exports are kept"
			unreachable = append(unreachable, m.ClusterID)
		case !reads[m.ClusterID].synced:
			msg = "not read yet: its last known exports are kept"
			unreachable = append(unreachable, m.ClusterID)
		case m.destUnknown:
			msg = "its slice namespace is not read yet: not written until its API server is known to be no other ClusterSet's"
			unreachable = append(unreachable, m.ClusterID)
		case written.errs[m.ClusterID] != nil:
			msg = "write failed: " + written.errs[m.ClusterID].Error()
		case written.writing[m.ClusterID]:
			msg = "writing: its API server has not finished the write yet"
		}
		entries = append(entries, xccv1alpha1.MemberStatus{Name: m.Cluster, ClusterID: m.ClusterID, Reason: m.Reason, Message: mgmt.Truncate(msg, mgmt.MaxConditionMessage)})
	}
	st.SelectedClusters = int32(len(entries))
	st.Members = int32(len(members))
	if len(entries) > xccv1alpha1.MaxMemberStatuses {
		st.OmittedClusters = int32(len(entries) - xccv1alpha1.MaxMemberStatuses)
		entries = entries[:xccv1alpha1.MaxMemberStatuses]
	}
	st.Clusters = entries
	ready := metav1.Condition{Type: xccv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonWritten,
		Message: fmt.Sprintf("%d imports written in %d members", len(agg.Imports), len(members)), ObservedGeneration: cs.Generation}
	switch {
	case res.SelectorError != "":
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "InvalidSelector", res.SelectorError
	case len(members) == 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonNoMembers, "no selected Cluster is a member"
	case len(unreachable) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonUnreachable
		ready.Message = "members not read, their last exports kept: " + strings.Join(unreachable, ", ")
	case len(written.errs) > 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonWriteFailed, written.err().Error()
	case len(written.writing) > 0:
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonWriting
		ready.Message = "writes still running in: " + strings.Join(slices.Sorted(maps.Keys(written.writing)), ", ")
	}
	ready.Message = mgmt.Truncate(ready.Message, mgmt.MaxConditionMessage)
	st.Conditions = slices.Clone(cs.Status.Conditions)
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}

// updateClusterSetStatus writes st unless it is what cs has.
func (c *Reconciler) updateClusterSetStatus(ctx context.Context, cs *xccv1alpha1.ClusterSet, st xccv1alpha1.ClusterSetStatus) error {
	if equality.Semantic.DeepEqual(cs.Status, st) {
		return nil
	}
	cp := cs.DeepCopy()
	cp.Status = st
	return mgmt.WriteStatus(ctx, c.cfg.Dynamic, xccv1alpha1.ClusterSetResource, xccv1alpha1.ClusterSetKind, cp)
}

// reportSetRemoval says in cs's Ready condition why its removal is not
// done yet (err names the members still holding its objects).
func (c *Reconciler) reportSetRemoval(ctx context.Context, cs *xccv1alpha1.ClusterSet, err error) error {
	st := *cs.Status.DeepCopy()
	msg := mgmt.Truncate("ClusterSet being deleted; "+strings.ReplaceAll(err.Error(), "\n", "; "), mgmt.MaxConditionMessage)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: xccv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		ObservedGeneration: cs.Generation, Reason: ReasonRemoving, Message: msg})
	return c.updateClusterSetStatus(ctx, cs, st)
}
