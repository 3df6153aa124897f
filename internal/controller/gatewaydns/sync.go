package gatewaydns

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
)

// syncHandler brings the slices of one GatewayDNS in line, in four steps:
// source (gather what the informers know), desired (a pure function of
// it), publish (plan and apply the difference in every target) and status.
// A GatewayDNS that is gone (NotFound) or being deleted has its slices
// removed from every cluster of its namespace instead.
func (c *Reconciler) syncHandler(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("invalid key %q: %w", key, err))
		return nil
	}
	obj, exists, err := c.gdns.GetIndexer().GetByKey(key)
	if err != nil {
		return fmt.Errorf("get GatewayDNS %s from cache: %w", key, err)
	}
	if !exists {
		klog.FromContext(ctx).V(2).Info("GatewayDNS gone; removing its EndpointSlices")
		return c.cleanup(ctx, namespace, name).err(key)
	}
	gd, err := toGatewayDNS(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	if gd.DeletionTimestamp != nil {
		return c.syncDeleting(ctx, gd)
	}
	if !hasFinalizer(gd) {
		if err := c.addFinalizer(ctx, gd); err != nil {
			return err
		}
	}
	return c.sync(ctx, key, gd)
}

// syncDeleting removes the slices of gd, which is being deleted, and its
// finalizer once they are gone; until then status says where they are.
func (c *Reconciler) syncDeleting(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	if !hasFinalizer(gd) {
		return nil
	}
	key := gd.Namespace + "/" + gd.Name
	rm := c.cleanup(ctx, gd.Namespace, gd.Name)
	klog.FromContext(ctx).V(2).Info("GatewayDNS being deleted; removing its EndpointSlices", "pending", rm.pending, "failed", len(rm.failed))
	if !rm.done() {
		// A write that ends, or a target's next try, syncs again.
		if err := c.reportRemoval(ctx, gd, rm); err != nil {
			return err
		}
		return rm.err(key)
	}
	return c.removeFinalizer(ctx, gd)
}

// sync runs the pipeline for gd: source, desired, publish, status.
func (c *Reconciler) sync(ctx context.Context, key string, gd *v1alpha1.GatewayDNS) error {
	start := time.Now()
	mem := c.memory.of(key, gd.UID)
	// Source: what the informers know of the namespace's Clusters.
	src, err := c.gather(ctx, gd, mem.lastHeadless())
	if err != nil {
		return err
	}
	// Desired: the slices to publish and a status entry per cluster.
	want, stateErr := c.compute(ctx, mem, key, gd, src)
	// Plan and apply: every target brought to the desired slices and
	// its self marker (which Clusters it is, for the locality policy Local).
	targets := c.withSelf(gd.Namespace, src.targets)
	res := c.publisher.Publish(ctx, key, want, targets)
	c.recordWriteFailures(gd, targets, res.Errs)
	c.workloads.Release(key, src.uses)
	// Status says which gateways some cluster answers, by the markers.
	selves, selfErr := c.answering(targets, res)
	for _, t := range targets {
		if err := res.SelfErrs[t.Name]; err != nil {
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, string(ReasonSelfMarkerFailed), "cluster %s: %v", t.Name, err)
		}
	}
	markAnswered(want, selves)
	// Status, and an Event per cluster whose reason changed.
	status, since := buildStatus(gd, want, writes{errs: res.Errs, pending: res.Pending, unreachable: unreachableTargets(targets),
		since: mem.lastSinces(gd.Status), now: statusNow()})
	mem.setSinces(since)
	mem.setClusters(status.Clusters)
	c.recordTransitions(gd, want.Clusters)
	c.recordNameTransitions(gd, want.Names)
	if err := c.updateStatus(ctx, gd, status); err != nil {
		return err
	}
	if len(res.Errs) == 0 && len(res.Pending) == 0 {
		c.observePropagation(mem)
	}
	klog.FromContext(ctx).V(2).Info("Synced", "selected", status.SelectedClusters, "ready", status.ReadyClusters,
		"targets", len(src.targets), "written", res.Written, "duration", time.Since(start))
	if len(res.Errs) > 0 {
		return fmt.Errorf("write EndpointSlices of %s: %d target cluster(s) failed", key, len(res.Errs))
	}
	return errors.Join(selfErr, stateErr)
}

// compute is the desired step: the slices and status entries of gd
// (names, address conflicts and all), with a headless export's kept
// endpoints recovered after a restart and kept for the next sync and
// the next controller. The error says the state could not be kept.
func (c *Reconciler) compute(ctx context.Context, mem *memory, key string, gd *v1alpha1.GatewayDNS, src gathered) (desired.Result, error) {
	// What a kept cluster last published, after a restart.
	stateKnown := gd.Spec.ResolutionType != v1alpha1.ResolutionTypeHeadless || c.recoverHeadless(ctx, mem, key, src)
	want := desired.ComputeLimited(mem.withLastClusters(gd), c.cfg.Domain, c.cfg.AllowedCIDRs, c.cfg.Limits, src.clusters)
	claimed := desired.AddNames(&want, gd, c.cfg.Domain, c.cfg.AllowedCIDRs, c.cfg.NameGrants, src.clusters, c.nameOwners(gd))
	c.recordNames(gd, claimed)
	mem.setHeadless(want.Headless)
	var stateErr error
	if stateKnown {
		stateErr = c.saveHeadless(ctx, mem, key, want.Headless)
	} else {
		stateErr = fmt.Errorf("read the kept headless endpoints of %s: not yet", key)
	}
	want.Clusters = c.markAddressConflicts(key, gd.Namespace, want)
	return want, stateErr
}

// markAnswered sets each status entry's answered: whether the DNS of at
// least one target (none known: of a cluster that is none of the
// sources) answers its gateway for the multi-cluster name.
func markAnswered(want desired.Result, selves [][]string) {
	answered := contract.Answered(want.Locality, want.Sources, selves)
	for i := range want.Clusters {
		want.Clusters[i].Answered = answered[want.Clusters[i].Name]
	}
}

// markAddressConflicts records the addresses want's clusters claim and
// returns its status entries with the addresses other clusters claim too.
// The other GatewayDNS whose conflicts changed with ours are synced again.
func (c *Reconciler) markAddressConflicts(key, namespace string, want desired.Result) []v1alpha1.ClusterStatus {
	shared, affected := c.claims.Set(key, desired.ClusterClaims(namespace, want, c.claims.Get(key)))
	for _, other := range affected {
		// Its clusters' address conflicts may have changed with ours.
		c.queue.Add(other)
	}
	return desired.MarkAddressConflicts(want.Clusters, namespace, shared)
}

// observePropagation observes, once the slices are written everywhere,
// the time since the oldest gateway Service event not yet written out.
func (c *Reconciler) observePropagation(mem *memory) {
	if t, ok := mem.takeServiceEvent(); ok {
		c.cfg.Metrics.ServiceToSlices.Observe(time.Since(t).Seconds())
	}
}
