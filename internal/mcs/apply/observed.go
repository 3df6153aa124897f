package apply

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Kind is a kind of object the writer writes into a member.
type Kind int

// The kinds Observed reports.
const (
	KindImport Kind = iota
	KindService
	KindSlice
)

// Seen is told of every write a member accepted: the object as the
// member returned it, or nil for one deleted.
type Seen func(kind Kind, namespace, name string, obj metav1.Object)

// Observed returns m with every accepted create, update and delete told
// to seen: a cache of the member's objects that lags behind its watch
// then holds what this write made, and the next write plans from it.
func Observed(m Member, seen Seen) Member {
	return Member{
		Cluster: m.Cluster,
		Imports: func(ns string) ImportClient {
			c := m.Imports(ns)
			return observedImports{observedObjects: observedObjects[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList]{
				kind: KindImport, ns: ns, seen: seen, c: c}, c: c}
		},
		Exports: m.Exports,
		Services: func(ns string) ServiceClient {
			return observedObjects[*corev1.Service, *corev1.ServiceList]{kind: KindService, ns: ns, seen: seen, c: m.Services(ns)}
		},
		Slices: func(ns string) SliceClient {
			return observedObjects[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{kind: KindSlice, ns: ns, seen: seen, c: m.Slices(ns)}
		},
	}
}

// observedObjects is an ObjectClient of one kind and namespace whose
// accepted writes are told to seen.
type observedObjects[T metav1.Object, L any] struct {
	kind Kind
	ns   string
	seen Seen
	c    ObjectClient[T, L]
}

func (o observedObjects[T, L]) told(obj T, err error) (T, error) {
	if err == nil {
		o.seen(o.kind, obj.GetNamespace(), obj.GetName(), obj)
	}
	return obj, err
}

func (o observedObjects[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	return o.told(o.c.Create(ctx, obj, opts))
}

func (o observedObjects[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return o.told(o.c.Update(ctx, obj, opts))
}

func (o observedObjects[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	return o.c.Get(ctx, name, opts)
}

func (o observedObjects[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	err := o.c.Delete(ctx, name, opts)
	if err == nil || apierrors.IsNotFound(err) {
		o.seen(o.kind, o.ns, name, nil)
	}
	return err
}

func (o observedObjects[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	return o.c.List(ctx, opts)
}

type observedImports struct {
	observedObjects[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList]
	c ImportClient
}

func (o observedImports) UpdateStatus(ctx context.Context, obj *mcsv1beta1.ServiceImport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceImport, error) {
	return o.told(o.c.UpdateStatus(ctx, obj, opts))
}

// Only the typed clients are ever wrapped.
var (
	_ ImportClient  = observedImports{}
	_ ServiceClient = observedObjects[*corev1.Service, *corev1.ServiceList]{}
	_ SliceClient   = observedObjects[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{}
)
