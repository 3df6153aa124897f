package clusterset

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
)

// The kinds of the controller's own objects in a member, as OwnKinds
// lists them: indexes of workload.OwnList and of workload.Set.Seen.
const (
	ownImports = iota
	ownServices
	ownSlices   // imported EndpointSlices, beside the exported Services
	ownContract // KindClusterSet contract slices in the slice namespace
)

// OwnKinds are the kinds of objects the ClusterSet writer keeps of its
// own in each member (workload.Config.Own): its ServiceImports, derived
// Services and imported EndpointSlices by apply.OursSelector, summed per
// import (apply.HeldDigest), and its contract slices in the slice
// namespace. A write plans from them instead of listing the member.
func OwnKinds() []workload.OwnKind {
	ours := apply.OursSelector()
	digest := func(o metav1.Object) (any, uint64, bool) { return apply.HeldDigest(o) }
	return []workload.OwnKind{
		ownImports: {What: "the controller's ServiceImports", Object: &mcsv1beta1.ServiceImport{}, Selector: ours, Digest: digest,
			ListWatch: func(_ workload.Client, mcs workload.MCSClient, _ string) workload.ListWatch {
				c := mcs.MulticlusterV1beta1().ServiceImports(metav1.NamespaceAll)
				return workload.ListWatch{List: workload.Lister(c.List), Watch: c.Watch}
			}},
		ownServices: {What: "the controller's derived Services", Object: &corev1.Service{}, Selector: ours, Digest: digest,
			ListWatch: func(kube workload.Client, _ workload.MCSClient, _ string) workload.ListWatch {
				c := kube.CoreV1().Services(metav1.NamespaceAll)
				return workload.ListWatch{List: workload.Lister(c.List), Watch: c.Watch}
			}},
		ownSlices: {What: "the controller's imported EndpointSlices", Object: &discoveryv1.EndpointSlice{}, Selector: ours, Digest: digest,
			ListWatch: func(kube workload.Client, _ workload.MCSClient, _ string) workload.ListWatch {
				return slicesIn(kube, metav1.NamespaceAll)
			}},
		ownContract: {What: "the controller's clusterset slices", Object: &discoveryv1.EndpointSlice{}, Selector: contract.ClusterSetSelector(),
			ListWatch: func(kube workload.Client, _ workload.MCSClient, sliceNamespace string) workload.ListWatch {
				return slicesIn(kube, sliceNamespace)
			}},
	}
}

// slicesIn is the list and watch of the EndpointSlices of namespace.
func slicesIn(kube workload.Client, namespace string) workload.ListWatch {
	c := kube.DiscoveryV1().EndpointSlices(namespace)
	return workload.ListWatch{List: workload.Lister(c.List), Watch: c.Watch}
}

// ownedObjects are the controller's objects in member m as its informers
// hold them (workload.Set.Own): the ServiceImports, derived Services and
// imported slices (Existing without Exports), and the contract slices.
// ok is false until they have listed: the caller lists then.
func (c *Reconciler) ownedObjects(m *workload.Cluster) (existing apply.Existing, contractSlices []*discoveryv1.EndpointSlice, ok bool) {
	owned, ok := c.cfg.Workloads.Own(m)
	if !ok || owned.Kinds() <= ownContract {
		return existing, nil, false
	}
	existing.Imports = workload.OwnList[*mcsv1beta1.ServiceImport](owned, ownImports)
	existing.Services = workload.OwnList[*corev1.Service](owned, ownServices)
	existing.Slices = workload.OwnList[*discoveryv1.EndpointSlice](owned, ownSlices)
	existing.Digest = func(k aggregate.Key) uint64 { return owned.Digest(k) }
	return existing, workload.OwnList[*discoveryv1.EndpointSlice](owned, ownContract), true
}

// seen is the apply.Seen of member m: each write is kept beside the
// informer of its kind until it shows it. A slice goes to the contract
// store when it is one; a deleted slice, whose labels are gone, to both.
func (c *Reconciler) seen(m *workload.Cluster) apply.Seen {
	keep := c.cfg.Workloads.Seen(m)
	return func(kind apply.Kind, namespace, name string, obj metav1.Object) {
		switch kind {
		case apply.KindImport:
			keep(ownImports, namespace, name, obj)
		case apply.KindService:
			keep(ownServices, namespace, name, obj)
		case apply.KindSlice:
			switch {
			case obj == nil:
				keep(ownSlices, namespace, name, obj)
				keep(ownContract, namespace, name, obj)
			case obj.GetLabels()[contract.LabelRecord] == string(contract.KindClusterSet):
				keep(ownContract, namespace, name, obj)
			default:
				keep(ownSlices, namespace, name, obj)
			}
		}
	}
}

// ExportCache is what each member's ServiceExport informer keeps of an
// export (workload.Config.ExportCache): what the aggregator and the
// status writes read, bounded (aggregate.ForCache).
func ExportCache(obj any) (any, error) { return aggregate.ForCache(obj) }
