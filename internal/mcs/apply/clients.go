package apply

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	typeddiscoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclientset "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"
	typedmcsv1beta1 "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/typed/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/write"
)

// ObjectClient is what the writer does with one kind in one namespace
// (write.Client).
type ObjectClient[T metav1.Object, L any] = write.Client[T, L]

// ImportClient writes ServiceImports, whose status has its own subresource.
type ImportClient interface {
	ObjectClient[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList]
	UpdateStatus(ctx context.Context, obj *mcsv1beta1.ServiceImport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceImport, error)
}

// ServiceClient writes derived Services.
type ServiceClient = ObjectClient[*corev1.Service, *corev1.ServiceList]

// SliceClient writes EndpointSlices.
type SliceClient = ObjectClient[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]

// ExportClient reads ServiceExports and writes only their status: the
// export is the user's, its status the controller's.
type ExportClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*mcsv1beta1.ServiceExportList, error)
	UpdateStatus(ctx context.Context, obj *mcsv1beta1.ServiceExport, opts metav1.UpdateOptions) (*mcsv1beta1.ServiceExport, error)
}

// The typed clients are what a Member wraps.
var (
	_ ImportClient  = typedmcsv1beta1.ServiceImportInterface(nil)
	_ ExportClient  = typedmcsv1beta1.ServiceExportInterface(nil)
	_ ServiceClient = typedcorev1.ServiceInterface(nil)
	_ SliceClient   = typeddiscoveryv1.EndpointSliceInterface(nil)
)

// Member is one member's clients, per namespace ("" lists every one).
type Member struct {
	// Cluster is the member's cluster id, for errors.
	Cluster  string
	Imports  func(namespace string) ImportClient
	Exports  func(namespace string) ExportClient
	Services func(namespace string) ServiceClient
	Slices   func(namespace string) SliceClient
}

// KubeClient and MCSClient are the parts of a member's clientsets a
// Member is made of: the real and fake clientsets have them, and so does
// the controller's workload client.
type (
	KubeClient interface {
		CoreV1() typedcorev1.CoreV1Interface
		DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface
	}
	MCSClient interface {
		MulticlusterV1beta1() typedmcsv1beta1.MulticlusterV1beta1Interface
	}
)

var (
	_ KubeClient = kubernetes.Interface(nil)
	_ MCSClient  = mcsclientset.Interface(nil)
)

// NewMember wraps a member's typed clients (real or fake).
func NewMember(cluster string, kube KubeClient, mcs MCSClient) Member {
	return Member{
		Cluster:  cluster,
		Imports:  func(ns string) ImportClient { return mcs.MulticlusterV1beta1().ServiceImports(ns) },
		Exports:  func(ns string) ExportClient { return mcs.MulticlusterV1beta1().ServiceExports(ns) },
		Services: func(ns string) ServiceClient { return kube.CoreV1().Services(ns) },
		Slices:   func(ns string) SliceClient { return kube.DiscoveryV1().EndpointSlices(ns) },
	}
}
