package controller

import (
	"maps"
	"slices"
	"sort"

	"github.com/xcc-dns/xcc-dns/internal/contract"
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

// ownedBy reports whether the controller wrote s for the GatewayDNS ref
// ("<ns>/<name>"). Slices without both marks are never changed or deleted.
func ownedBy(s *discoveryv1.EndpointSlice, ref string) bool {
	return s.Labels[contract.LabelManagedBy] == contract.ManagedByValue && s.Annotations[contract.AnnotationGatewayRef] == ref
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
		return s.Labels[contract.LabelRecord] == string(contract.KindGateway) && keep[s.Labels[contract.LabelSourceCluster]]
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
	if _, had := existing.Annotations[contract.AnnotationTTL]; had {
		if _, want := desired.Annotations[contract.AnnotationTTL]; !want {
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
	if _, want := desired.Annotations[contract.AnnotationTTL]; !want {
		delete(ann, contract.AnnotationTTL)
	}
	maps.Copy(ann, desired.Annotations)
	u.Labels, u.Annotations = labels, ann
	u.ResourceVersion, u.UID = existing.ResourceVersion, existing.UID
	return u
}

// desiredSet is one generation of a GatewayDNS's desired slices, by name,
// with the source clusters whose gateway slices were kept as they were.
type desiredSet struct {
	Slices map[string]*discoveryv1.EndpointSlice
	Keep   map[string]bool
}

func newDesiredSet(d desiredState) desiredSet {
	s := desiredSet{Slices: make(map[string]*discoveryv1.EndpointSlice, len(d.Slices)), Keep: maps.Clone(d.Keep)}
	for _, sl := range d.Slices {
		s.Slices[sl.Name] = sl
	}
	return s
}

// delta brings a target cluster that holds one generation of a GatewayDNS's
// slices to the next without listing it. Targets are out of step with the
// controller only when a write failed or someone else changed their
// slices; both are caught by a full list (computePlan), which a failed
// write forces and the resync period repeats.
type delta struct {
	// Create are names new in the next generation; Update changed content.
	Create, Update []*discoveryv1.EndpointSlice
	// Delete are names gone whose source cluster is not kept.
	Delete []string
	// Hold maps names gone because their source cluster is now kept (its
	// state is unknown) to that cluster: they stay, and the target
	// remembers them so it can drop them once the cluster is released.
	Hold map[string]string
	// Release are source clusters kept before and not now.
	Release map[string]bool
}

func (d delta) empty() bool {
	return len(d.Create)+len(d.Update)+len(d.Delete)+len(d.Hold)+len(d.Release) == 0
}

// computeDelta diffs two generations of desired slices; it is pure.
func computeDelta(from, to desiredSet) delta {
	d := delta{Hold: map[string]string{}, Release: map[string]bool{}}
	for _, name := range slices.Sorted(maps.Keys(to.Slices)) {
		s := to.Slices[name]
		old, ok := from.Slices[name]
		switch {
		case !ok:
			d.Create = append(d.Create, s)
		case !sameSlice(old, s):
			d.Update = append(d.Update, s)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(from.Slices)) {
		if _, ok := to.Slices[name]; ok {
			continue
		}
		s := from.Slices[name]
		if source := s.Labels[contract.LabelSourceCluster]; s.Labels[contract.LabelRecord] == string(contract.KindGateway) && to.Keep[source] {
			d.Hold[name] = source
			continue
		}
		d.Delete = append(d.Delete, name)
	}
	for source := range from.Keep {
		if !to.Keep[source] {
			d.Release[source] = true
		}
	}
	return d
}
