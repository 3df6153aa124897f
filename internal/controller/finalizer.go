package controller

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

func hasFinalizer(gd *v1alpha1.GatewayDNS) bool {
	for _, f := range gd.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

// addFinalizer and removeFinalizer patch the finalizer list with the
// resourceVersion they read, so a concurrent change makes them fail and retry
// instead of overwriting someone else's finalizer.
func (c *Controller) addFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return c.patchFinalizers(ctx, gd, append(append([]string(nil), gd.Finalizers...), Finalizer))
}

func (c *Controller) removeFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	var keep []string
	for _, f := range gd.Finalizers {
		if f != Finalizer {
			keep = append(keep, f)
		}
	}
	return c.patchFinalizers(ctx, gd, keep)
}

func (c *Controller) patchFinalizers(ctx context.Context, gd *v1alpha1.GatewayDNS, finalizers []string) error {
	patch, err := jsonMarshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": gd.ResourceVersion}})
	if err != nil {
		return err
	}
	u, err := c.cfg.Dynamic.Resource(v1alpha1.GatewayDNSResource).Namespace(gd.Namespace).
		Patch(ctx, gd.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch finalizers of GatewayDNS %s/%s: %w", gd.Namespace, gd.Name, err)
	}
	if u != nil {
		// The status written later in this sync must carry the new version.
		gd.ResourceVersion, gd.Finalizers = u.GetResourceVersion(), u.GetFinalizers()
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
