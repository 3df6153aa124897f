package controller

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

// CondReasonWriting is the Ready reason while a target is still being
// written in the background (its API server is slow, or the write is
// large): the names are not everywhere yet, but nothing failed.
const CondReasonWriting = "Writing"

// markWriting makes st's Ready condition say Writing when targets are
// still being written and no write failed (WriteFailed says more). The
// transition time is kept when Ready was False already.
func markWriting(gd *v1alpha1.GatewayDNS, st *v1alpha1.GatewayDNSStatus, pending []string) {
	if len(pending) == 0 {
		return
	}
	var ready *metav1.Condition
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1alpha1.ConditionReady {
			ready = &st.Conditions[i]
		}
	}
	if ready == nil || ready.Reason == CondReasonWriteFailed {
		return
	}
	since := metav1.Now()
	if old := meta.FindStatusCondition(gd.Status.Conditions, v1alpha1.ConditionReady); old != nil && old.Status == metav1.ConditionFalse {
		since = old.LastTransitionTime
	}
	ready.Status, ready.Reason, ready.LastTransitionTime = metav1.ConditionFalse, CondReasonWriting, since
	ready.Message = truncate("EndpointSlices still being written to: "+strings.Join(pending, ", "), maxConditionMessage)
}
