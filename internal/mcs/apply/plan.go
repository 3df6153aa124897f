package apply

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

// ErrNotOurs is wrapped when a desired object's name is held by an object
// the controller did not write: it is never overwritten. It is the
// workload writers' one (kubeclient.Refusal knows it).
var ErrNotOurs = kubeclient.ErrNotOurs

// Existing is what a member holds: the controller's ServiceImports,
// Services and EndpointSlices (List lists only those), and the
// member's ServiceExports, whose status the controller writes.
type Existing struct {
	Imports  []*mcsv1beta1.ServiceImport
	Services []*corev1.Service
	Slices   []*discoveryv1.EndpointSlice
	Exports  []*mcsv1beta1.ServiceExport
	// Digest, when set, is the digest of what the member holds of an
	// import: the sum of HeldDigest over its objects in the lists above,
	// kept by whoever keeps the lists as they change, so that a write
	// reads it instead of digesting every object of the member (Settled).
	Digest func(aggregate.Key) uint64
}

// Changes are the writes of one kind. Update holds the existing object
// with the desired fields set, so it carries the resourceVersion read.
type Changes[T any] struct {
	Create, Update, Delete []T
}

// Plan is what to write so a member holds the desired objects.
type Plan struct {
	Imports Changes[*mcsv1beta1.ServiceImport]
	// ImportStatus are existing imports whose status changes (clusters,
	// endpointSliceObjects, a condition), with the desired status set.
	ImportStatus []*mcsv1beta1.ServiceImport
	Services     Changes[*corev1.Service]
	Slices       Changes[*discoveryv1.EndpointSlice]
	// Exports are ServiceExports whose conditions change.
	Exports []*mcsv1beta1.ServiceExport
	// Conflicts name, per import, a desired object whose name is held by
	// another's.
	Conflicts map[aggregate.Key]error
}

// ComputePlan diffs desired against existing; it is pure. now is the
// lastTransitionTime of a condition whose status changes.
func ComputePlan(desired objects.Objects, existing Existing, now metav1.Time) Plan {
	p := Plan{Conflicts: map[aggregate.Key]error{}}
	p.Imports = diff(desired.Imports, existing.Imports, "ServiceImport", false, sameImport, mergeImport, p.Conflicts)
	p.Services = diff(desired.Services, existing.Services, "Service", false, sameService, mergeService, p.Conflicts)
	p.Slices = diff(desired.Slices, existing.Slices, "EndpointSlice", true, sameSlice, mergeSlice, p.Conflicts)
	p.Slices = retyped(p.Slices, existing.Slices)
	p.ImportStatus = importStatus(desired.Imports, existing.Imports, now)
	p.Exports = exportStatus(desired.Exports, existing.Exports, now)
	return p
}

type nsName struct{ namespace, name string }

func keyOf(o metav1.Object) nsName { return nsName{o.GetNamespace(), o.GetName()} }

func compareObjects[T metav1.Object](a, b T) int {
	return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}

// diff is the plan of one kind (write.Diff): desired names missing are
// created, those that differ updated (merge), the controller's objects no
// longer desired deleted. A desired name held by an object not the
// controller's is a conflict, never a write: the first of each import is
// added to conflicts.
func diff[T metav1.Object](desired, existing []T, kind string, slice bool, same func(e, d T) bool, merge func(e, d T) T,
	conflicts map[aggregate.Key]error) Changes[T] {
	p := write.Diff(desired, existing, write.Kind[T]{
		Ours:  func(o T) bool { return objects.Ours(o.GetLabels(), slice) },
		Same:  same,
		Merge: merge,
	})
	for _, d := range p.NotOurs {
		if _, ok := conflicts[importKey(d)]; !ok {
			conflicts[importKey(d)] = fmt.Errorf("%s %w", kind, write.NotOurs(d))
		}
	}
	return Changes[T]{Create: p.Create, Update: p.Update, Delete: p.Delete}
}

// retyped moves the update of a slice whose addressType someone changed
// to a delete: addressType is immutable, so the update would fail at
// every sync; the next sync creates the slice again.
func retyped(ch Changes[*discoveryv1.EndpointSlice], existing []*discoveryv1.EndpointSlice) Changes[*discoveryv1.EndpointSlice] {
	have := map[nsName]*discoveryv1.EndpointSlice{}
	for _, e := range existing {
		have[keyOf(e)] = e
	}
	var update []*discoveryv1.EndpointSlice
	for _, u := range ch.Update {
		if e := have[keyOf(u)]; e.AddressType != u.AddressType {
			ch.Delete = append(ch.Delete, e)
			continue
		}
		update = append(update, u)
	}
	ch.Update = update
	slices.SortFunc(ch.Delete, compareObjects)
	return ch
}

// importStatus lists the controller's existing imports whose status
// differs from the desired (withStatus), each with the desired status.
func importStatus(desired, existing []*mcsv1beta1.ServiceImport, now metav1.Time) []*mcsv1beta1.ServiceImport {
	have := map[nsName]*mcsv1beta1.ServiceImport{}
	for _, e := range existing {
		if objects.Ours(e.Labels, false) {
			have[keyOf(e)] = e
		}
	}
	var out []*mcsv1beta1.ServiceImport
	for _, d := range desired {
		e, ok := have[keyOf(d)]
		if !ok {
			continue
		}
		if u, changed := withStatus(e, d.Status, now); changed {
			out = append(out, u)
		}
	}
	return out
}

// withStatus is a copy of e with the status d, and whether it changed.
// The ServiceImport's status is the controller's alone, so conditions not
// desired go; a desired one is set as meta.SetStatusCondition does, so it
// keeps its lastTransitionTime while its status stays and a sync that
// changes nothing writes nothing. It observes e's generation.
func withStatus(e *mcsv1beta1.ServiceImport, d mcsv1beta1.ServiceImportStatus, now metav1.Time) (*mcsv1beta1.ServiceImport, bool) {
	u := e.DeepCopy()
	st := &u.Status
	changed := !slices.Equal(st.Clusters, d.Clusters) || st.EndpointSliceObjects != d.EndpointSliceObjects
	st.Clusters, st.EndpointSliceObjects = slices.Clone(d.Clusters), d.EndpointSliceObjects
	n := len(st.Conditions)
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c metav1.Condition) bool {
		return meta.FindStatusCondition(d.Conditions, c.Type) == nil
	})
	changed = changed || len(st.Conditions) != n
	for _, c := range d.Conditions {
		c.ObservedGeneration, c.LastTransitionTime = e.Generation, now
		changed = meta.SetStatusCondition(&st.Conditions, c) || changed
	}
	return u, changed
}

// exportStatus sets the desired conditions on each existing export of
// the member that has them, keeping conditions of other types and the
// lastTransitionTime of a condition whose status is unchanged; only the
// exports that change are returned.
func exportStatus(desired []objects.ExportStatus, existing []*mcsv1beta1.ServiceExport, now metav1.Time) []*mcsv1beta1.ServiceExport {
	have := map[nsName]*mcsv1beta1.ServiceExport{}
	for _, e := range existing {
		have[keyOf(e)] = e
	}
	var out []*mcsv1beta1.ServiceExport
	for _, d := range desired {
		e, ok := have[nsName{d.Namespace, d.Name}]
		if !ok {
			continue
		}
		u := e.DeepCopy()
		changed := false
		for _, c := range d.Conditions {
			c.ObservedGeneration, c.LastTransitionTime = e.Generation, now
			changed = meta.SetStatusCondition(&u.Status.Conditions, c) || changed
		}
		if changed {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, compareObjects)
	return out
}
