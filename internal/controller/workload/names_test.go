package workload

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
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

// The names EndpointSlice informer keeps of a slice its Service label and
// one empty endpoint per ready one, idempotently, and indexes it by
// Service.
func TestNamesEndpoints(t *testing.T) {
	in := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-abcde", ResourceVersion: "3", UID: "u",
			Labels:        map[string]string{discoveryv1.LabelServiceName: "web", "endpointslice.kubernetes.io/managed-by": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kcm"}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To("n1")},
			{Addresses: []string{"10.244.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			{Addresses: []string{"10.244.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Terminating: ptr.To(true)}},
			{Addresses: []string{"10.244.0.4"}},
		},
	}
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-abcde", ResourceVersion: "3",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Endpoints: make([]discoveryv1.Endpoint, 2),
	}
	got, err := namesEndpoints(in)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("namesEndpoints = %+v, %v\nwant %+v", got, err, want)
	}
	if again, _ := namesEndpoints(got); !reflect.DeepEqual(again, want) {
		t.Errorf("not idempotent: %+v", again)
	}
	if keys, _ := indexByService(got); !reflect.DeepEqual(keys, []string{"shop/web"}) {
		t.Errorf("index %q", keys)
	}
	none, _ := namesEndpoints(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "x"}})
	if keys, _ := indexByService(none); keys != nil || none.(*discoveryv1.EndpointSlice).Endpoints != nil {
		t.Errorf("a slice of no Service: %+v, index %q", none, keys)
	}
}

// Names reads health from the one cluster-wide EndpointSlice informer:
// the ready endpoints of each claiming Service with an address, summed
// over its slices, following them as they change; no per-Service
// informer is started.
func TestNamesReadiness(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := func(name string, addr bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			Annotations: map[string]string{contract.AnnotationFQDN: name}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		if addr {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.1.0.1"}}
		}
		return s
	}
	slice := func(service, name string, ready ...bool) *discoveryv1.EndpointSlice {
		s := testfixture.ServiceEndpoints("shop", service, name)
		for _, r := range ready {
			s.Endpoints = append(s.Endpoints, testfixture.Endpoint("10.244.0.1", r))
		}
		return s
	}
	client := fake.NewClientset(svc("web", true), svc("pending", false),
		slice("web", "web-1", true, false), slice("web", "web-2", true), slice("pending", "pending-1", true))
	var events atomic.Int32
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func([]string) { events.Add(1) }, Gauge: func(int) {}})
	m.Start(ctx)
	acc := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "gd")
	ready := func() map[string]int {
		t.Helper()
		var out map[string]int
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			names, synced := watchedNames(m, acc.Cluster, "gd", map[string]bool{})
			out = map[string]int{}
			for _, n := range names {
				if n.EndpointsSynced {
					out[n.Name] = n.ReadyEndpoints
				}
			}
			return synced, nil
		})
		if err != nil {
			t.Fatal("never synced")
		}
		return out
	}
	if got := ready(); !reflect.DeepEqual(got, map[string]int{"web": 2}) {
		t.Errorf("ready %v, want web: 2 (pending has no address)", got)
	}
	if _, services, _ := m.Watched(); services != 0 {
		t.Errorf("%d per-Service informers, want none", services)
	}
	for _, name := range []string{"web-1", "web-2"} {
		if err := client.DiscoveryV1().EndpointSlices("shop").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return reflect.DeepEqual(ready(), map[string]int{"web": 0}), nil
	})
	if err != nil {
		t.Errorf("ready %v after its slices went, want web: 0", ready())
	}
	if events.Load() == 0 {
		t.Errorf("no sync when the claiming Service lost its last ready endpoint")
	}
}
