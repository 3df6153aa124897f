package mgmt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// AddFinalizer and RemoveFinalizer patch the finalizer list of obj (of
// resource res) with the resourceVersion it was read at, so a concurrent
// change makes them fail and retry instead of overwriting someone else's
// finalizer.
func AddFinalizer(ctx context.Context, dyn dynamic.Interface, res schema.GroupVersionResource, obj metav1.Object, f string) error {
	return patchFinalizers(ctx, dyn, res, obj, append(slices.Clone(obj.GetFinalizers()), f))
}

// RemoveFinalizer: see AddFinalizer.
func RemoveFinalizer(ctx context.Context, dyn dynamic.Interface, res schema.GroupVersionResource, obj metav1.Object, f string) error {
	var keep []string
	for _, have := range obj.GetFinalizers() {
		if have != f {
			keep = append(keep, have)
		}
	}
	return patchFinalizers(ctx, dyn, res, obj, keep)
}

// patchFinalizers sets the finalizers of obj, of resource res, with the
// resourceVersion obj was read at.
func patchFinalizers(ctx context.Context, dyn dynamic.Interface, res schema.GroupVersionResource, obj metav1.Object, finalizers []string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": obj.GetResourceVersion()}})
	if err != nil {
		return fmt.Errorf("marshal patch: %w", err)
	}
	u, err := dyn.Resource(res).Namespace(obj.GetNamespace()).
		Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch finalizers of %s %s/%s: %w", res.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	if u != nil {
		// The status written later in this sync must carry the new version.
		obj.SetResourceVersion(u.GetResourceVersion())
		obj.SetFinalizers(u.GetFinalizers())
	}
	return nil
}
