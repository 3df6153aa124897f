package workload

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// The gateway or exported Service is cached with what is read of it:
// identity, spec and load-balancer status, not the labels, annotations,
// managed fields or conditions a tenant may make large.
func TestWatchedServiceForCache(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	now := metav1.Now()
	in := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "projectcontour", Name: "envoy", UID: "u", ResourceVersion: "3", Generation: 2,
			CreationTimestamp: now, DeletionTimestamp: &now,
			Labels: map[string]string{"a": big}, Annotations: map[string]string{"b": big}, Finalizers: []string{big},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: big}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		Status: corev1.ServiceStatus{
			LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}},
			Conditions:   []metav1.Condition{{Type: "Big", Message: big}},
		},
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "projectcontour", Name: "envoy", UID: "u", ResourceVersion: "3", Generation: 2,
			CreationTimestamp: now, DeletionTimestamp: &now},
		Spec:   in.Spec,
		Status: corev1.ServiceStatus{LoadBalancer: in.Status.LoadBalancer},
	}
	got, err := watchedServiceForCache(in)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("serviceForCache = %+v, %v\nwant %+v", got, err, want)
	}
	if again, _ := watchedServiceForCache(got); !reflect.DeepEqual(again, want) {
		t.Error("not idempotent")
	}
}

// An fqdn annotation longer than any name is cut in the cache (it stays
// invalid, and is refused as such).
func TestServiceForNamesCutsTheName(t *testing.T) {
	in := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
		Annotations: map[string]string{contract.AnnotationFQDN: strings.Repeat("a", 1<<20)}}}
	got, _ := serviceForNames(in)
	v := got.(*corev1.Service).Annotations[contract.AnnotationFQDN]
	if len(v) != maxCachedNameBytes {
		t.Errorf("kept an fqdn annotation of %d bytes, want %d", len(v), maxCachedNameBytes)
	}
	if again, _ := serviceForNames(got); !reflect.DeepEqual(again, got) {
		t.Error("not idempotent")
	}
}
