package objects

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// ReasonPending is Ready's reason while the import is not yet written in
// every reachable member: the MCS API's word.
const ReasonPending = string(mcsv1beta1.ServiceExportReasonPending)

// exportStatuses are the conditions of the member's own exports, in the
// aggregator's order (namespace/name).
func exportStatuses(in Input) []ExportStatus {
	var out []ExportStatus
	for _, e := range in.Result.Exports {
		if e.Cluster != in.Cluster {
			continue
		}
		st := ExportStatus{Namespace: e.Namespace, Name: e.Name}
		for _, c := range e.Conditions {
			mc := metav1.Condition{
				Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: string(c.Reason), Message: c.Message,
			}
			if c.Type == aggregate.ConditionReady && c.Status == aggregate.StatusTrue && !in.Imports[e.Key].Written {
				mc.Status, mc.Reason = metav1.ConditionFalse, ReasonPending
				mc.Message = fmt.Sprintf("the import %s/%s is not yet written in every member", e.Namespace, e.Name)
			}
			st.Conditions = append(st.Conditions, mc)
		}
		out = append(out, st)
	}
	return out
}
