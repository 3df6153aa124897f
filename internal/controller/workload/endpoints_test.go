package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEndpointsForCache(t *testing.T) {
	in := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "envoy-x", Namespace: "projectcontour", ResourceVersion: "7",
			Labels: map[string]string{discoveryv1.LabelServiceName: "envoy"}, Annotations: map[string]string{"big": "yes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](5432)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}, NodeName: ptr.To("node-1"), Hostname: ptr.To("db-0"),
			Zone: ptr.To("a"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "db-0"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Terminating: ptr.To(true)}}},
	}
	out, err := endpointsForCache(in)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*discoveryv1.EndpointSlice)
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "envoy-x", Namespace: "projectcontour", ResourceVersion: "7",
			Labels: map[string]string{discoveryv1.LabelServiceName: "envoy"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       in.Ports,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}, Hostname: ptr.To("db-0"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Terminating: ptr.To(true)}}},
	}
	if !equality.Semantic.DeepEqual(s, want) {
		t.Errorf("cached %+v, want %+v", s, want)
	}
	again, _ := endpointsForCache(s)
	if !equality.Semantic.DeepEqual(again, s) {
		t.Errorf("not idempotent: %+v", again)
	}
	if hasReady(s) {
		t.Errorf("a not-ready, terminating endpoint counts as ready")
	}
	s.Endpoints[0].Conditions = discoveryv1.EndpointConditions{}
	if !hasReady(s) {
		t.Errorf("ready unset must count as ready")
	}
}

func TestEndpointsChanged(t *testing.T) {
	slice := func(addrs ...string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		}
		return s
	}
	notReady := slice("10.0.0.1")
	notReady.Endpoints[0].Conditions.Ready = ptr.To(false)
	withPort := slice("10.0.0.1")
	withPort.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Port: ptr.To[int32](5432)}}
	tests := []struct {
		name     string
		old, cur *discoveryv1.EndpointSlice
		health   bool // an event for health alone
		content  bool // an event for a headless export
	}{
		{"same", slice("10.0.0.1"), slice("10.0.0.1"), false, false},
		{"one more pod", slice("10.0.0.1"), slice("10.0.0.1", "10.0.0.2"), false, true},
		{"last ready pod gone", slice("10.0.0.1"), notReady, true, true},
		{"port added", slice("10.0.0.1"), withPort, false, true},
		{"pod moved", slice("10.0.0.1"), slice("10.0.0.2"), false, true},
	}
	for _, tt := range tests {
		if got := endpointsChanged(tt.old, tt.cur, false); got != tt.health {
			t.Errorf("%s: health-only event %v, want %v", tt.name, got, tt.health)
		}
		if got := endpointsChanged(tt.old, tt.cur, true); got != tt.content {
			t.Errorf("%s: headless event %v, want %v", tt.name, got, tt.content)
		}
	}
}
