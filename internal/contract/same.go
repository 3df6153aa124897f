package contract

import (
	"maps"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// SameSlice reports whether existing, a contract slice in a target,
// already says what desired says, in what serve reads: the address type,
// ports, each endpoint's addresses, hostname and readiness, and the
// labels and annotations the controller sets. Labels and annotations
// others add are not fought over. Every writer of contract slices, the
// GatewayDNS one and the ClusterSet one, compares with it.
func SameSlice(existing, desired *discoveryv1.EndpointSlice) bool {
	if existing.AddressType != desired.AddressType || !equality.Semantic.DeepEqual(existing.Ports, desired.Ports) {
		return false
	}
	for k, v := range desired.Labels {
		if got, ok := existing.Labels[k]; !ok || got != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if got, ok := existing.Annotations[k]; !ok || got != v {
			return false
		}
	}
	// An annotation set before (ttl) and no longer wanted must go.
	if _, had := existing.Annotations[AnnotationTTL]; had {
		if _, want := desired.Annotations[AnnotationTTL]; !want {
			return false
		}
	}
	return slices.EqualFunc(existing.Endpoints, desired.Endpoints, func(e, d discoveryv1.Endpoint) bool {
		return slices.Equal(e.Addresses, d.Addresses) && equality.Semantic.DeepEqual(e.Hostname, d.Hostname) &&
			equality.Semantic.DeepEqual(e.Conditions.Ready, d.Conditions.Ready)
	})
}

// MergeSlice is desired as an update of existing: its resource version
// and UID, and the labels and annotations others put on it kept.
func MergeSlice(existing, desired *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	u := desired.DeepCopy()
	labels := maps.Clone(existing.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired.Labels)
	ann := maps.Clone(existing.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	if _, want := desired.Annotations[AnnotationTTL]; !want {
		delete(ann, AnnotationTTL)
	}
	maps.Copy(ann, desired.Annotations)
	u.Labels, u.Annotations = labels, ann
	u.ResourceVersion, u.UID = existing.ResourceVersion, existing.UID
	return u
}
