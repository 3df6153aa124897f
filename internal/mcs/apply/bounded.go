package apply

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/write"
)

// ErrNotAnswering is write.ErrNotAnswering: a call of the write passed
// its deadline, and the rest of the write is not asked.
var ErrNotAnswering = write.ErrNotAnswering

// Bounded returns m with every call through one write.Gate of timeout:
// each call has its deadline, and every call after the first that passed
// it fails at once with ErrNotAnswering. One Bounded member is one write:
// a new sync makes a new one, so a member that answers again is written
// again.
func Bounded(m Member, timeout time.Duration) Member {
	g := write.NewGate(timeout)
	return Member{
		Cluster: m.Cluster,
		Imports: func(ns string) ImportClient {
			c := m.Imports(ns)
			return boundedImports{Client: write.Bound(ObjectClient[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList](c), g), g: g, c: c}
		},
		Exports:  func(ns string) ExportClient { return boundedExports{g: g, c: m.Exports(ns)} },
		Services: func(ns string) ServiceClient { return write.Bound(m.Services(ns), g) },
		Slices:   func(ns string) SliceClient { return write.Bound(m.Slices(ns), g) },
	}
}

type boundedImports struct {
	write.Client[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList]
	g *write.Gate
	c ImportClient
}

func (b boundedImports) UpdateStatus(ctx context.Context, obj *mcsv1beta1.ServiceImport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceImport, error) {
	return write.Do(ctx, b.g, func(ctx context.Context) (*mcsv1beta1.ServiceImport, error) { return b.c.UpdateStatus(ctx, obj, opts) })
}

type boundedExports struct {
	g *write.Gate
	c ExportClient
}

func (b boundedExports) List(ctx context.Context, opts metav1.ListOptions) (*mcsv1beta1.ServiceExportList, error) {
	return write.Do(ctx, b.g, func(ctx context.Context) (*mcsv1beta1.ServiceExportList, error) { return b.c.List(ctx, opts) })
}

func (b boundedExports) UpdateStatus(ctx context.Context, obj *mcsv1beta1.ServiceExport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceExport, error) {
	return write.Do(ctx, b.g, func(ctx context.Context) (*mcsv1beta1.ServiceExport, error) { return b.c.UpdateStatus(ctx, obj, opts) })
}

// Only the typed clients are ever wrapped.
var (
	_ ImportClient  = boundedImports{}
	_ ExportClient  = boundedExports{}
	_ ServiceClient = write.Bound[*corev1.Service, *corev1.ServiceList](nil, nil)
	_ SliceClient   = write.Bound[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](nil, nil)
)
