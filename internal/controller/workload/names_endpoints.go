package workload

import (
	"github.com/xcc-dns/xcc-dns/internal/contract"

	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// byService is the index of the names EndpointSlice informer: a slice's
// Service, "<ns>/<service>".
const byService = "service"

// watchNamesEndpoints is the cluster-wide EndpointSlice informer of
// spec.names: the health of every claiming Service of a cluster from one
// watch, where a gateway Service has two of its own (a cluster may hold
// hundreds of claiming Services). Only slices of a Service (label
// kubernetes.io/service-name) are listed, so the controller's own slices
// are not. Of each slice it keeps what health reads (namesEndpoints),
// indexed by Service. An event is one that makes a Service's ready
// endpoints cross zero, and only for a Service of services (the names
// Service informer's store) that claims a name: pods of other
// Deployments come and go all the time.
func watchNamesEndpoints(client Client, r *reads, services cache.Store, onChange func()) *objectWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = discoveryv1.LabelServiceName
			return client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = discoveryv1.LabelServiceName
			return client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	var store cache.Indexer
	// crossed reports whether the Service of slice s went from no ready
	// endpoint to some or back, given how many ready endpoints the slice
	// had before (was) and has now (is); the store already holds the new
	// state, as the informer updates it before it calls the handler.
	crossed := func(s any, was, is int) bool {
		ns, name, ok := sliceService(s)
		if !ok || was == is || !claimingService(services, ns, name) {
			return false
		}
		now := serviceReady(store, ns, name)
		before := now - is + was
		return (before > 0) != (now > 0)
	}
	ow := newInformer(r, "EndpointSlices of every namespace", lw, cache.InformerOptions{
		ObjectType: &discoveryv1.EndpointSlice{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) {
				if crossed(o, 0, sliceReady(o)) {
					onChange()
				}
			},
			UpdateFunc: func(old, cur any) {
				if crossed(cur, sliceReady(old), sliceReady(cur)) {
					onChange()
				}
			},
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if crossed(o, sliceReady(o), 0) {
					onChange()
				}
			},
		},
		Transform: namesEndpoints,
		Indexers:  cache.Indexers{byService: indexByService},
	})
	store = ow.store.(cache.Indexer) //nolint:forcetypeassert // Indexers set: the store is an Indexer
	return ow
}

// namesEndpoints keeps of an EndpointSlice what names read: its name,
// namespace, resourceVersion, the kubernetes.io/service-name label and
// an empty endpoint per ready endpoint (contract.ReadyEndpointCount counts
// an endpoint without conditions as ready), nothing of addresses, ports
// or topology. Idempotent.
func namesEndpoints(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	kept := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion,
	}}
	if v, has := s.Labels[discoveryv1.LabelServiceName]; has {
		kept.Labels = map[string]string{discoveryv1.LabelServiceName: v}
	}
	if n := contract.ReadyEndpointCount([]*discoveryv1.EndpointSlice{s}); n > 0 {
		kept.Endpoints = make([]discoveryv1.Endpoint, n)
	}
	internMeta(&kept.ObjectMeta)
	return kept, nil
}

// indexByService indexes a slice by its Service, "<ns>/<service>".
func indexByService(obj any) ([]string, error) {
	ns, name, ok := sliceService(obj)
	if !ok {
		return nil, nil
	}
	return []string{ns + "/" + name}, nil
}

// sliceService returns the namespace and Service of slice obj; ok is
// false for an object that is no slice or a slice of no Service.
func sliceService(obj any) (namespace, service string, ok bool) {
	s, isSlice := obj.(*discoveryv1.EndpointSlice)
	if !isSlice {
		return "", "", false
	}
	service = s.Labels[discoveryv1.LabelServiceName]
	return s.Namespace, service, service != ""
}

// sliceReady is the number of ready endpoints of slice obj.
func sliceReady(obj any) int {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return 0
	}
	return contract.ReadyEndpointCount([]*discoveryv1.EndpointSlice{s})
}

// serviceReady is the number of ready endpoints of the Service
// namespace/name in the names EndpointSlice informer's store.
func serviceReady(store cache.Store, namespace, name string) int {
	idx, ok := store.(cache.Indexer)
	if !ok {
		return 0
	}
	objs, err := idx.ByIndex(byService, namespace+"/"+name)
	if err != nil {
		return 0
	}
	n := 0
	for _, o := range objs {
		n += sliceReady(o)
	}
	return n
}

// claimingService reports whether the Service namespace/name, as the
// names Service informer has it, claims a name and has an address: only
// then is its health read.
func claimingService(services cache.Store, namespace, name string) bool {
	obj, exists, err := services.GetByKey(namespace + "/" + name)
	if err != nil || !exists || !claims(obj) {
		return false
	}
	s, ok := obj.(*corev1.Service)
	return ok && len(s.Status.LoadBalancer.Ingress) > 0
}
