package controller

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
)

// DesiredSlices is the controller's pure desired state for tests outside
// this package: the EndpointSlices gd publishes when every cluster of
// services is selected, reachable and has the gateway Service given
// (nil: not found) with a ready endpoint, with no control-plane host. The slices carry no
// namespace; the controller writes them into its slice namespace.
func DesiredSlices(gd *v1alpha1.GatewayDNS, domain string, allowed cidr.List, services map[string]*corev1.Service) []*discoveryv1.EndpointSlice {
	var clusters []desired.Input
	for name, svc := range services {
		clusters = append(clusters, desired.Input{Name: name, Selected: true, ServiceSynced: true, Service: svc,
			EndpointsSynced: true, ReadyEndpoints: 1})
	}
	return desired.Compute(gd, domain, allowed, clusters).Slices
}
