package testfixture

import (
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

const (
	// SliceNamespace is the namespace of the slices built here: serve's
	// and the controller's default.
	SliceNamespace = "xcc-dns"
	// GatewayRef is the gateway-dns-ref of the slices built here: the
	// walkthrough's GatewayDNS, in the namespace dev-team, which owns the
	// names below dev-team.clusters.xcc.test.
	GatewayRef = "dev-team/dev-team-gateway-dns"
)

// Slice returns an EndpointSlice in SliceNamespace as the original
// controller wrote them: the hostname and gateway-dns-ref annotations, and
// one endpoint holding every address, no ports.
func Slice(name, hostname string, at discoveryv1.AddressType, addrs ...string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: SliceNamespace,
			Annotations: map[string]string{
				contract.AnnotationHostname:   hostname,
				contract.AnnotationGatewayRef: GatewayRef,
			},
		},
		AddressType: at,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: addrs}},
	}
}

// IPv4Slice is Slice of address type IPv4.
func IPv4Slice(name, hostname string, addrs ...string) *discoveryv1.EndpointSlice {
	return Slice(name, hostname, discoveryv1.AddressTypeIPv4, addrs...)
}

// WithTTL sets the slice's TTL annotation (unless ttl is empty) and
// returns it.
func WithTTL(s *discoveryv1.EndpointSlice, ttl string) *discoveryv1.EndpointSlice {
	if ttl != "" {
		s.Annotations[contract.AnnotationTTL] = ttl
	}
	return s
}

// GatewayDNS returns the walkthrough's GatewayDNS under name, in the
// namespace dev-team: the envoy Service of every Cluster labelled
// hasContour=true, by its load-balancer status.
func GatewayDNS(name string) *v1alpha1.GatewayDNS {
	return &v1alpha1.GatewayDNS{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: name, Generation: 1},
		Spec: v1alpha1.GatewayDNSSpec{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"hasContour": "true"}},
			Service:         "projectcontour/envoy",
			ResolutionType:  v1alpha1.ResolutionTypeLoadBalancer,
		},
	}
}

// LoadBalancerService returns a LoadBalancer Service whose status holds
// ingress as a load balancer (MetalLB, a cloud's) would set it: each entry
// an IP if it parses as one, else a hostname.
func LoadBalancerService(namespace, name string, ingress ...string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	for _, in := range ingress {
		if net.ParseIP(in) != nil {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: in})
		} else {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{Hostname: in})
		}
	}
	return svc
}
