package gatewaydns

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
)

// recordWriteFailures emits a Warning Event for each target whose write
// failed, in the order of targets.
func (c *Reconciler) recordWriteFailures(gd *v1alpha1.GatewayDNS, targets []publish.Target, errs map[string]error) {
	for _, t := range targets {
		if err := errs[t.Name]; err != nil {
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, string(ReasonWriteFailed), "EndpointSlices in cluster %s: %v", t.Name, err)
		}
	}
}

// recordTransitions emits one Event per cluster whose reason changed (a
// Warning when it stopped being Published) and one per cluster whose
// gateway health changed (Warning GatewayUnhealthy, Normal
// GatewayHealthy), so `kubectl describe` shows the history that status
// alone overwrites. clusters are the desired entries: a target that
// cannot be written has its own Event, not one per cluster. The reasons
// are remembered in the GatewayDNS's memory, as status lists at most
// maxStatusClusters of them; on the first sync since start they come
// from the stored status, and a cluster it left out gets no Event then.
func (c *Reconciler) recordTransitions(gd *v1alpha1.GatewayDNS, clusters []v1alpha1.ClusterStatus) {
	now := make(map[string]string, len(clusters))
	for _, cs := range clusters {
		now[cs.Name] = cs.Reason
		now[healthKey(cs.Name)] = cs.HealthReason
	}
	before, known := c.memory.of(gd.Namespace+"/"+gd.Name, gd.UID).lastReasons(now)
	complete := true
	if !known {
		before = map[string]string{}
		for _, cs := range gd.Status.Clusters {
			before[cs.Name] = desiredReason(cs.Reason)
			before[healthKey(cs.Name)] = cs.HealthReason
		}
		complete = gd.Status.OmittedClusters == 0
	}
	for _, cs := range clusters {
		if oldHealth := before[healthKey(cs.Name)]; oldHealth != "" && oldHealth != cs.HealthReason {
			// The multi-cluster name answers this gateway or stops to.
			if cs.Healthy {
				c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, string(ReasonGatewayHealthy), "cluster %s: gateway healthy again (was %s)", cs.Name, oldHealth)
			} else {
				c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, string(ReasonGatewayUnhealthy), "cluster %s: %s", cs.Name, cs.HealthReason)
			}
		}
		old, had := before[cs.Name]
		if old == cs.Reason || (!had && !complete) {
			continue
		}
		if cs.Reason == desired.ReasonPublished && gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless {
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, cs.Reason, "cluster %s: %d ready pods", cs.Name, cs.Pods)
			continue
		}
		if cs.Reason == desired.ReasonPublished {
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, cs.Reason, "cluster %s: %v", cs.Name, cs.Addresses)
			continue
		}
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, cs.Reason, "cluster %s: %s", cs.Name, cs.Message)
	}
}

// healthKey is where lastReasons keeps a cluster's health reason: a
// cluster name never holds a NUL.
func healthKey(cluster string) string { return cluster + "\x00health" }

// desiredReason is the reason of a stored status entry as the desired
// state gave it: an entry the write path made not Ready (its records not
// in every target yet) was Published. Events follow the desired reasons;
// a target's failure has Events of its own.
func desiredReason(stored string) string {
	if stored == string(ReasonWriteFailed) || stored == string(ReasonWriting) {
		return desired.ReasonPublished
	}
	return stored
}
