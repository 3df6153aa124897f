package controller

import (
	"context"
	"slices"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
)

func hasFinalizer(gd *v1alpha1.GatewayDNS) bool {
	return slices.Contains(gd.Finalizers, Finalizer)
}

// addFinalizer and removeFinalizer patch the finalizer list with the
// resourceVersion they read (mgmt.AddFinalizer).
func (c *Controller) addFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return mgmt.AddFinalizer(ctx, c.cfg.Dynamic, v1alpha1.GatewayDNSResource, gd, Finalizer)
}

func (c *Controller) removeFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return mgmt.RemoveFinalizer(ctx, c.cfg.Dynamic, v1alpha1.GatewayDNSResource, gd, Finalizer)
}

// hasSetFinalizer, addSetFinalizer and removeSetFinalizer are the same
// for a ClusterSet and ClusterSetFinalizer.
func hasSetFinalizer(cs *xccv1alpha1.ClusterSet) bool {
	return slices.Contains(cs.Finalizers, ClusterSetFinalizer)
}

func (c *Controller) addSetFinalizer(ctx context.Context, cs *xccv1alpha1.ClusterSet) error {
	return mgmt.AddFinalizer(ctx, c.cfg.Dynamic, xccv1alpha1.ClusterSetResource, cs, ClusterSetFinalizer)
}

func (c *Controller) removeSetFinalizer(ctx context.Context, cs *xccv1alpha1.ClusterSet) error {
	return mgmt.RemoveFinalizer(ctx, c.cfg.Dynamic, xccv1alpha1.ClusterSetResource, cs, ClusterSetFinalizer)
}
