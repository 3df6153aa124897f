package testfixture

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// The objects of a workload and the management cluster as the controller
// reads them: kubeconfig Secrets, gateway and headless Services, and the
// EndpointSlices Kubernetes keeps for a Service.

// KubeconfigSecret is the Cluster API kubeconfig Secret of cluster in
// dev-team: <cluster>-kubeconfig with kubeconfig under key value. The
// convention is spelled out here, not taken from the controller, so a
// change of the controller's constants fails the tests.
func KubeconfigSecret(cluster, kubeconfig string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: cluster + "-kubeconfig"},
		Data: map[string][]byte{"value": []byte(kubeconfig)}}
}

// GatewayService is the gateway Service projectcontour/envoy with the
// given load-balancer ingress, taken as is (IPs not parsed, so a test can
// hand it bad ones).
func GatewayService(ingress ...corev1.LoadBalancerIngress) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "projectcontour", Name: "envoy"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
	}
}

// IPs is a load-balancer ingress of one IP per address.
func IPs(addrs ...string) []corev1.LoadBalancerIngress {
	var out []corev1.LoadBalancerIngress
	for _, a := range addrs {
		out = append(out, corev1.LoadBalancerIngress{IP: a})
	}
	return out
}

// HeadlessGatewayDNS is GatewayDNS(name) exporting the headless Service
// databases/postgres.
func HeadlessGatewayDNS(name string) *v1alpha1.GatewayDNS {
	gd := GatewayDNS(name)
	gd.Spec.Service = "databases/postgres"
	gd.Spec.ResolutionType = v1alpha1.ResolutionTypeHeadless
	return gd
}

// HeadlessService is the headless Service databases/postgres of a
// workload cluster, port pg 5432.
func HeadlessService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "databases", Name: "postgres"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}}}
}

// PostgresPorts are the ports of HeadlessService's EndpointSlices.
func PostgresPorts() []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](5432)}}
}

// ServiceEndpoints is an EndpointSlice name of the Service
// namespace/service as the endpoint slice controller keeps it (label
// kubernetes.io/service-name, IPv4, no ports) with the endpoints given.
func ServiceEndpoints(namespace, service, name string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

// Endpoint is an endpoint of one address, ready or not.
func Endpoint(addr string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
}

// PodEndpoint is an endpoint as the endpoint slice controller writes a
// StatefulSet's pod: one address, its hostname (none if empty), ready
// and serving or neither, not terminating.
func PodEndpoint(addr, hostname string, ready bool) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{Addresses: []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)}}
	if hostname != "" {
		ep.Hostname = ptr.To(hostname)
	}
	return ep
}

// SliceView is a slice reduced to what a test compares: hostname, type,
// addresses, and "unready" when an endpoint is not ready. A self marker
// is "self <namespace> <clusters>".
func SliceView(s *discoveryv1.EndpointSlice) string {
	if s.Labels[contract.LabelRecord] == string(contract.KindSelf) {
		return "self " + s.Annotations[contract.AnnotationSelfNamespace] + " " + s.Annotations[contract.AnnotationSelfClusters]
	}
	var addrs []string
	unready := false
	for _, ep := range s.Endpoints {
		addrs = append(addrs, ep.Addresses...)
		unready = unready || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready)
	}
	v := s.Annotations[contract.AnnotationHostname] + " " + string(s.AddressType) + " " + strings.Join(addrs, ",")
	if unready {
		v += " unready"
	}
	return v
}
