package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

// Result is what a write learnt of the member.
type Result struct {
	// ClusterIPs are those of each ClusterSetIP import's derived Service
	// as the member's API server allocated them: the caller computes the
	// objects again with them (objects.ImportState.ClusterIPs).
	ClusterIPs map[aggregate.Key][]string
	// Refused holds, per import, the first refusal of one of its objects
	// (Refusal): the member answered and said no to that object. It costs
	// that import only; Apply's error is the member's (it did not answer,
	// throttled, failed), which costs the whole write.
	Refused map[aggregate.Key]error
}

// writer is one Apply: the member, the time, the errors so far.
type writer struct {
	m   Member
	now metav1.Time
	// mu guards errs, refused, notAnswering and what the writes of one
	// step collect (each).
	mu      sync.Mutex
	errs    []error
	refused map[aggregate.Key]error
	// notAnswering: ErrNotAnswering is among errs, and is not added again
	// for each object the member was not asked to write.
	notAnswering bool
}

// Apply makes the member hold desired, given what it holds (List); see
// the package doc for the order. It returns its errors, joined (at most
// kubeclient.MaxErrorsJoined of them, the rest counted).
func Apply(ctx context.Context, m Member, desired objects.Objects, existing Existing, now metav1.Time) (Result, error) {
	w := &writer{m: m, now: now, refused: map[aggregate.Key]error{}}
	p := ComputePlan(desired, existing, now)
	maps.Copy(w.refused, p.Conflicts)
	imports := w.imports(ctx, p, existing.Imports)
	owned, held := withOwners(desired, uidsOf(imports))
	p = ComputePlan(owned, existing, now)
	p.Services.Delete = unheld(p.Services.Delete, held)
	p.Slices.Delete = unheld(p.Slices.Delete, held)
	ips, unwritten := w.services(ctx, p.Services, existing.Services)
	ips = onlyDesired(ips, owned.Services)
	p.Slices.Create = unheld(p.Slices.Create, unwritten)
	p.Slices.Update = unheld(p.Slices.Update, unwritten)
	w.slices(ctx, p.Slices)
	// The status goes last, when it is known whose slices were written.
	w.importStatus(ctx, slices.DeleteFunc(importStatus(withoutSlices(owned.Imports, unwritten), imports, now),
		func(si *mcsv1beta1.ServiceImport) bool { return addressComing(si, ips) }))
	w.exports(ctx, p.Exports)
	deleteAll(ctx, w, "EndpointSlice", p.Slices.Delete, w.m.Slices)
	deleteAll(ctx, w, "Service", p.Services.Delete, w.m.Services)
	deleteAll(ctx, w, "ServiceImport", p.Imports.Delete, func(ns string) ObjectClient[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList] {
		return w.m.Imports(ns)
	})
	return Result{ClusterIPs: ips, Refused: w.refused}, kubeclient.Join(w.errs...)
}

// addressComing reports whether si's derived Service has an address its
// spec does not hold yet: the caller computes the objects again with it
// (Result.ClusterIPs) and writes the spec, which moves si's generation.
// Its status is written then, once, with the address and that
// generation; written now it would say Pending and be written again.
func addressComing(si *mcsv1beta1.ServiceImport, ips map[aggregate.Key][]string) bool {
	return len(si.Spec.IPs) == 0 && len(ips[importKey(si)]) > 0
}

// onlyDesired keeps the ClusterIPs of the derived Services still desired:
// a Service being deleted (its import turned Headless or went) has none
// to give.
func onlyDesired(ips map[aggregate.Key][]string, desired []*corev1.Service) map[aggregate.Key][]string {
	out := map[aggregate.Key][]string{}
	for _, s := range desired {
		if v, ok := ips[importKey(s)]; ok {
			out[importKey(s)] = v
		}
	}
	return out
}

// importKey is the import an object of the controller belongs to.
func importKey(o metav1.Object) aggregate.Key {
	return aggregate.Key{Namespace: o.GetNamespace(), Name: o.GetLabels()[objects.LabelServiceName]}
}

// imports writes the ServiceImports' specs and returns every one that
// is the controller's now, as last read or written: their UIDs own the
// rest, and their status is written on them (importStatus), so nothing
// of a stale copy (spec, resourceVersion, generation) undoes an update.
func (w *writer) imports(ctx context.Context, p Plan, existing []*mcsv1beta1.ServiceImport) []*mcsv1beta1.ServiceImport {
	ours := map[nsName]*mcsv1beta1.ServiceImport{}
	for _, e := range existing {
		if objects.Ours(e.Labels, false) {
			ours[keyOf(e)] = e
		}
	}
	w.each(len(p.Imports.Create), func(i int) {
		d := p.Imports.Create[i]
		if got, err := create(ctx, w, "ServiceImport", d, w.m.Imports(d.Namespace)); err == nil {
			w.locked(func() { ours[keyOf(got)] = got })
		}
	})
	w.each(len(p.Imports.Update), func(i int) {
		u := p.Imports.Update[i]
		got, err := write.Update(ctx, w.m.Imports(u.Namespace), u)
		if err != nil {
			w.fail("update", "ServiceImport", u, err)
			return
		}
		w.locked(func() { ours[keyOf(got)] = got })
	})
	out := slices.Collect(maps.Values(ours))
	slices.SortFunc(out, compareObjects)
	return out
}

// uidsOf is the UID of each import's ServiceImport.
func uidsOf(imports []*mcsv1beta1.ServiceImport) map[aggregate.Key]types.UID {
	uids := map[aggregate.Key]types.UID{}
	for _, si := range imports {
		uids[importKey(si)] = si.UID
	}
	return uids
}

// importStatus writes the status of each ServiceImport in it.
func (w *writer) importStatus(ctx context.Context, imports []*mcsv1beta1.ServiceImport) {
	w.each(len(imports), func(i int) {
		si := imports[i]
		if _, err := write.UpdateStatus(ctx, w.m.Imports(si.Namespace), si); err != nil {
			w.fail("update status of", "ServiceImport", si, err)
		}
	})
}

// withoutSlices is imports with the status of those whose slices are not
// written (their derived Service could not be): EndpointSliceObjects
// Absent, and not Ready, for they have neither a ClusterSetIP nor
// endpoints. The message is fixed, so a sync that fails alike writes
// nothing; the error itself is in the writer's errors.
func withoutSlices(imports []*mcsv1beta1.ServiceImport, unwritten map[aggregate.Key]error) []*mcsv1beta1.ServiceImport {
	out := make([]*mcsv1beta1.ServiceImport, 0, len(imports))
	for _, si := range imports {
		err, ok := unwritten[importKey(si)]
		if !ok {
			out = append(out, si)
			continue
		}
		c := si.DeepCopy()
		c.Status.EndpointSliceObjects = mcsv1beta1.EndpointSliceObjectsAbsent
		for i := range c.Status.Conditions {
			if r := &c.Status.Conditions[i]; r.Type == string(mcsv1beta1.ServiceImportConditionReady) {
				r.Status, r.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceImportReasonPending)
				r.Message = unwrittenMessage(si, err)
			}
		}
		out = append(out, c)
	}
	return out
}

// unwrittenMessage says why an import's derived Service is not written.
func unwrittenMessage(si *mcsv1beta1.ServiceImport, err error) string {
	derived := si.Namespace + "/" + objects.DerivedServiceName(si.Namespace, si.Name)
	if errors.Is(err, ErrNotOurs) {
		return fmt.Sprintf("the name of the derived Service %s is held by a Service that is not the controller's: "+
			"no ClusterSetIP, and its EndpointSlices are not written", derived)
	}
	return fmt.Sprintf("the derived Service %s could not be created: no ClusterSetIP, and its EndpointSlices are not written", derived)
}

// services writes the derived Services and returns the ClusterIPs of
// every one that is the controller's, and, with the error, the imports
// whose derived Service could not be created: their slices are not
// written, for another's Service that holds the name would take them as
// its endpoints.
func (w *writer) services(ctx context.Context, ch Changes[*corev1.Service], existing []*corev1.Service) (map[aggregate.Key][]string, map[aggregate.Key]error) {
	ips := map[aggregate.Key][]string{}
	unwritten := map[aggregate.Key]error{}
	for _, e := range existing {
		if objects.Ours(e.Labels, false) && len(e.Spec.ClusterIPs) > 0 {
			ips[importKey(e)] = slices.Clone(e.Spec.ClusterIPs)
		}
	}
	w.each(len(ch.Create), func(i int) {
		d := ch.Create[i]
		got, err := create(ctx, w, "Service", d, w.m.Services(d.Namespace))
		w.locked(func() {
			if err != nil {
				unwritten[importKey(d)] = err
				return
			}
			ips[importKey(got)] = slices.Clone(got.Spec.ClusterIPs)
		})
	})
	w.each(len(ch.Update), func(i int) {
		u := ch.Update[i]
		got, err := write.Update(ctx, w.m.Services(u.Namespace), u)
		if err != nil {
			w.fail("update", "Service", u, err)
			return
		}
		w.locked(func() { ips[importKey(got)] = slices.Clone(got.Spec.ClusterIPs) })
	})
	return ips, unwritten
}

func (w *writer) slices(ctx context.Context, ch Changes[*discoveryv1.EndpointSlice]) {
	w.each(len(ch.Create), func(i int) {
		d := ch.Create[i]
		// A failure is recorded by create (w.fail); nothing else waits on it.
		_, _ = create(ctx, w, "EndpointSlice", d, w.m.Slices(d.Namespace))
	})
	w.each(len(ch.Update), func(i int) {
		u := ch.Update[i]
		if _, err := write.Update(ctx, w.m.Slices(u.Namespace), u); err != nil {
			w.fail("update", "EndpointSlice", u, err)
		}
	})
}

func (w *writer) exports(ctx context.Context, exports []*mcsv1beta1.ServiceExport) {
	w.each(len(exports), func(i int) {
		e := exports[i]
		if _, err := write.UpdateStatus(ctx, w.m.Exports(e.Namespace), e); err != nil {
			w.fail("update status of", "ServiceExport", e, err)
		}
	})
}

// each runs write(i) for i in [0, n), write.Concurrency at a time.
func (w *writer) each(n int, f func(i int)) { write.Each(n, f) }

// locked runs f holding w.mu: what the writes of one step collect.
func (w *writer) locked(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

// fail records the error of one request: a refusal against the object's
// import (its first only), any other as the member's.
func (w *writer) fail(verb, kind string, o metav1.Object, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, ErrNotAnswering) {
		if w.notAnswering {
			return
		}
		w.notAnswering = true
	}
	err = fmt.Errorf("%s %s %s/%s in %s: %w", verb, kind, o.GetNamespace(), o.GetName(), w.m.Cluster, err)
	if !Refusal(err) {
		w.errs = append(w.errs, err)
		return
	}
	k := importKey(o)
	if kind == "ServiceExport" {
		k = aggregate.Key{Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	if _, ok := w.refused[k]; !ok {
		w.refused[k] = err
	}
}

// Refusal reports whether err is a member's answer about one object
// (write.Refusal, the rule of every workload writer).
func Refusal(err error) bool { return write.Refusal(err) }

// create creates d (write.Create): a nil error says the object returned
// is the controller's; any other is also among the writer's errors.
func create[T metav1.Object](ctx context.Context, w *writer, kind string, d T, c write.Creator[T]) (T, error) {
	got, _, err := write.Create(ctx, c, d, func(holder T) bool { return objects.Ours(holder.GetLabels(), kind == "EndpointSlice") })
	if err != nil {
		w.fail("create", kind, d, err)
	}
	return got, err
}

// deleteAll deletes the controller's objects, each only if it is still
// the object listed (UID precondition). Gone already is no error.
func deleteAll[T metav1.Object, L any](ctx context.Context, w *writer, kind string, objs []T, client func(string) ObjectClient[T, L]) {
	w.each(len(objs), func(i int) {
		o := objs[i]
		if err := write.Delete(ctx, client(o.GetNamespace()), o); err != nil {
			w.fail("delete", kind, o, err)
		}
	})
}
