package workload

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// NamesRef is the ref under which Release keeps a cluster's Service
// informer for spec.names (every other ref is a Service's <ns>/<name>).
const NamesRef = "*names"

// namesWatch is the informer on every Service of a workload cluster, for
// the names Services claim with the fqdn annotation: it cannot be
// selected on the server (an annotation is no field or label), so every
// Service is listed and watched, and only what names need is cached.
type namesWatch struct {
	// informer is the cluster's shared Service informer (allServices).
	informer *objectWatch
	// endpoints is the cluster-wide EndpointSlice informer that gives the
	// health of every claiming Service: one watch per cluster, not two per
	// claiming Service (docs/benchmarks.md, "Service names").
	endpoints *objectWatch
	cancel    context.CancelFunc
	// release tells the shared Service informer names no longer read it.
	release func()
	users   map[string]bool
}

// claims reports whether obj, a Service, claims a name: type
// LoadBalancer with the fqdn annotation.
func claims(obj any) bool {
	s, ok := obj.(*corev1.Service)
	if !ok || s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	_, has := s.Annotations[contract.AnnotationFQDN]
	return has
}

// serviceForNames keeps of a Service what names read: name, namespace,
// resourceVersion, type, the fqdn annotation (its first
// maxCachedNameBytes) and the load-balancer
// ingress addresses (no spec beyond the type, no labels, other
// annotations, ports or managedFields: a cluster may hold thousands of
// Services, most of them claiming nothing). Idempotent.
func serviceForNames(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion,
	}, Spec: corev1.ServiceSpec{Type: s.Spec.Type}}
	if v, has := s.Annotations[contract.AnnotationFQDN]; has {
		kept.Annotations = map[string]string{contract.AnnotationFQDN: v[:min(len(v), maxCachedNameBytes)]}
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) > 0 {
		kept.Status.LoadBalancer.Ingress = make([]corev1.LoadBalancerIngress, 0, len(s.Status.LoadBalancer.Ingress))
		for _, in := range s.Status.LoadBalancer.Ingress {
			kept.Status.LoadBalancer.Ingress = append(kept.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname})
		}
	}
	return kept, nil
}

// maxCachedNameBytes bounds the fqdn annotation as the cache keeps it:
// a name is at most 253 bytes, so a longer value is refused whole or cut.
const maxCachedNameBytes = 1 << 10

// WatchNames makes sure the Services of w, cluster-wide, and their
// EndpointSlices are watched for user's names: the informers are started
// here and nowhere else (again after a cut-off, once the cluster is no
// longer cut off). Reading is Names, which never starts anything.
func (m *Set) WatchNames(w *Cluster, user string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nw := w.names
	if nw != nil && (nw.informer.cut() || nw.endpoints.cut()) {
		nw.stop()
		w.names = nil
		nw = nil
	}
	if nw == nil && w.reads.cut() != "" {
		return
	}
	if nw == nil {
		services := m.servicesLocked(w)
		if services == nil {
			return
		}
		ctx, cancel := context.WithCancel(w.ctx)
		nw = &namesWatch{cancel: cancel, users: map[string]bool{}, informer: services.informer}
		notify := func() { m.onService(m.namesUsersOf(nw)) }
		nw.endpoints = watchNamesEndpoints(w.client, w.reads, nw.informer.store, notify)
		nw.endpoints.run(ctx, notify)
		services.onNames.Store(&notify)
		nw.release = func() { services.onNames.Store(nil) }
		w.names = nw
		klog.FromContext(m.ctx).Info("Watching the Services of workload cluster for names", "cluster", w.key)
	}
	nw.users[user] = true
}

// Names returns the cached LoadBalancer Services of w annotated with the
// fqdn annotation, and for each Service with an address the ready
// endpoints of its EndpointSlices. synced is false until both informers,
// started by WatchNames, have listed (unreachable, or the kubeconfig may
// not list Services or EndpointSlices cluster-wide): the caller then keeps
// the names as last published.
func (m *Set) Names(w *Cluster) (out []contract.NameService, synced bool) {
	m.mu.Lock()
	nw := w.names
	m.mu.Unlock()
	if nw == nil || !nw.informer.HasSynced() || !nw.endpoints.HasSynced() {
		return nil, false
	}
	for _, o := range nw.informer.store.List() {
		if !claims(o) {
			continue
		}
		s := o.(*corev1.Service) //nolint:forcetypeassert // claims checked it
		ns := contract.NameService{Namespace: s.Namespace, Name: s.Name, Value: s.Annotations[contract.AnnotationFQDN],
			Ingress: s.Status.LoadBalancer.Ingress}
		if len(s.Status.LoadBalancer.Ingress) > 0 {
			ns.ReadyEndpoints, ns.EndpointsSynced = serviceReady(nw.endpoints.store, s.Namespace, s.Name), true
		}
		out = append(out, ns)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out, true
}

// stop stops the informers of nw and tells the shared Service informer.
func (nw *namesWatch) stop() {
	nw.cancel()
	if nw.release != nil {
		nw.release()
	}
}

func (m *Set) namesUsersOf(nw *namesWatch) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(nw.users))
	for u := range nw.users {
		out = append(out, u)
	}
	return out
}
