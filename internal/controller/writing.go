package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
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

// CondReasonRemoving is the Ready reason of a GatewayDNS being deleted
// while some target still holds its slices: being cleaned in the
// background, or failed and tried again. The finalizer stays until each
// is clean.
const CondReasonRemoving = "Removing"

// reportRemoval says in status which targets still hold the slices of a
// GatewayDNS being deleted, and, when that changed, in Events: Normal
// Removing for the targets still being cleaned, Warning RemoveFailed for
// each one that failed.
func (c *Controller) reportRemoval(ctx context.Context, gd *v1alpha1.GatewayDNS, rm removal) error {
	var parts []string
	if len(rm.pending) > 0 {
		parts = append(parts, "still being removed from: "+strings.Join(rm.pending, ", "))
	}
	for _, name := range slices.Sorted(maps.Keys(rm.failed)) {
		parts = append(parts, fmt.Sprintf("not removed from %s: %s", name, strings.ReplaceAll(rm.failed[name].Error(), "\n", "; ")))
	}
	if rm.listErr != nil {
		parts = append(parts, rm.listErr.Error())
	}
	msg := truncate("GatewayDNS being deleted; EndpointSlices "+strings.Join(parts, "; "), maxConditionMessage)
	if old := meta.FindStatusCondition(gd.Status.Conditions, v1alpha1.ConditionReady); old != nil && old.Reason == CondReasonRemoving && old.Message == msg {
		return nil
	}
	if len(rm.pending) > 0 {
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, CondReasonRemoving, "EndpointSlices still being removed from cluster(s) %s", strings.Join(rm.pending, ", "))
	}
	for _, name := range slices.Sorted(maps.Keys(rm.failed)) {
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, "RemoveFailed", "EndpointSlices in cluster %s: %v", name, rm.failed[name])
	}
	st := *gd.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		ObservedGeneration: gd.Generation, Reason: CondReasonRemoving, Message: msg})
	return c.updateStatus(ctx, gd, st)
}
