package aggregate

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// ForCache keeps of a ServiceExport what the aggregator and the
// status writes read: identity, creation time, exported labels and
// annotations (ReadBound) and conditions (boundConditions); no
// labels, annotations or managedFields, which a member's users choose
// and may make large. Idempotent.
func ForCache(obj any) (any, error) {
	e, ok := obj.(*mcsv1beta1.ServiceExport)
	if !ok {
		return obj, nil
	}
	out := &mcsv1beta1.ServiceExport{
		ObjectMeta: metav1.ObjectMeta{
			Name: e.Name, Namespace: e.Namespace, UID: e.UID, ResourceVersion: e.ResourceVersion,
			Generation: e.Generation, CreationTimestamp: e.CreationTimestamp, DeletionTimestamp: e.DeletionTimestamp,
		},
		Status: mcsv1beta1.ServiceExportStatus{Conditions: boundConditions(e.Status.Conditions)},
	}
	var labelsCut, annotationsCut int
	out.Spec.ExportedLabels, labelsCut = ReadBound(e.Spec.ExportedLabels)
	out.Spec.ExportedAnnotations, annotationsCut = ReadBound(e.Spec.ExportedAnnotations)
	// What an earlier pass cut is kept: the transform is idempotent.
	if cut := labelsCut + annotationsCut + ExportedCut(e); cut > 0 {
		out.Annotations = map[string]string{AnnotationExportedCut: strconv.Itoa(cut)}
	}
	return out, nil
}

// Bounds of the conditions of a cached ServiceExport: a member (or its
// API server) may write any number, each with a 32 KiB message. The
// controller writes the status from the cache, so what is cut here is
// cut in the member too at its next status write; the controller's own
// messages are cut alike (CutMessage) and never change by it.
const (
	// MaxCachedConditions is the most conditions kept: the controller's
	// own types (Valid, Conflict, Ready, CrossNetwork) and the first others.
	MaxCachedConditions = 8
	// maxConditionTypeBytes and maxConditionReasonBytes are the API's
	// bounds of a condition's type and reason; a hostile API server may
	// send longer ones.
	maxConditionTypeBytes   = 316
	maxConditionReasonBytes = 1024
)

// boundConditions keeps of conds the controller's own types and the
// first others, MaxCachedConditions at most, in their order, with the
// message cut to MaxConditionMessageBytes and type and reason
// to the API's bounds. Idempotent.
func boundConditions(conds []metav1.Condition) []metav1.Condition {
	if len(conds) == 0 {
		return conds
	}
	own := map[string]bool{string(ConditionValid): true, string(ConditionConflict): true, string(ConditionReady): true,
		string(ConditionCrossNetwork): true}
	seen := map[string]bool{}
	others := MaxCachedConditions - len(own)
	var out []metav1.Condition
	for _, c := range conds {
		c.Type = c.Type[:min(len(c.Type), maxConditionTypeBytes)]
		if seen[c.Type] {
			continue
		}
		if !own[c.Type] {
			if others == 0 {
				continue
			}
			others--
		}
		seen[c.Type] = true
		c.Reason = c.Reason[:min(len(c.Reason), maxConditionReasonBytes)]
		c.Message = CutMessage(c.Message)
		out = append(out, c)
	}
	return out
}

// AnnotationExportedCut, on a cached ServiceExport only, is how many of
// its exported labels and annotations ForCache cut.
const AnnotationExportedCut = "xcc-dns.io/exported-cut"

// ExportedCut is what AnnotationExportedCut says of a cached export.
func ExportedCut(e *mcsv1beta1.ServiceExport) int {
	n, _ := strconv.Atoi(e.Annotations[AnnotationExportedCut])
	return n
}
