package apply

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/owned"
)

// The same* functions compare only what the controller sets: fields the
// API server defaults or others add (more labels, a cluster IP) are not
// fought over. The merge* functions set those fields on a copy of the
// existing object, keeping the rest and its resourceVersion. Labels,
// annotations and owner references follow the rule of package owned,
// the one every writer of the controller follows.

// keysOf are the label and annotation keys of e the controller keeps
// equal to the desired object's: its own labels and the lists of
// exported keys, and the labels and annotations e lists as exported.
func keysOf(e metav1.Object) owned.Keys {
	return owned.Keys{
		Labels: append(slices.Clone(objects.ManagedLabels), objects.ExportedKeys(e, objects.AnnotationExportedLabels)...),
		Annotations: append([]string{objects.AnnotationExportedLabels, objects.AnnotationExportedAnnotations},
			objects.ExportedKeys(e, objects.AnnotationExportedAnnotations)...),
	}
}

func sameMeta(e, d metav1.Object) bool { return owned.SameMeta(e, d, keysOf(e)) }

func mergeMeta(u, d metav1.Object) { owned.MergeMeta(u, d, keysOf(u)) }

func sameImport(e, d *mcsv1beta1.ServiceImport) bool {
	return sameMeta(e, d) && equality.Semantic.DeepEqual(e.Spec, d.Spec)
}

func mergeImport(e, d *mcsv1beta1.ServiceImport) *mcsv1beta1.ServiceImport {
	u := e.DeepCopy()
	mergeMeta(u, d)
	u.Spec = *d.Spec.DeepCopy()
	return u
}

func sameService(e, d *corev1.Service) bool {
	es, ds := e.Spec, d.Spec
	return sameMeta(e, d) && es.Type == ds.Type && len(es.Selector) == 0 &&
		samePorts(es.Ports, ds.Ports) && es.SessionAffinity == ds.SessionAffinity &&
		equality.Semantic.DeepEqual(es.SessionAffinityConfig, ds.SessionAffinityConfig) &&
		equality.Semantic.DeepEqual(es.InternalTrafficPolicy, ds.InternalTrafficPolicy) &&
		equality.Semantic.DeepEqual(es.TrafficDistribution, ds.TrafficDistribution) &&
		equality.Semantic.DeepEqual(es.IPFamilyPolicy, ds.IPFamilyPolicy)
}

// samePorts compares what a derived Service's port is made of; a
// nodePort the API server may add is not.
func samePorts(e, d []corev1.ServicePort) bool {
	return slices.EqualFunc(e, d, func(a, b corev1.ServicePort) bool {
		return a.Name == b.Name && a.Protocol == b.Protocol && a.Port == b.Port && a.TargetPort == b.TargetPort &&
			equality.Semantic.DeepEqual(a.AppProtocol, b.AppProtocol)
	})
}

func mergeService(e, d *corev1.Service) *corev1.Service {
	u := e.DeepCopy()
	mergeMeta(u, d)
	s := &u.Spec
	s.Type, s.Selector, s.Ports = d.Spec.Type, nil, slices.Clone(d.Spec.Ports)
	s.SessionAffinity, s.SessionAffinityConfig = d.Spec.SessionAffinity, d.Spec.SessionAffinityConfig.DeepCopy()
	s.InternalTrafficPolicy, s.TrafficDistribution = d.Spec.InternalTrafficPolicy, d.Spec.TrafficDistribution
	s.IPFamilyPolicy = d.Spec.IPFamilyPolicy
	return u
}

func sameSlice(e, d *discoveryv1.EndpointSlice) bool { return owned.SameSlice(e, d, keysOf(e)) }

func mergeSlice(e, d *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	return owned.MergeSlice(e, d, keysOf(e))
}
