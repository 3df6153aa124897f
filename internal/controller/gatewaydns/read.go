package gatewaydns

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
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
func (c *Reconciler) gather(ctx context.Context, gd *v1alpha1.GatewayDNS, last map[string]contract.HeadlessEndpoints) (gathered, error) {
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
func (c *Reconciler) readCluster(in *desired.Input, w *workload.Cluster, gd *v1alpha1.GatewayDNS, key string) map[string]bool {
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
func (c *Reconciler) owners(namespace string, clusterObjs []any) (map[string]string, error) {
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
