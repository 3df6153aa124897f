package gatewaydns

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
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
)

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
	msg := mgmt.Truncate("GatewayDNS being deleted; EndpointSlices "+strings.Join(parts, "; "), mgmt.MaxConditionMessage)
	if old := meta.FindStatusCondition(gd.Status.Conditions, v1alpha1.ConditionReady); old != nil && old.Reason == string(ReasonRemoving) && old.Message == msg {
		return nil
	}
	if len(rm.pending) > 0 {
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, string(ReasonRemoving), "EndpointSlices still being removed from cluster(s) %s", strings.Join(rm.pending, ", "))
	}
	for _, name := range slices.Sorted(maps.Keys(rm.failed)) {
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, string(ReasonRemoveFailed), "EndpointSlices in cluster %s: %v", name, rm.failed[name])
	}
	st := *gd.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		ObservedGeneration: gd.Generation, Reason: string(ReasonRemoving), Message: msg})
	return c.updateStatus(ctx, gd, st)
}
