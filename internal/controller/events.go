package controller

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
)

// recordWriteFailures emits a Warning Event for each target whose write
// failed, in the order of targets.
func (c *Controller) recordWriteFailures(gd *v1alpha1.GatewayDNS, targets []publish.Target, errs map[string]error) {
	for _, t := range targets {
		if err := errs[t.Name]; err != nil {
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, "WriteFailed", "EndpointSlices in cluster %s: %v", t.Name, err)
		}
	}
}

// recordTransitions emits one Event per cluster whose reason changed, a
// Warning when it stopped being Published, and one per cluster whose
// gateway health changed (GatewayUnhealthy, a Warning; GatewayHealthy), so `kubectl describe` shows the
// history that status alone overwrites. The reasons are remembered in
// c.reasons, as status lists at most maxStatusClusters of them; on the first sync
// since start they come from the stored status, and a cluster it left out
// gets no Event then.
func (c *Controller) recordTransitions(gd *v1alpha1.GatewayDNS, clusters []v1alpha1.ClusterStatus) {
	key := gd.Namespace + "/" + gd.Name
	before, known := c.reasons.get(key)
	complete := true
	if !known {
		before = map[string]string{}
		for _, cs := range gd.Status.Clusters {
			before[cs.Name] = cs.Reason
			before[healthKey(cs.Name)] = cs.HealthReason
		}
		complete = gd.Status.OmittedClusters == 0
	}
	now := make(map[string]string, len(clusters))
	for _, cs := range clusters {
		now[cs.Name] = cs.Reason
		now[healthKey(cs.Name)] = cs.HealthReason
		if oldHealth := before[healthKey(cs.Name)]; oldHealth != "" && oldHealth != cs.HealthReason {
			// The multi-cluster name answers this gateway or stops to.
			if cs.Healthy {
				c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, "GatewayHealthy", "cluster %s: gateway healthy again (was %s)", cs.Name, oldHealth)
			} else {
				c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, "GatewayUnhealthy", "cluster %s: %s", cs.Name, cs.HealthReason)
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
	c.reasons.set(key, now)
}

// healthKey is where lastReasons keeps a cluster's health reason: a
// cluster name never holds a NUL.
func healthKey(cluster string) string { return cluster + "\x00health" }

// lastReasons remembers, per GatewayDNS key, the status reason of each
// cluster at its last sync (recordTransitions).
type lastReasons struct {
	mu    sync.Mutex
	byKey map[string]map[string]string
}

func newLastReasons() *lastReasons { return &lastReasons{byKey: map[string]map[string]string{}} }

// get returns the reasons of key's last sync; false before its first since start.
func (r *lastReasons) get(key string) (map[string]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.byKey[key]
	return m, ok
}

func (r *lastReasons) set(key string, reasons map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byKey[key] = reasons
}

// forget drops the reasons of a GatewayDNS that is gone.
func (r *lastReasons) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byKey, key)
}
