package apply

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// withOwners returns desired with each derived Service and slice owned by
// its ServiceImport, whose UID uids holds. Those of an import without a
// UID (its ServiceImport could not be written) are left out, and their
// imports are held: none of their objects is written or deleted now.
func withOwners(desired objects.Objects, uids map[aggregate.Key]types.UID) (objects.Objects, map[aggregate.Key]bool) {
	out := desired
	held := map[aggregate.Key]bool{}
	out.Services, out.Slices = nil, nil
	for _, s := range desired.Services {
		if o, ok := ownedCopy(s, uids, held); ok {
			out.Services = append(out.Services, o)
		}
	}
	for _, s := range desired.Slices {
		if o, ok := ownedCopy(s, uids, held); ok {
			out.Slices = append(out.Slices, o)
		}
	}
	return out, held
}

// ownedCopy is a copy of o owned by its import's ServiceImport; ok is false
// (and the import held) when the import has no UID.
func ownedCopy[T interface {
	metav1.Object
	DeepCopyObject() runtime.Object
}](o T, uids map[aggregate.Key]types.UID, held map[aggregate.Key]bool) (T, bool) {
	k := importKey(o)
	uid, ok := uids[k]
	if !ok {
		held[k] = true
		return o, false
	}
	c := o.DeepCopyObject().(T)
	c.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: mcsv1beta1.GroupVersion.String(), Kind: mcsv1beta1.ServiceImportKindName,
		Name: k.Name, UID: uid, Controller: ptr.To(true),
	}})
	return c, true
}

// unheld drops the objects of the imports held has.
func unheld[T metav1.Object, V any](objs []T, held map[aggregate.Key]V) []T {
	var out []T
	for _, o := range objs {
		if _, ok := held[importKey(o)]; !ok {
			out = append(out, o)
		}
	}
	return out
}
