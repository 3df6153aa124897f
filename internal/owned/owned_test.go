package owned

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What the controller owns is made what it desires; what others set
// stays, and an owner that was recreated replaces the old reference.
func TestSameAndMergeMeta(t *testing.T) {
	keys := Keys{Labels: []string{"ours", "old"}, Annotations: []string{"note"}}
	desired := &metav1.ObjectMeta{Labels: map[string]string{"ours": "1"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ServiceImport", Name: "web", UID: types.UID("new")}}}
	for _, tc := range []struct {
		name     string
		existing metav1.ObjectMeta
		same     bool
		want     metav1.ObjectMeta
	}{
		{name: "equal", existing: *desired.DeepCopy(), same: true, want: *desired.DeepCopy()},
		{name: "others' label and owner kept", same: true,
			existing: metav1.ObjectMeta{Labels: map[string]string{"ours": "1", "team": "shop"},
				OwnerReferences: []metav1.OwnerReference{desired.OwnerReferences[0], {Kind: "Deployment", UID: "d"}}},
			want: metav1.ObjectMeta{Labels: map[string]string{"ours": "1", "team": "shop"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", UID: "d"}, desired.OwnerReferences[0]}}},
		{name: "owned label changed", existing: metav1.ObjectMeta{Labels: map[string]string{"ours": "2"},
			OwnerReferences: desired.OwnerReferences},
			want: *desired.DeepCopy()},
		{name: "owned keys no longer desired", existing: metav1.ObjectMeta{Labels: map[string]string{"ours": "1", "old": "x"},
			Annotations: map[string]string{"note": "y", "theirs": "z"}, OwnerReferences: desired.OwnerReferences},
			want: metav1.ObjectMeta{Labels: map[string]string{"ours": "1"}, Annotations: map[string]string{"theirs": "z"},
				OwnerReferences: desired.OwnerReferences}},
		{name: "owner recreated", existing: metav1.ObjectMeta{Labels: map[string]string{"ours": "1"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ServiceImport", Name: "web", UID: "old"}}},
			want: *desired.DeepCopy()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameMeta(&tc.existing, desired, keys); got != tc.same {
				t.Errorf("SameMeta = %v, want %v", got, tc.same)
			}
			u := tc.existing.DeepCopy()
			MergeMeta(u, desired, keys)
			if !reflect.DeepEqual(*u, tc.want) {
				t.Errorf("merged %+v, want %+v", *u, tc.want)
			}
			if !SameMeta(u, desired, keys) {
				t.Error("the merge is not what is desired")
			}
		})
	}
}
