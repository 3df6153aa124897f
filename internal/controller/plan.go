package controller

import (
	"maps"
	"slices"
	"sort"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// plan is what to change in one target cluster's xcc-dns namespace so that
// the slices of one GatewayDNS equal the desired ones.
type plan struct {
	Create []*discoveryv1.EndpointSlice
	// Update holds desired slices carrying the resourceVersion of the existing one.
	Update []*discoveryv1.EndpointSlice
	Delete []*discoveryv1.EndpointSlice
}

func (p plan) empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// ownedBy reports whether the controller wrote s for the GatewayDNS ref
// ("<ns>/<name>"). Slices without both marks are never changed or deleted.
func ownedBy(s *discoveryv1.EndpointSlice, ref string) bool {
	return s.Labels[LabelManagedBy] == ManagedByValue && s.Annotations[AnnotationGatewayRef] == ref
}

// computePlan diffs desired against existing; it is pure. Existing slices
// that ref does not own are ignored. Gateway slices of a source cluster in
// keep (state unknown) are neither updated nor deleted: a cluster that cannot
// be reached keeps its last published addresses.
func computePlan(ref string, desired, existing []*discoveryv1.EndpointSlice, keep map[string]bool) plan {
	var p plan
	have := map[string]*discoveryv1.EndpointSlice{}
	for _, e := range existing {
		if ownedBy(e, ref) {
			have[e.Name] = e
		}
	}
	kept := func(s *discoveryv1.EndpointSlice) bool {
		return s.Labels[LabelRecord] == recordGateway && keep[s.Labels[LabelSourceCluster]]
	}
	want := map[string]bool{}
	for _, d := range desired {
		want[d.Name] = true
		e, ok := have[d.Name]
		switch {
		case !ok:
			p.Create = append(p.Create, d)
		case kept(e):
		case !sameSlice(e, d):
			p.Update = append(p.Update, mergeForUpdate(e, d))
		}
	}
	for name, e := range have {
		if !want[name] && !kept(e) {
			p.Delete = append(p.Delete, e)
		}
	}
	sort.Slice(p.Delete, func(i, j int) bool { return p.Delete[i].Name < p.Delete[j].Name })
	return p
}

// sameSlice compares what the controller sets; fields others may add
// (extra labels or annotations) are not fought over.
func sameSlice(existing, desired *discoveryv1.EndpointSlice) bool {
	if existing.AddressType != desired.AddressType || len(existing.Ports) != 0 {
		return false
	}
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if existing.Annotations[k] != v {
			return false
		}
	}
	// An annotation we set before (ttl) and no longer want must go.
	if _, had := existing.Annotations[AnnotationTTL]; had {
		if _, want := desired.Annotations[AnnotationTTL]; !want {
			return false
		}
	}
	if len(existing.Endpoints) != len(desired.Endpoints) {
		return false
	}
	for i := range desired.Endpoints {
		e, d := existing.Endpoints[i], desired.Endpoints[i]
		if !slices.Equal(e.Addresses, d.Addresses) {
			return false
		}
		if (e.Conditions.Ready == nil) != (d.Conditions.Ready == nil) ||
			(e.Conditions.Ready != nil && *e.Conditions.Ready != *d.Conditions.Ready) {
			return false
		}
	}
	return true
}

// mergeForUpdate keeps labels and annotations others put on an existing slice.
func mergeForUpdate(existing, desired *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
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
