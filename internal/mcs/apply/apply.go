package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// Result is what a write learnt of the member.
type Result struct {
	// ClusterIPs are those of each ClusterSetIP import's derived Service
	// as the member's API server allocated them: the caller computes the
	// objects again with them (objects.ImportState.ClusterIPs).
	ClusterIPs map[aggregate.Key][]string
}

// writer is one Apply: the member, the time, the errors so far.
type writer struct {
	m    Member
	now  metav1.Time
	errs []error
}

// Apply makes the member hold desired, given what it holds (List); see
// the package doc for the order. It returns every error, joined.
func Apply(ctx context.Context, m Member, desired objects.Objects, existing Existing, now metav1.Time) (Result, error) {
	w := &writer{m: m, now: now}
	p := ComputePlan(desired, existing, now)
	w.errs = append(w.errs, p.Conflicts...)
	uids := w.imports(ctx, p, existing.Imports)
	owned, held := withOwners(desired, uids)
	p = ComputePlan(owned, existing, now)
	p.Services.Delete = unheld(p.Services.Delete, held)
	p.Slices.Delete = unheld(p.Slices.Delete, held)
	ips, conflicted := w.services(ctx, p.Services, existing.Services)
	ips = onlyDesired(ips, owned.Services)
	p.Slices.Create = unheld(p.Slices.Create, conflicted)
	p.Slices.Update = unheld(p.Slices.Update, conflicted)
	w.slices(ctx, p.Slices)
	w.exports(ctx, p.Exports)
	deleteAll(ctx, w, "EndpointSlice", p.Slices.Delete, w.m.Slices)
	deleteAll(ctx, w, "Service", p.Services.Delete, w.m.Services)
	deleteAll(ctx, w, "ServiceImport", p.Imports.Delete, func(ns string) ObjectClient[*mcsv1beta1.ServiceImport, *mcsv1beta1.ServiceImportList] {
		return w.m.Imports(ns)
	})
	return Result{ClusterIPs: ips}, errors.Join(w.errs...)
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

// imports writes the ServiceImports (spec, then status) and returns the
// UID of each that is the controller's now.
func (w *writer) imports(ctx context.Context, p Plan, existing []*mcsv1beta1.ServiceImport) map[aggregate.Key]types.UID {
	uids := map[aggregate.Key]types.UID{}
	for _, e := range existing {
		if objects.Ours(e.Labels, false) {
			uids[importKey(e)] = e.UID
		}
	}
	status := map[nsName]*mcsv1beta1.ServiceImport{}
	for _, s := range p.ImportStatus {
		status[keyOf(s)] = s
	}
	for _, d := range p.Imports.Create {
		got, ok := create(ctx, w, "ServiceImport", d, w.m.Imports(d.Namespace))
		if !ok {
			continue
		}
		uids[importKey(got)] = got.UID
		if len(d.Status.Clusters) > 0 {
			got.Status = *d.Status.DeepCopy()
			status[keyOf(got)] = got
		}
	}
	for _, u := range p.Imports.Update {
		got, err := w.m.Imports(u.Namespace).Update(ctx, u, metav1.UpdateOptions{})
		if err != nil {
			w.fail("update", "ServiceImport", u, err)
			continue
		}
		// The status goes on what the update returned, so nothing of it
		// (a stale spec or resourceVersion) undoes the update.
		if s, ok := status[keyOf(u)]; ok {
			next := got.DeepCopy()
			next.Status = *s.Status.DeepCopy()
			status[keyOf(u)] = next
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(status), compareNsName) {
		s := status[k]
		if _, err := w.m.Imports(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
			w.fail("update status of", "ServiceImport", s, err)
		}
	}
	return uids
}

// services writes the derived Services and returns the ClusterIPs of
// every one that is the controller's, and the imports whose derived name
// another's Service holds (their slices are not written: they would
// become that Service's endpoints).
func (w *writer) services(ctx context.Context, ch Changes[*corev1.Service], existing []*corev1.Service) (map[aggregate.Key][]string, map[aggregate.Key]bool) {
	ips := map[aggregate.Key][]string{}
	conflicted := map[aggregate.Key]bool{}
	for _, e := range existing {
		if objects.Ours(e.Labels, false) && len(e.Spec.ClusterIPs) > 0 {
			ips[importKey(e)] = slices.Clone(e.Spec.ClusterIPs)
		}
	}
	for _, d := range ch.Create {
		got, ok := create(ctx, w, "Service", d, w.m.Services(d.Namespace))
		if !ok {
			conflicted[importKey(d)] = true
			continue
		}
		ips[importKey(got)] = slices.Clone(got.Spec.ClusterIPs)
	}
	for _, u := range ch.Update {
		got, err := w.m.Services(u.Namespace).Update(ctx, u, metav1.UpdateOptions{})
		if err != nil {
			w.fail("update", "Service", u, err)
			continue
		}
		ips[importKey(got)] = slices.Clone(got.Spec.ClusterIPs)
	}
	return ips, conflicted
}

func (w *writer) slices(ctx context.Context, ch Changes[*discoveryv1.EndpointSlice]) {
	for _, d := range ch.Create {
		create(ctx, w, "EndpointSlice", d, w.m.Slices(d.Namespace))
	}
	for _, u := range ch.Update {
		if _, err := w.m.Slices(u.Namespace).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			w.fail("update", "EndpointSlice", u, err)
		}
	}
}

func (w *writer) exports(ctx context.Context, exports []*mcsv1beta1.ServiceExport) {
	for _, e := range exports {
		if _, err := w.m.Exports(e.Namespace).UpdateStatus(ctx, e, metav1.UpdateOptions{}); err != nil {
			w.fail("update status of", "ServiceExport", e, err)
		}
	}
}

func (w *writer) fail(verb, kind string, o metav1.Object, err error) {
	w.errs = append(w.errs, fmt.Errorf("%s %s %s/%s in %s: %w", verb, kind, o.GetNamespace(), o.GetName(), w.m.Cluster, err))
}

// creator is the part of a kind's client create needs.
type creator[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// create creates d; when its name is taken, it reads the holder: one not
// the controller's is ErrNotOurs, one of the controller's not yet listed
// is written at the next sync. ok says the object is the controller's.
func create[T metav1.Object](ctx context.Context, w *writer, kind string, d T, c creator[T]) (T, bool) {
	got, err := c.Create(ctx, d, metav1.CreateOptions{})
	if err == nil {
		return got, true
	}
	if !apierrors.IsAlreadyExists(err) {
		w.fail("create", kind, d, err)
		return got, false
	}
	holder, gerr := c.Get(ctx, d.GetName(), metav1.GetOptions{})
	switch {
	case gerr != nil:
		w.fail("create", kind, d, errors.Join(err, gerr))
	case !objects.Ours(holder.GetLabels(), kind == "EndpointSlice"):
		w.fail("create", kind, d, ErrNotOurs)
	default:
		return holder, true
	}
	return got, false
}

// deleteAll deletes the controller's objects, each only if it is still
// the object listed (UID precondition). Gone already is no error.
func deleteAll[T metav1.Object, L any](ctx context.Context, w *writer, kind string, objs []T, client func(string) ObjectClient[T, L]) {
	for _, o := range objs {
		opts := metav1.DeleteOptions{}
		if uid := o.GetUID(); uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: ptr.To(uid)}
		}
		if err := client(o.GetNamespace()).Delete(ctx, o.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
			w.fail("delete", kind, o, err)
		}
	}
}
