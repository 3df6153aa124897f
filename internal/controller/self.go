package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
)

// selfMarkers remembers the self markers (contract.BuildSelf) written, by
// destination and namespace, so that a sync writes one only when the
// Clusters it lists change, and reads it again after half the resync
// period (which repairs a marker someone else changed or deleted).
type selfMarkers struct {
	mu      sync.Mutex
	written map[string]selfWritten // selfKey(destination, namespace)
}

type selfWritten struct {
	clusters string
	client   workload.Client
	at       time.Time
}

func newSelfMarkers() *selfMarkers { return &selfMarkers{written: map[string]selfWritten{}} }

// fresh reports whether the marker key was written listing clusters with
// client less than maxAge ago: nothing to write.
func (s *selfMarkers) fresh(key, clusters string, client workload.Client, maxAge time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.written[key]
	return ok && w.clusters == clusters && w.client == client && time.Since(w.at) < maxAge
}

func (s *selfMarkers) put(key string, w selfWritten) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written[key] = w
}

// forgetNamespace drops the markers of namespace at every destination.
func (s *selfMarkers) forgetNamespace(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.written {
		if strings.HasSuffix(k, "\x00"+namespace) {
			delete(s.written, k)
		}
	}
}

func selfKey(destination, namespace string) string { return destination + "\x00" + namespace }

// destinationGroup is the targets of a namespace that share a destination.
type destinationGroup struct {
	key      string
	clusters []string
	targets  []publish.Target
}

// destinations groups the opted-in targets by destination (API server and
// slice namespace UID), in the order of targets; a target whose slice
// namespace is not listed yet or absent is left out.
func (c *Controller) destinations(targets []publish.Target) []*destinationGroup {
	byKey := map[string]*destinationGroup{}
	var out []*destinationGroup
	for _, t := range targets {
		uid, has, synced := t.Cluster.SliceNamespace(c.cfg.SliceNamespace)
		if !synced || !has {
			continue
		}
		key := t.Cluster.Destination(uid)
		if key == "" {
			key = t.Cluster.Key()
		}
		g := byKey[key]
		if g == nil {
			g = &destinationGroup{key: key}
			byKey[key] = g
			out = append(out, g)
		}
		g.clusters = append(g.clusters, t.Name)
		g.targets = append(g.targets, t)
	}
	for _, g := range out {
		slices.Sort(g.clusters)
	}
	return out
}

// writeSelf makes every destination of targets hold the self marker of
// namespace listing the Clusters there, and returns those lists (one per
// destination, for contract.Answered). A marker of that name the
// controller did not write (no managed-by label, or another record kind)
// is never changed; that destination is then left without a list.
func (c *Controller) writeSelf(ctx context.Context, namespace string, targets []publish.Target) ([][]string, error) {
	var selves [][]string
	var errs []string
	for _, g := range c.destinations(targets) {
		var err error
		for _, t := range g.targets {
			if err = c.putSelf(ctx, namespace, g, t); err == nil {
				break
			}
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		selves = append(selves, g.clusters)
	}
	if len(errs) > 0 {
		return selves, fmt.Errorf("self markers of %s: %s", namespace, strings.Join(errs, "; "))
	}
	return selves, nil
}

// putSelf writes the marker of g through t unless it is known to be there.
func (c *Controller) putSelf(ctx context.Context, namespace string, g *destinationGroup, t publish.Target) error {
	want := contract.BuildSelf(contract.Self{Namespace: namespace, Clusters: g.clusters})
	clusters := want.Annotations[contract.AnnotationSelfClusters]
	key := selfKey(g.key, namespace)
	if c.self.fresh(key, clusters, t.Cluster.Client(), c.cfg.Resync/2) {
		return nil
	}
	api := t.Cluster.Client().DiscoveryV1().EndpointSlices(c.cfg.SliceNamespace)
	rctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	existing, err := api.Get(rctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		want.Namespace = c.cfg.SliceNamespace
		if _, err := api.Create(rctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("cluster %s: create %s: %w", t.Name, want.Name, err)
		}
		c.cfg.Metrics.SlicesWritten.WithLabelValues("create").Inc()
	case err != nil:
		return fmt.Errorf("cluster %s: get %s: %w", t.Name, want.Name, err)
	case !ownSelf(existing):
		return fmt.Errorf("cluster %s: EndpointSlice %s/%s exists and was not written by xcc-dns: left alone", t.Name, c.cfg.SliceNamespace, want.Name)
	case !sameSelf(existing, want):
		u := existing.DeepCopy()
		if u.Labels == nil {
			u.Labels = map[string]string{}
		}
		if u.Annotations == nil {
			u.Annotations = map[string]string{}
		}
		maps.Copy(u.Labels, want.Labels)
		maps.Copy(u.Annotations, want.Annotations)
		u.Endpoints, u.Ports = nil, nil
		if _, err := api.Update(rctx, u, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("cluster %s: update %s: %w", t.Name, want.Name, err)
		}
		c.cfg.Metrics.SlicesWritten.WithLabelValues("update").Inc()
	}
	klog.FromContext(ctx).V(2).Info("Self marker in place", "cluster", t.Name, "namespace", namespace, "clusters", clusters)
	c.self.put(key, selfWritten{clusters: clusters, client: t.Cluster.Client(), at: time.Now()})
	return nil
}

// ownSelf reports whether s is a self marker the controller wrote.
func ownSelf(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[contract.LabelManagedBy] == contract.ManagedByValue && s.Labels[contract.LabelRecord] == string(contract.KindSelf)
}

func sameSelf(existing, want *discoveryv1.EndpointSlice) bool {
	for k, v := range want.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Annotations {
		if existing.Annotations[k] != v {
			return false
		}
	}
	return len(existing.Endpoints) == 0 && len(existing.Ports) == 0
}

// removeSelf deletes the self marker of namespace from the cluster w, if
// the controller wrote it: no GatewayDNS of the namespace targets the
// cluster any more.
func (c *Controller) removeSelf(ctx context.Context, namespace string, w *workload.Cluster) error {
	name := contract.SelfSliceName(namespace)
	api := w.Client().DiscoveryV1().EndpointSlices(c.cfg.SliceNamespace)
	rctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	existing, err := api.Get(rctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get self marker %s: %w", name, err)
	}
	if !ownSelf(existing) {
		return nil
	}
	err = api.Delete(rctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID, ResourceVersion: &existing.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete self marker %s: %w", name, err)
	}
	c.cfg.Metrics.SlicesWritten.WithLabelValues("delete").Inc()
	c.self.forgetNamespace(namespace)
	return nil
}
