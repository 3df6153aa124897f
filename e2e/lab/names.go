package lab

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AnnotationFQDN is the annotation by which a LoadBalancer Service claims
// a name (spec.names of a GatewayDNS).
const AnnotationFQDN = "connectivity.tanzu.vmware.com/fqdn"

// NamesHost is the name a Service claims with the single label label in
// namespace ns's default grant: <label>.<ns>.names.<zone>.
func NamesHost(label, namespace string) string {
	return fmt.Sprintf("%s.%s.names.%s", label, namespace, Zone)
}

// CreateClaimingService creates, in namespace ns of w (made if missing),
// the LoadBalancer Service name annotated fqdn: value, with ip as its
// load-balancer ingress (as MetalLB would set it) and one ready endpoint
// (as the endpoint slice controller would write it).
func CreateClaimingService(ctx context.Context, w *Cluster, namespace, name, value, ip string) error {
	_, err := w.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s on %s: %w", namespace, w.Name, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: map[string]string{AnnotationFQDN: value}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	svc, err = w.Client.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Service %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if _, err := w.Client.CoreV1().Services(namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of Service %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	eps := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-lab", Namespace: namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: name,
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.8"}, Conditions: discoveryv1.EndpointConditions{
			Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false),
		}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
	}
	if _, err := w.Client.DiscoveryV1().EndpointSlices(namespace).Create(ctx, eps, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("endpoints of Service %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// SetClaimingEndpointsReady makes the one endpoint CreateClaimingService
// wrote ready or not.
func SetClaimingEndpointsReady(ctx context.Context, w *Cluster, namespace, name string, ready bool) error {
	api := w.Client.DiscoveryV1().EndpointSlices(namespace)
	eps, err := api.Get(ctx, name+"-lab", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("endpoints of Service %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	eps.Endpoints[0].Conditions.Ready, eps.Endpoints[0].Conditions.Serving = ptr(ready), ptr(ready)
	if _, err := api.Update(ctx, eps, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("endpoints of Service %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// DeleteNamespace deletes namespace ns of w and everything in it (the lab
// runs no namespace controller: the Services and EndpointSlices are
// deleted one by one first).
func DeleteNamespace(ctx context.Context, w *Cluster, namespace string) error {
	svcs, err := w.Client.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Services of %s on %s: %w", namespace, w.Name, err)
	}
	for _, s := range svcs.Items {
		if err := w.Client.CoreV1().Services(namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Service %s/%s on %s: %w", namespace, s.Name, w.Name, err)
		}
	}
	if err := w.Client.DiscoveryV1().EndpointSlices(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("EndpointSlices of %s on %s: %w", namespace, w.Name, err)
	}
	if err := w.Client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %s on %s: %w", namespace, w.Name, err)
	}
	return nil
}

// NameStatus is one entry of a GatewayDNS's status.names.
type NameStatus struct {
	Reason, Message string
	Sources         []string
	HealthySources  int64
}

// GatewayDNSNames returns, by name, the entries of a GatewayDNS's status.names.
func GatewayDNSNames(ctx context.Context, mgmt *Cluster, namespace, name string) (map[string]NameStatus, error) {
	gd, err := mgmt.Dynamic.Resource(GatewayDNSGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get GatewayDNS %s/%s: %w", namespace, name, err)
	}
	entries, _, _ := unstructured.NestedSlice(gd.Object, "status", "names")
	out := map[string]NameStatus{}
	for _, e := range entries {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		st := NameStatus{}
		st.Reason, _ = m["reason"].(string)
		st.Message, _ = m["message"].(string)
		st.HealthySources, _ = m["healthySources"].(int64)
		srcs, _ := m["sources"].([]any)
		for _, s := range srcs {
			if v, ok := s.(string); ok {
				st.Sources = append(st.Sources, v)
			}
		}
		out[n] = st
	}
	return out, nil
}
