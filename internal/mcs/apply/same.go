package apply

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// The same* functions compare only what the controller sets: fields the
// API server defaults or others add (more labels, a cluster IP) are not
// fought over. The merge* functions set those fields on a copy of the
// existing object, keeping the rest and its resourceVersion.

func sameMeta(e, d metav1.Object) bool {
	if !sameEntries(e.GetLabels(), d.GetLabels(), managedLabels(e)) ||
		!sameEntries(e.GetAnnotations(), d.GetAnnotations(), managedAnnotations(e)) {
		return false
	}
	for _, ref := range d.GetOwnerReferences() {
		if !slices.ContainsFunc(e.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
			return false
		}
	}
	return true
}

// sameEntries: have holds every entry of want, and no managed key that
// want has not.
func sameEntries(have, want map[string]string, managed []string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	for _, k := range managed {
		_, wanted := want[k]
		if _, has := have[k]; has && !wanted {
			return false
		}
	}
	return true
}

// managedLabels are the label keys of e the controller keeps equal to
// the desired object's: its own, and those e lists as exported.
func managedLabels(e metav1.Object) []string {
	return append(slices.Clone(objects.ManagedLabels), objects.ExportedKeys(e, objects.AnnotationExportedLabels)...)
}

// managedAnnotations are the annotation keys of e the controller keeps
// equal to the desired object's: the lists of exported keys, and the
// annotations e lists as exported.
func managedAnnotations(e metav1.Object) []string {
	return append([]string{objects.AnnotationExportedLabels, objects.AnnotationExportedAnnotations},
		objects.ExportedKeys(e, objects.AnnotationExportedAnnotations)...)
}

// mergeMeta sets the desired labels and annotations (and removes managed
// ones not desired) and replaces owner references to a ServiceImport with
// the desired ones (a recreated import has a new UID).
func mergeMeta(u, d metav1.Object) {
	u.SetLabels(merged(u.GetLabels(), managedLabels(u), d.GetLabels()))
	u.SetAnnotations(merged(u.GetAnnotations(), managedAnnotations(u), d.GetAnnotations()))
	if len(d.GetOwnerReferences()) == 0 {
		return
	}
	refs := slices.DeleteFunc(slices.Clone(u.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
		return r.Kind == mcsv1beta1.ServiceImportKindName
	})
	u.SetOwnerReferences(append(refs, d.GetOwnerReferences()...))
}

// merged is have without the managed keys, with want over it; nil when
// empty, as the API server returns an empty map.
func merged(have map[string]string, managed []string, want map[string]string) map[string]string {
	out := maps.Clone(have)
	for _, k := range managed {
		delete(out, k)
	}
	if out == nil && len(want) > 0 {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	if len(out) == 0 {
		return nil
	}
	return out
}

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

func sameSlice(e, d *discoveryv1.EndpointSlice) bool {
	return sameMeta(e, d) && e.AddressType == d.AddressType &&
		equality.Semantic.DeepEqual(e.Ports, d.Ports) && equality.Semantic.DeepEqual(e.Endpoints, d.Endpoints)
}

func mergeSlice(e, d *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	u := e.DeepCopy()
	mergeMeta(u, d)
	u.AddressType = d.AddressType // retyped turns a change into a delete
	u.Ports, u.Endpoints = d.DeepCopy().Ports, d.DeepCopy().Endpoints
	return u
}
