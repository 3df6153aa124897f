package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
)

func hasFinalizer(gd *v1alpha1.GatewayDNS) bool {
	return slices.Contains(gd.Finalizers, Finalizer)
}

// addFinalizer and removeFinalizer patch the finalizer list with the
// resourceVersion they read, so a concurrent change makes them fail and retry
// instead of overwriting someone else's finalizer.
func (c *Controller) addFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return c.patchFinalizers(ctx, v1alpha1.GatewayDNSResource, gd, withFinalizer(gd, Finalizer))
}

func (c *Controller) removeFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return c.patchFinalizers(ctx, v1alpha1.GatewayDNSResource, gd, withoutFinalizer(gd, Finalizer))
}

// hasSetFinalizer, addSetFinalizer and removeSetFinalizer are the same
// for a ClusterSet and ClusterSetFinalizer.
func hasSetFinalizer(cs *xccv1alpha1.ClusterSet) bool {
	return slices.Contains(cs.Finalizers, ClusterSetFinalizer)
}

func (c *Controller) addSetFinalizer(ctx context.Context, cs *xccv1alpha1.ClusterSet) error {
	return c.patchFinalizers(ctx, xccv1alpha1.ClusterSetResource, cs, withFinalizer(cs, ClusterSetFinalizer))
}

func (c *Controller) removeSetFinalizer(ctx context.Context, cs *xccv1alpha1.ClusterSet) error {
	return c.patchFinalizers(ctx, xccv1alpha1.ClusterSetResource, cs, withoutFinalizer(cs, ClusterSetFinalizer))
}

func withFinalizer(obj metav1.Object, f string) []string {
	return append(slices.Clone(obj.GetFinalizers()), f)
}

func withoutFinalizer(obj metav1.Object, f string) []string {
	var keep []string
	for _, have := range obj.GetFinalizers() {
		if have != f {
			keep = append(keep, have)
		}
	}
	return keep
}

// patchFinalizers sets the finalizers of obj, of resource res, with the
// resourceVersion obj was read at.
func (c *Controller) patchFinalizers(ctx context.Context, res schema.GroupVersionResource, obj metav1.Object, finalizers []string) error {
	patch, err := jsonMarshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": obj.GetResourceVersion()}})
	if err != nil {
		return err
	}
	u, err := c.cfg.Dynamic.Resource(res).Namespace(obj.GetNamespace()).
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

func jsonMarshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal patch: %w", err)
	}
	return b, nil
}
