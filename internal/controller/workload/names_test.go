package workload

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// The cluster-wide Service informer keeps of each Service only what names
// read, and the transform is idempotent.
func TestServiceForNames(t *testing.T) {
	in := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "7", UID: "u",
			Labels:        map[string]string{"app": "web"},
			Annotations:   map[string]string{contract.AnnotationFQDN: "web", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.9", Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "10.1.0.1", IPMode: ptr.To(corev1.LoadBalancerIPModeVIP), Ports: []corev1.PortStatus{{Port: 80}}}, {Hostname: "lb.example.com"}}}},
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "7",
			Annotations: map[string]string{contract.AnnotationFQDN: "web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "10.1.0.1"}, {Hostname: "lb.example.com"}}}},
	}
	got, err := serviceForNames(in)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("serviceForNames = %+v, %v\nwant %+v", got, err, want)
	}
	again, _ := serviceForNames(got)
	if !reflect.DeepEqual(again, want) {
		t.Errorf("not idempotent: %+v", again)
	}
	if !claims(got) {
		t.Errorf("an annotated LoadBalancer Service claims a name")
	}
	plain, _ := serviceForNames(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b", Annotations: map[string]string{"x": "y"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}})
	if s := plain.(*corev1.Service); s.Annotations != nil || claims(s) {
		t.Errorf("a plain Service keeps %+v", s)
	}
}
