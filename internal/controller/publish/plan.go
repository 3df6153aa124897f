package publish

import (
	"maps"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

// plan is what to change in one target's slice namespace so that the
// slices of one GatewayDNS equal the desired ones.
type plan struct {
	Create []*discoveryv1.EndpointSlice
	// Update holds desired slices carrying the resourceVersion of the existing one.
	Update []*discoveryv1.EndpointSlice
	Delete []*discoveryv1.EndpointSlice
	// Refused are wanted slices whose name a slice ref does not own
	// holds: never written.
	Refused []*discoveryv1.EndpointSlice
}

// ownedBy reports whether the controller wrote s for the GatewayDNS ref
// ("<ns>/<name>"). Slices without both marks are never changed or deleted.
func ownedBy(s *discoveryv1.EndpointSlice, ref string) bool {
	return s.Labels[contract.LabelManagedBy] == contract.ManagedByValue && s.Annotations[contract.AnnotationGatewayRef] == ref
}

// computePlan diffs the wanted slices, to be written into namespace,
// against existing (write.Diff); it is pure. Existing slices that ref
// does not own are never changed, and a wanted name one of them holds is
// refused. Gateway slices of a source cluster in keep (state unknown) are
// neither updated nor deleted: a cluster that cannot be reached keeps its
// last published addresses.
func computePlan(ref, namespace string, wanted, existing []*discoveryv1.EndpointSlice, keep map[string]bool) plan {
	in := make([]*discoveryv1.EndpointSlice, len(wanted))
	for i, d := range wanted {
		c := *d // the generation's slices are shared: only the copy gets the namespace
		c.Namespace = namespace
		in[i] = &c
	}
	d := write.Diff(in, existing, write.Kind[*discoveryv1.EndpointSlice]{
		Ours:  func(s *discoveryv1.EndpointSlice) bool { return ownedBy(s, ref) },
		Same:  contract.SameSlice,
		Merge: contract.MergeSlice,
		Keep: func(s *discoveryv1.EndpointSlice) bool {
			_, k := keptUnder(s, keep)
			return k
		},
	})
	return plan{Create: d.Create, Update: d.Update, Delete: d.Delete, Refused: d.NotOurs}
}

// Generation is one distinct desired set of a GatewayDNS's slices, by
// name, with the source clusters whose gateway slices are kept as they were.
type Generation struct {
	Slices map[string]*discoveryv1.EndpointSlice
	Keep   map[string]bool
}

// NewGeneration indexes the slices of d by name.
func NewGeneration(d desired.Result) Generation {
	s := Generation{Slices: make(map[string]*discoveryv1.EndpointSlice, len(d.Slices)), Keep: maps.Clone(d.Keep)}
	for _, sl := range d.Slices {
		s.Slices[sl.Name] = sl
	}
	return s
}

// Delta brings a target that has one generation of a GatewayDNS's slices
// to the next without listing it. A target differs from what the
// controller knows only when a write failed or someone else changed its
// slices; both are caught by a full list (computePlan), which a failed
// write forces and the resync period repeats.
type Delta struct {
	// Create are names new in the next generation; Update changed content.
	Create, Update []*discoveryv1.EndpointSlice
	// Delete are names gone whose source cluster is not kept.
	Delete []string
	// Kept maps names gone because their source cluster is now kept (its
	// state is unknown) to that cluster: they stay, and the target
	// remembers them so it can delete them once the cluster is released.
	Kept map[string]string
	// Released are source clusters kept before and not now.
	Released map[string]bool
}

func (d Delta) empty() bool {
	return len(d.Create)+len(d.Update)+len(d.Delete)+len(d.Kept)+len(d.Released) == 0
}

// ComputeDelta diffs two generations of desired slices; it is pure.
func ComputeDelta(from, to Generation) Delta {
	d := Delta{Kept: map[string]string{}, Released: map[string]bool{}}
	for _, name := range slices.Sorted(maps.Keys(to.Slices)) {
		s := to.Slices[name]
		old, ok := from.Slices[name]
		switch {
		case !ok:
			d.Create = append(d.Create, s)
		case !contract.SameSlice(old, s):
			d.Update = append(d.Update, s)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(from.Slices)) {
		if _, ok := to.Slices[name]; ok {
			continue
		}
		s := from.Slices[name]
		if key, k := keptUnder(s, to.Keep); k {
			d.Kept[name] = key
			continue
		}
		d.Delete = append(d.Delete, name)
	}
	for source := range from.Keep {
		if to.Keep[source] {
			continue
		}
		// A cluster kept whole whose Services are not listed yet keeps
		// its names still: the slices kept under it stay kept (a gateway
		// slice among them is rewritten, being desired again) until the
		// names are released too, which releases the cluster with them.
		if to.Keep[desired.KeepNamesKey(source)] {
			continue
		}
		d.Released[source] = true
		if cluster, isNames := strings.CutSuffix(source, desired.KeepNamesKey("")); isNames && !to.Keep[cluster] {
			d.Released[cluster] = true
		}
	}
	return d
}

// keptUnder reports whether s is a slice keep keeps as it is, and under
// which key of keep. A kept source cluster (key: its name) keeps its
// gateway name and the names its Services claim (KindName), which,
// unlike the gateways name, are not rebuilt from status: they stay as
// last written, health included. desired.KeepNamesKey(source) keeps only
// the KindName slices: the cluster's Services are not listed yet.
func keptUnder(s *discoveryv1.EndpointSlice, keep map[string]bool) (string, bool) {
	source, r := s.Labels[contract.LabelSourceCluster], s.Labels[contract.LabelRecord]
	if (r == string(contract.KindGateway) || r == string(contract.KindName)) && keep[source] {
		return source, true
	}
	if key := desired.KeepNamesKey(source); r == string(contract.KindName) && keep[key] {
		return key, true
	}
	return "", false
}
