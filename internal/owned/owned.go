// Package owned is the one rule for an object the controller writes and
// others may also touch (a contract slice, an imported EndpointSlice, a
// ServiceImport, a derived Service): the keys and fields the controller
// owns are kept equal to what it desires, everything else is left as
// others set it. Every writer compares (Same*) and merges (Merge*) with
// it, so no writer fights another over a label, and none drops one.
package owned

import (
	"maps"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Keys are the label and annotation keys the controller owns on an
// object: each is equal to the desired object's, or absent when that has
// none. Any other key is someone else's and kept.
type Keys struct {
	Labels, Annotations []string
}

// SameMeta reports whether e, as the member holds it, has the labels,
// annotations and owner references the controller desires (d) under
// keys: every desired entry, no owned key the desired object lacks, and
// every desired owner reference (by UID).
func SameMeta(e, d metav1.Object, keys Keys) bool {
	if !sameEntries(e.GetLabels(), d.GetLabels(), keys.Labels) ||
		!sameEntries(e.GetAnnotations(), d.GetAnnotations(), keys.Annotations) {
		return false
	}
	for _, ref := range d.GetOwnerReferences() {
		if !slices.ContainsFunc(e.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
			return false
		}
	}
	return true
}

// sameEntries: have holds every entry of want, and no owned key that
// want has not.
func sameEntries(have, want map[string]string, owned []string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	for _, k := range owned {
		_, wanted := want[k]
		if _, has := have[k]; has && !wanted {
			return false
		}
	}
	return true
}

// MergeMeta sets on u (a copy of the existing object) the desired labels
// and annotations, removes the owned ones not desired, and replaces u's
// owner references of each kind d refers to with d's (a recreated owner
// has a new UID).
func MergeMeta(u, d metav1.Object, keys Keys) {
	u.SetLabels(merged(u.GetLabels(), keys.Labels, d.GetLabels()))
	u.SetAnnotations(merged(u.GetAnnotations(), keys.Annotations, d.GetAnnotations()))
	if len(d.GetOwnerReferences()) == 0 {
		return
	}
	refs := slices.DeleteFunc(slices.Clone(u.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
		return slices.ContainsFunc(d.GetOwnerReferences(), func(w metav1.OwnerReference) bool { return w.Kind == r.Kind })
	})
	u.SetOwnerReferences(append(refs, d.GetOwnerReferences()...))
}

// merged is have without the owned keys, with want over it; nil when
// empty, as the API server returns an empty map.
func merged(have map[string]string, owned []string, want map[string]string) map[string]string {
	out := maps.Clone(have)
	for _, k := range owned {
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

// SameSlice reports whether the EndpointSlice e already is the desired d:
// its metadata under keys (SameMeta), address type, ports and endpoints.
func SameSlice(e, d *discoveryv1.EndpointSlice, keys Keys) bool {
	return SameMeta(e, d, keys) && e.AddressType == d.AddressType &&
		equality.Semantic.DeepEqual(e.Ports, d.Ports) && equality.Semantic.DeepEqual(e.Endpoints, d.Endpoints)
}

// MergeSlice is d as an update of e: e's resourceVersion, UID and what
// others set on it kept, the rest d's.
func MergeSlice(e, d *discoveryv1.EndpointSlice, keys Keys) *discoveryv1.EndpointSlice {
	u := e.DeepCopy()
	MergeMeta(u, d, keys)
	u.AddressType = d.AddressType
	u.Ports, u.Endpoints = d.DeepCopy().Ports, d.DeepCopy().Endpoints
	return u
}
