package workload

import (
	"context"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
)

// watchEndpoints is an informer on the EndpointSlices of one Service
// (label kubernetes.io/service-name, in the Service's namespace), as the
// cluster's endpoint slice controller writes them: whether the gateway
// has a ready endpoint is part of its health for the multi-cluster name.
// Of each slice it caches only the endpoints' conditions, and of its
// updates only those that change whether it has a ready endpoint are
// events.
func watchEndpoints(client Client, namespace, service string, onChange func()) *objectWatch {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service}).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return client.DiscoveryV1().EndpointSlices(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return client.DiscoveryV1().EndpointSlices(namespace).Watch(ctx, o)
		},
	}
	store, ctl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, client),
		ObjectType:    &discoveryv1.EndpointSlice{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { onChange() },
			UpdateFunc: func(old, cur any) {
				// Only a slice gaining or losing its last ready endpoint
				// can change health; a gateway's pods come and go often.
				if hasReady(old) != hasReady(cur) {
					onChange()
				}
			},
			DeleteFunc: func(any) { onChange() },
		},
		Transform: endpointsForCache,
	})
	return &objectWatch{store: store, ctl: ctl}
}

// hasReady reports whether obj, an EndpointSlice, has an endpoint that
// takes traffic.
func hasReady(obj any) bool {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	return ok && desired.ReadyEndpoints([]*discoveryv1.EndpointSlice{s}) > 0
}

// endpointsForCache keeps of an EndpointSlice what health reads: its
// name, namespace, resourceVersion and each endpoint's conditions; a
// gateway with hundreds of pods then costs little memory. Idempotent.
func endpointsForCache(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	kept := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion,
	}, AddressType: s.AddressType}
	for _, ep := range s.Endpoints {
		kept.Endpoints = append(kept.Endpoints, discoveryv1.Endpoint{Conditions: ep.Conditions})
	}
	return kept, nil
}

// ReadyEndpoints returns how many ready endpoints the gateway Service
// namespace/name of w has (desired.ReadyEndpoints), watched since
// Service was first called for it; synced is false until its
// EndpointSlices have been listed (or when they cannot be: the
// kubeconfig lacks list and watch on them).
func (m *Set) ReadyEndpoints(w *Cluster, namespace, name string) (ready int, synced bool) {
	m.mu.Lock()
	sw := w.services[namespace+"/"+name]
	m.mu.Unlock()
	if sw == nil || sw.endpoints == nil || !sw.endpoints.HasSynced() {
		return 0, false
	}
	var slices []*discoveryv1.EndpointSlice
	for _, o := range sw.endpoints.store.List() {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			slices = append(slices, s)
		}
	}
	return desired.ReadyEndpoints(slices), true
}
