package workload

import (
	"context"
	"sync/atomic"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// watchEndpoints is an informer on the EndpointSlices of one Service
// (label kubernetes.io/service-name, in the Service's namespace), as the
// cluster's endpoint slice controller writes them. It serves two uses: a
// gateway Service's health for the multi-cluster name (does it have a
// ready endpoint?) and a headless export (which ready endpoints, with
// their addresses, hostnames and ports). Of each slice it caches only
// what those read (endpointsForCache). Of its updates, only those that
// change whether the slice has a ready endpoint are events, unless
// content is set (a headless export uses the Service): then every change
// of what is cached is one.
func watchEndpoints(client Client, r *reads, namespace, service string, content *atomic.Bool, onChange func()) *objectWatch {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service}).String()
	lw := sliceListWatch(client, namespace, sel)
	return newInformer(r, "EndpointSlices of Service "+namespace+"/"+service, lw, cache.InformerOptions{
		ObjectType: &discoveryv1.EndpointSlice{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { onChange() },
			UpdateFunc: func(old, cur any) {
				if endpointsChanged(old, cur, content.Load()) {
					onChange()
				}
			},
			DeleteFunc: func(any) { onChange() },
		},
		Transform: endpointsForCache,
	})
}

// sliceListWatch lists and watches the EndpointSlices of namespace that
// selector selects.
func sliceListWatch(client Client, namespace, selector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return client.DiscoveryV1().EndpointSlices(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return client.DiscoveryV1().EndpointSlices(namespace).Watch(ctx, o)
		},
	}
}

// endpointsChanged reports whether an update of a cached slice (both
// already trimmed by endpointsForCache) matters: for health alone, only a
// slice gaining or losing its last ready endpoint (a gateway's pods come
// and go often); for a headless export (content), any change of its
// endpoints or ports.
func endpointsChanged(old, cur any, content bool) bool {
	if hasReady(old) != hasReady(cur) {
		return true
	}
	if !content {
		return false
	}
	o, ok1 := old.(*discoveryv1.EndpointSlice)
	c, ok2 := cur.(*discoveryv1.EndpointSlice)
	if !ok1 || !ok2 {
		return true
	}
	return o.AddressType != c.AddressType || !equality.Semantic.DeepEqual(o.Endpoints, c.Endpoints) ||
		!equality.Semantic.DeepEqual(o.Ports, c.Ports)
}

// hasReady reports whether obj, an EndpointSlice, has an endpoint that
// takes traffic.
func hasReady(obj any) bool {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	return ok && contract.ReadyEndpointCount([]*discoveryv1.EndpointSlice{s}) > 0
}

// endpointsForCache keeps of an EndpointSlice what health and a headless
// export read: its name, namespace, resourceVersion, address type and
// ports, and of each endpoint its addresses, hostname and conditions
// (no node, zone, hints, targetRef, labels or annotations), its Service
// label, and the managed-by label when it is this controller's.
// Idempotent.
func endpointsForCache(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	kept := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion,
	}, AddressType: s.AddressType, Ports: s.Ports}
	if v := s.Labels[discoveryv1.LabelServiceName]; v != "" {
		kept.Labels = map[string]string{discoveryv1.LabelServiceName: v}
	}
	if v := s.Labels[contract.LabelManagedBy]; v == contract.ManagedByValue {
		if kept.Labels == nil {
			kept.Labels = map[string]string{}
		}
		kept.Labels[contract.LabelManagedBy] = v
	}
	if len(s.Endpoints) > 0 {
		kept.Endpoints = make([]discoveryv1.Endpoint, 0, len(s.Endpoints))
	}
	for _, ep := range s.Endpoints {
		kept.Endpoints = append(kept.Endpoints, discoveryv1.Endpoint{Addresses: ep.Addresses, Hostname: ep.Hostname, Conditions: ep.Conditions})
	}
	internMeta(&kept.ObjectMeta)
	return kept, nil
}

// endpointSlices returns the cached slices of the Service namespace/name
// of w; synced is false until they have been listed (or when they cannot
// be: the kubeconfig lacks list and watch on them).
func (m *Set) endpointSlices(w *Cluster, namespace, name string) (out []*discoveryv1.EndpointSlice, synced bool) {
	m.mu.Lock()
	sw := w.services[namespace+"/"+name]
	m.mu.Unlock()
	if sw == nil || sw.endpoints == nil || !sw.endpoints.HasSynced() {
		return nil, false
	}
	for _, o := range sw.endpoints.store.List() {
		// Slices this controller wrote (a clusterset's imported endpoints)
		// are never read back as the Service's own.
		if s, ok := o.(*discoveryv1.EndpointSlice); ok && s.Labels[contract.LabelManagedBy] != contract.ManagedByValue {
			out = append(out, s)
		}
	}
	return out, true
}

// ReadyEndpoints returns how many ready endpoints the gateway Service
// namespace/name of w has (contract.ReadyEndpointCount), watched since
// WatchService; synced as for endpointSlices.
func (m *Set) ReadyEndpoints(w *Cluster, namespace, name string) (ready int, synced bool) {
	slices, synced := m.endpointSlices(w, namespace, name)
	if !synced {
		return 0, false
	}
	return contract.ReadyEndpointCount(slices), true
}

// Endpoints returns the cached EndpointSlices of the headless Service
// namespace/name of w for a headless export (read only: they are the
// informer's), watched since WatchService; synced as
// for endpointSlices.
func (m *Set) Endpoints(w *Cluster, namespace, name string) (slices []*discoveryv1.EndpointSlice, synced bool) {
	return m.endpointSlices(w, namespace, name)
}
