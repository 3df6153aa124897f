package gatewaydns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// removal is where the removal of a GatewayDNS's slices stands: the
// targets that still hold the finalizer, by name.
type removal struct {
	// pending are being cleaned in the background; failed could not be.
	pending []string
	failed  map[string]error
	// listErr: the Clusters of the namespace could not be read.
	listErr error
}

// done reports whether every target that holds the finalizer is clean.
func (r removal) done() bool { return len(r.pending) == 0 && len(r.failed) == 0 && r.listErr == nil }

// err is the error of the sync: the targets that failed. Targets still
// pending are no error: their writes sync the GatewayDNS again when they end.
func (r removal) err(key string) error {
	if r.listErr != nil {
		return r.listErr
	}
	if len(r.failed) == 0 {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.failed)) {
		errs = append(errs, fmt.Errorf("cluster %s: %w", name, r.failed[name]))
	}
	return fmt.Errorf("remove EndpointSlices of %s: %w", key, errors.Join(errs...))
}

// cleanup removes every slice the GatewayDNS namespace/name wrote from
// every cluster of its namespace that has a usable kubeconfig (clusters
// without one cannot be reached and are skipped), and its self markers
// when it is the last GatewayDNS of the namespace. The targets are
// cleaned in the background, each on its own (publish.Writer.Remove), so
// a target that does not answer delays no other. Until every target not
// being deleted is clean, the workload clients of the targets are kept
// and the removal reported; then the GatewayDNS is forgotten. A Cluster
// being deleted is cleaned too but holds nothing up: it no longer
// receives names (its cluster is going), as when it is selected. A
// Cluster that is gone is no target any more.
func (c *Reconciler) cleanup(ctx context.Context, namespace, name string) removal {
	key := namespace + "/" + name
	c.releaseClaims(namespace, name)
	clusterObjs, err := c.clusters.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return removal{listErr: fmt.Errorf("list clusters in %q: %w", namespace, err)}
	}
	var targets []publish.Target
	deleting := map[string]bool{}
	// The targets' clients and slice-namespace informers stay while the
	// removal goes on; their Service informers are not needed.
	keep := map[string]map[string]bool{}
	for _, o := range clusterObjs {
		m := watch.Meta(o)
		if m == nil || contract.ValidateLabel(m.GetName()) != nil {
			continue
		}
		acc, err := mgmt.Connect(c.secrets, c.workloads, namespace, m.GetName(), key)
		if err != nil || acc.Cluster == nil {
			continue
		}
		targets = append(targets, publish.Target{Name: m.GetName(), Cluster: acc.Cluster})
		keep[acc.Cluster.Key()] = map[string]bool{}
		deleting[m.GetName()] = m.GetDeletionTimestamp() != nil
	}
	// The last GatewayDNS of the namespace takes its self markers along.
	res := c.publisher.Remove(ctx, key, targets, !c.othersIn(namespace, name))
	rm := removal{failed: map[string]error{}}
	for _, t := range targets {
		switch {
		case deleting[t.Name]:
		case res.Errs[t.Name] != nil:
			rm.failed[t.Name] = res.Errs[t.Name]
		case slices.Contains(res.Pending, t.Name):
			rm.pending = append(rm.pending, t.Name)
		}
	}
	if !rm.done() {
		c.workloads.Release(key, keep)
		return rm
	}
	if err := c.forget(ctx, key); err != nil {
		c.workloads.Release(key, keep)
		return removal{listErr: err}
	}
	c.workloads.Release(key, nil)
	return rm
}

// releaseClaims takes the names and addresses of the GatewayDNS
// namespace/name out of the indexes the others read, and syncs those
// whose conflicts that changes: they take over at once, not when its
// slices are gone.
func (c *Reconciler) releaseClaims(namespace, name string) {
	key := namespace + "/" + name
	if c.names.set(key, nil) {
		c.requeueNamesOf(namespace, name)
	}
	_, affected := c.claims.Set(key, nil)
	for _, other := range affected {
		c.queue.Add(other)
	}
}

// forget drops everything remembered of the GatewayDNS key, whose slices
// are gone from every target that matters: the copy of its headless
// endpoints in the controller's state, what the publisher wrote (writes
// still running, to Clusters being deleted, stop) and its memory.
func (c *Reconciler) forget(ctx context.Context, key string) error {
	if err := c.saveHeadless(ctx, c.memory.of(key, ""), key, nil); err != nil {
		return err
	}
	c.publisher.Forget(key)
	c.memory.forget(key)
	return nil
}

// othersIn reports whether a GatewayDNS of namespace other than name
// exists and is not being deleted.
func (c *Reconciler) othersIn(namespace, name string) bool {
	objs, err := c.gdns.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return true // unknown: keep the markers
	}
	for _, o := range objs {
		m := watch.Meta(o)
		if m != nil && m.GetName() != name && m.GetDeletionTimestamp() == nil {
			return true
		}
	}
	return false
}

// reportRemoval says in status which targets still hold the slices of a
// GatewayDNS being deleted, and, when that changed, in Events: Normal
// Removing for the targets still being cleaned, Warning RemoveFailed for
// each one that failed.
func (c *Reconciler) reportRemoval(ctx context.Context, gd *v1alpha1.GatewayDNS, rm removal) error {
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
