package gatewaydns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// syncHandler brings the slices of one GatewayDNS in line, in four steps:
// source (gather what the informers know), desired (a pure function of
// it), publish (plan and apply the difference in every target) and status.
// A GatewayDNS that is gone (NotFound) or being deleted has its slices
// removed from every cluster of its namespace instead.
func (c *Controller) syncHandler(ctx context.Context, key string) error {
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
func (c *Controller) syncDeleting(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
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
func (c *Controller) sync(ctx context.Context, key string, gd *v1alpha1.GatewayDNS) error {
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
func (c *Controller) compute(ctx context.Context, mem *memory, key string, gd *v1alpha1.GatewayDNS, src gathered) (desired.Result, error) {
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
func (c *Controller) markAddressConflicts(key, namespace string, want desired.Result) []v1alpha1.ClusterStatus {
	shared, affected := c.claims.Set(key, desired.ClusterClaims(namespace, want, c.claims.Get(key)))
	for _, other := range affected {
		// Its clusters' address conflicts may have changed with ours.
		c.queue.Add(other)
	}
	return desired.MarkAddressConflicts(want.Clusters, namespace, shared)
}

// observePropagation observes, once the slices are written everywhere,
// the time since the oldest gateway Service event not yet written out.
func (c *Controller) observePropagation(mem *memory) {
	if t, ok := mem.takeServiceEvent(); ok {
		c.cfg.Metrics.ServiceToSlices.Observe(time.Since(t).Seconds())
	}
}

// gathered is the source of one sync: what the informers know.
type gathered struct {
	clusters []desired.Input
	targets  []publish.Target
	// uses maps cluster key -> Service refs watched for this GatewayDNS.
	uses map[string]map[string]bool
}

// gather reads the informers: every Cluster of the namespace, who owns its
// names, its kubeconfig, its gateway Service, and whether it has opted in.
// last is what a headless export last published per cluster.
func (c *Controller) gather(ctx context.Context, gd *v1alpha1.GatewayDNS, last map[string]contract.HeadlessEndpoints) (gathered, error) {
	logger := klog.FromContext(ctx)
	g := gathered{uses: map[string]map[string]bool{}}
	key := gd.Namespace + "/" + gd.Name
	clusterObjs, err := c.clusters.GetIndexer().ByIndex(cache.NamespaceIndex, gd.Namespace)
	if err != nil {
		return g, fmt.Errorf("list clusters in %q: %w", gd.Namespace, err)
	}
	owners, err := c.owners(gd.Namespace, clusterObjs)
	if err != nil {
		return g, err
	}
	selector, selErr := metav1.LabelSelectorAsSelector(&gd.Spec.ClusterSelector)
	if selErr != nil {
		// The API server validates the selector; if one slips through,
		// select nothing and say so rather than selecting everything.
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, string(ReasonInvalidSelector), "spec.clusterSelector: %v", selErr)
		selector = labels.Nothing()
	}
	// A headless export owns no cluster's names, so it is never in
	// conflict with the GatewayDNS of the clusters' gateways.
	headless := gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless

	sort.Slice(clusterObjs, func(i, j int) bool {
		return watch.Meta(clusterObjs[i]).GetName() < watch.Meta(clusterObjs[j]).GetName()
	})
	for _, o := range clusterObjs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		in := desired.Input{Name: u.GetName(), Selected: selector.Matches(labels.Set(u.GetLabels()))}
		if eps, ok := last[in.Name]; ok {
			in.LastHeadless = &eps
		}
		in.APIHost, _, _ = unstructured.NestedString(u.Object, "spec", "controlPlaneEndpoint", "host")
		// A Cluster being deleted loses its names now, not when it is gone.
		in.Deleting = u.GetDeletionTimestamp() != nil
		if ok, why := desired.Availability(u.Object); !ok {
			in.Unavailable = why
		}
		if owner := owners[in.Name]; owner != "" && owner != key && !headless {
			in.OwnedBy = owner
		}
		if contract.ValidateLabel(in.Name) != nil {
			g.clusters = append(g.clusters, in)
			continue
		}
		acc, err := mgmt.Connect(c.secrets, c.workloads, gd.Namespace, in.Name, key)
		if err != nil {
			return g, err
		}
		if acc.Cluster == nil {
			in.AccessReason, in.AccessMessage = acc.Reason, acc.Message
			if in.Selected {
				logger.V(2).Info("No client for workload cluster", "cluster", in.Name, "reason", acc.Reason, "message", acc.Message)
			}
			g.clusters = append(g.clusters, in)
			continue
		}
		g.uses[acc.Cluster.Key()] = c.readCluster(&in, acc.Cluster, gd, key)
		g.clusters = append(g.clusters, in)
		if u.GetDeletionTimestamp() == nil {
			g.targets = append(g.targets, publish.Target{Name: in.Name, Cluster: acc.Cluster})
		}
	}
	return g, nil
}

// readCluster fills in what the informers of the workload cluster w know
// for in (its Service, endpoints and names, whether it is cut off or
// unreachable), and returns the Service refs the GatewayDNS key uses
// there. The Watch calls start what is not watched yet; the reads after
// them only read caches.
func (c *Controller) readCluster(in *desired.Input, w *workload.Cluster, gd *v1alpha1.GatewayDNS, key string) map[string]bool {
	svcNS, svcName, refErr := contract.ParseRef(gd.Spec.Service)
	refs := map[string]bool{}
	switch {
	case !in.Selected || in.Deleting || in.OwnedBy != "" || refErr != nil:
	case gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless:
		c.workloads.WatchService(w, svcNS, svcName, key, true)
		in.Service, in.ServiceSynced = c.workloads.Service(w, svcNS, svcName)
		in.Endpoints, in.EndpointsSynced = c.workloads.Endpoints(w, svcNS, svcName)
		refs[gd.Spec.Service] = true
	default:
		c.workloads.WatchService(w, svcNS, svcName, key, false)
		in.Service, in.ServiceSynced = c.workloads.Service(w, svcNS, svcName)
		in.ReadyEndpoints, in.EndpointsSynced = c.workloads.ReadyEndpoints(w, svcNS, svcName)
		refs[gd.Spec.Service] = true
	}
	if namesEnabled(gd) && in.Selected && !in.Deleting && in.OwnedBy == "" {
		c.workloads.WatchNames(w, key)
		refs[workload.NamesRef] = true
		in.Names, in.NamesSynced = c.workloads.Names(w)
	}
	if why := w.CutOff(); why != "" {
		in.AccessReason, in.AccessMessage = desired.ReasonClusterCutOff, why
	} else if why := w.Unreachable(); why != "" {
		// Its informers still hold what they last read.
		in.AccessReason, in.AccessMessage = desired.ReasonClusterUnreachable, why
	}
	return refs
}

// unreachableTargets are the targets the shared cache sees as
// unreachable, and why, by name: a write to them would fail only once
// there is something new to write.
func unreachableTargets(targets []publish.Target) map[string]string {
	out := map[string]string{}
	for _, t := range targets {
		if why := t.Cluster.Unreachable(); why != "" {
			out[t.Name] = why
		}
	}
	return out
}

// owners maps each Cluster of the namespace to the GatewayDNS that may
// publish its names: of those that select it and are not being deleted, the
// oldest by creationTimestamp, then name. The newer ones report Conflict.
func (c *Controller) owners(namespace string, clusterObjs []any) (map[string]string, error) {
	objs, err := c.gdns.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("list GatewayDNS in %q: %w", namespace, err)
	}
	var all []*v1alpha1.GatewayDNS
	for _, o := range objs {
		gd, err := toGatewayDNS(o)
		if err != nil || gd.DeletionTimestamp != nil || gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless {
			// A headless export names no cluster of its own.
			continue
		}
		all = append(all, gd)
	}
	sort.Slice(all, func(i, j int) bool {
		ti, tj := all[i].CreationTimestamp, all[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return all[i].Name < all[j].Name
	})
	out := map[string]string{}
	for _, o := range clusterObjs {
		m := watch.Meta(o)
		if m == nil {
			continue
		}
		for _, gd := range all {
			sel, err := metav1.LabelSelectorAsSelector(&gd.Spec.ClusterSelector)
			if err == nil && sel.Matches(labels.Set(m.GetLabels())) {
				out[m.GetName()] = gd.Namespace + "/" + gd.Name
				break
			}
		}
	}
	return out, nil
}

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
func (c *Controller) cleanup(ctx context.Context, namespace, name string) removal {
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
func (c *Controller) releaseClaims(namespace, name string) {
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
func (c *Controller) forget(ctx context.Context, key string) error {
	if err := c.saveHeadless(ctx, c.memory.of(key, ""), key, nil); err != nil {
		return err
	}
	c.publisher.Forget(key)
	c.memory.forget(key)
	return nil
}

// othersIn reports whether a GatewayDNS of namespace other than name
// exists and is not being deleted.
func (c *Controller) othersIn(namespace, name string) bool {
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
