package apply

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
)

// ErrNotAnswering is the error of a call to a member that passed its
// deadline, and of every call after it in the same write: a member that accepts
// connections and answers nothing would otherwise cost a deadline per
// object, minutes for a write of a few hundred.
var ErrNotAnswering = errors.New("the member's API server did not answer in time; its other writes wait for the next sync")

// Bounded returns m with every call bounded by timeout, and with every
// call after the first that passed it failing at once with
// ErrNotAnswering. One Bounded member is one write: a new sync makes a
// new one, so a member that answers again is written again.
func Bounded(m Member, timeout time.Duration) Member {
	g := &gate{timeout: timeout}
	return Member{
		Cluster: m.Cluster,
		Imports: func(ns string) ImportClient {
			c := m.Imports(ns)
			return boundedImports{boundedObjects: boundedObjects[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList]{g: g, c: c}, c: c}
		},
		Exports: func(ns string) ExportClient { return boundedExports{g: g, c: m.Exports(ns)} },
		Services: func(ns string) ServiceClient {
			return boundedObjects[*corev1.Service, *corev1.ServiceList]{g: g, c: m.Services(ns)}
		},
		Slices: func(ns string) SliceClient {
			return boundedObjects[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{g: g, c: m.Slices(ns)}
		},
	}
}

// gate is the deadline of one member's calls and whether one has passed.
type gate struct {
	timeout time.Duration
	tripped atomic.Bool
}

// do runs call with its own deadline, unless the member has already let
// one pass.
func do[T any](ctx context.Context, g *gate, call func(context.Context) (T, error)) (T, error) {
	var zero T
	if g.tripped.Load() {
		return zero, ErrNotAnswering
	}
	if g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	out, err := call(ctx)
	// The member's answer is the tenant's: its text is cut before any
	// writer keeps, joins or logs it.
	err = kubeclient.Cut(err)
	// Only the client's own deadline trips the gate: a server that says it
	// timed out (a slow webhook) has answered.
	if kubeclient.IsTimeout(err) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		g.tripped.Store(true)
		return out, fmt.Errorf("%w: %w (after %s)", ErrNotAnswering, err, g.timeout)
	}
	return out, err
}

// boundedObjects is an ObjectClient whose calls go through a gate.
type boundedObjects[T metav1.Object, L any] struct {
	g *gate
	c ObjectClient[T, L]
}

func (b boundedObjects[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	return do(ctx, b.g, func(ctx context.Context) (T, error) { return b.c.Create(ctx, obj, opts) })
}

func (b boundedObjects[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return do(ctx, b.g, func(ctx context.Context) (T, error) { return b.c.Update(ctx, obj, opts) })
}

func (b boundedObjects[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	return do(ctx, b.g, func(ctx context.Context) (T, error) { return b.c.Get(ctx, name, opts) })
}

func (b boundedObjects[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	_, err := do(ctx, b.g, func(ctx context.Context) (struct{}, error) { return struct{}{}, b.c.Delete(ctx, name, opts) })
	return err
}

func (b boundedObjects[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	return do(ctx, b.g, func(ctx context.Context) (L, error) { return b.c.List(ctx, opts) })
}

type boundedImports struct {
	boundedObjects[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList]
	c ImportClient
}

func (b boundedImports) UpdateStatus(ctx context.Context, obj *mcsv1beta1.ServiceImport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceImport, error) {
	return do(ctx, b.g, func(ctx context.Context) (*mcsv1beta1.ServiceImport, error) { return b.c.UpdateStatus(ctx, obj, opts) })
}

type boundedExports struct {
	g *gate
	c ExportClient
}

func (b boundedExports) List(ctx context.Context, opts metav1.ListOptions) (*mcsv1beta1.ServiceExportList, error) {
	return do(ctx, b.g, func(ctx context.Context) (*mcsv1beta1.ServiceExportList, error) { return b.c.List(ctx, opts) })
}

func (b boundedExports) UpdateStatus(ctx context.Context, obj *mcsv1beta1.ServiceExport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceExport, error) {
	return do(ctx, b.g, func(ctx context.Context) (*mcsv1beta1.ServiceExport, error) { return b.c.UpdateStatus(ctx, obj, opts) })
}

// Only the typed clients are ever wrapped.
var (
	_ ImportClient  = boundedImports{}
	_ ExportClient  = boundedExports{}
	_ ServiceClient = boundedObjects[*corev1.Service, *corev1.ServiceList]{}
	_ SliceClient   = boundedObjects[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{}
)
