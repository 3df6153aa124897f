package write

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind is what Diff needs to know of one kind of object: which held ones
// the caller wrote, whether a held one already is as desired, and how a
// desired one is written over a held one.
type Kind[T metav1.Object] struct {
	// Ours reports whether the caller wrote a held object. Another's is
	// never updated or deleted, and a desired name it holds is refused.
	Ours func(T) bool
	// Same reports whether held is already as desired.
	Same func(held, desired T) bool
	// Merge returns held with the desired fields set, so the update
	// carries the resourceVersion read and keeps what others added.
	Merge func(held, desired T) T
	// Keep, when set, names held objects of the caller's that stay as
	// they are, desired or not (say, those of a cluster that cannot be
	// read just now).
	Keep func(T) bool
}

// Plan is what to write so that a namespace holds the desired objects of
// one kind: the writes, and what needs none.
type Plan[T metav1.Object] struct {
	// Create are desired names nobody holds.
	Create []T
	// Update are held objects of the caller's with the desired fields
	// set (Kind.Merge).
	Update []T
	// Delete are held objects of the caller's no longer desired, by
	// namespace and name.
	Delete []T
	// Same are held objects of the caller's already as desired.
	Same []T
	// NotOurs are desired objects whose name another's object holds:
	// never written.
	NotOurs []T
}

// Diff plans the writes that bring held to desired; it is pure. Every
// writer of a workload cluster plans with it, so "what is ours, what
// stays, what is written" has one answer.
func Diff[T metav1.Object](desired, held []T, k Kind[T]) Plan[T] {
	var p Plan[T]
	type nsName struct{ namespace, name string }
	key := func(o T) nsName { return nsName{o.GetNamespace(), o.GetName()} }
	have := make(map[nsName]T, len(held))
	for _, h := range held {
		have[key(h)] = h
	}
	want := make(map[nsName]bool, len(desired))
	for _, d := range desired {
		want[key(d)] = true
		h, ok := have[key(d)]
		switch {
		case !ok:
			p.Create = append(p.Create, d)
		case !k.Ours(h):
			p.NotOurs = append(p.NotOurs, d)
		case k.Keep != nil && k.Keep(h):
		case k.Same(h, d):
			p.Same = append(p.Same, h)
		default:
			p.Update = append(p.Update, k.Merge(h, d))
		}
	}
	for _, h := range held {
		if !want[key(h)] && k.Ours(h) && (k.Keep == nil || !k.Keep(h)) {
			p.Delete = append(p.Delete, h)
		}
	}
	slices.SortFunc(p.Delete, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return p
}
