package lab

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// GatewayEndpointsName is the EndpointSlice of the envoy Service the lab
// writes as a cluster's endpoint slice controller would (no kubelet and no
// controller manager run in the lab, so nothing else writes one).
const GatewayEndpointsName = "envoy-lab"

// GatewaysHost is the multi-cluster name a pod asks for app behind the
// walkthrough GatewayDNS's gateways: any label below
// <gatewaydns>.<ns>.gateways.<zone>.
func GatewaysHost(app string) string {
	return fmt.Sprintf("%s.%s.%s.gateways.%s", app, GatewayDNSName, ClusterNamespace, Zone)
}

// SetGatewayEndpoints makes the envoy Service of w have one endpoint,
// ready or not, in an EndpointSlice labelled with the Service's name.
func SetGatewayEndpoints(ctx context.Context, w *Cluster, ready bool) error {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayEndpointsName, Namespace: GatewayNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: GatewayName,
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}, Conditions: discoveryv1.EndpointConditions{
			Ready: ptr(ready), Serving: ptr(ready), Terminating: ptr(false),
		}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
	}
	return WriteEndpointSlice(ctx, w.Client, w.Name, s)
}

// DeleteGatewayEndpoints removes what SetGatewayEndpoints wrote.
func DeleteGatewayEndpoints(ctx context.Context, w *Cluster) error {
	return DeleteEndpointSlice(ctx, w, GatewayNamespace, GatewayEndpointsName)
}

// SetClusterAvailable sets the Cluster's v1beta2 condition Available, as
// Cluster API does, to status ("True", "False"); "" removes it.
func SetClusterAvailable(ctx context.Context, mgmt *Cluster, namespace, name, status string) error {
	api := mgmt.Dynamic.Resource(ClusterGVR).Namespace(namespace)
	u, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get Cluster %s/%s: %w", namespace, name, err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var keep []any
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] != "Available" {
			keep = append(keep, c)
		}
	}
	if status != "" {
		reason := "Available"
		if status != "True" {
			reason = "NotAvailable"
		}
		keep = append(keep, map[string]any{"type": "Available", "status": status, "reason": reason,
			"message": "set by the lab", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
	}
	if keep == nil {
		keep = []any{}
	}
	if err := unstructured.SetNestedSlice(u.Object, keep, "status", "conditions"); err != nil {
		return err
	}
	if _, err := api.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set condition Available=%q of Cluster %s/%s: %w", status, namespace, name, err)
	}
	return nil
}

// GatewayHealth is the health of one cluster's gateway in a GatewayDNS's status.
type GatewayHealth struct {
	Healthy, Answered bool
	Reason            string
}

// GatewayDNSHealth returns, by cluster, the health entries of a
// GatewayDNS's status.clusters.
func GatewayDNSHealth(ctx context.Context, mgmt *Cluster, namespace, name string) (map[string]GatewayHealth, error) {
	gd, err := mgmt.Dynamic.Resource(GatewayDNSGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get GatewayDNS %s/%s: %w", namespace, name, err)
	}
	entries, _, _ := unstructured.NestedSlice(gd.Object, "status", "clusters")
	out := map[string]GatewayHealth{}
	for _, e := range entries {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		h, _ := m["healthy"].(bool)
		a, _ := m["answered"].(bool)
		r, _ := m["healthReason"].(string)
		out[n] = GatewayHealth{Healthy: h, Answered: a, Reason: r}
	}
	return out, nil
}
