package gatewaydns

import (
	"context"
	"slices"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
)

func hasFinalizer(gd *v1alpha1.GatewayDNS) bool {
	return slices.Contains(gd.Finalizers, Finalizer)
}

// addFinalizer and removeFinalizer patch the finalizer list with the
// resourceVersion they read (mgmt.AddFinalizer).
func (c *Reconciler) addFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return mgmt.AddFinalizer(ctx, c.cfg.Dynamic, v1alpha1.GatewayDNSResource, gd, Finalizer)
}

func (c *Reconciler) removeFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return mgmt.RemoveFinalizer(ctx, c.cfg.Dynamic, v1alpha1.GatewayDNSResource, gd, Finalizer)
}
