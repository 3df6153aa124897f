package workload

import (
	"testing"

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
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}, NodeName: ptr.To("node-1"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Terminating: ptr.To(true)}}},
	}
	out, err := endpointsForCache(in)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*discoveryv1.EndpointSlice)
	if s.Name != "envoy-x" || s.ResourceVersion != "7" || s.Labels != nil || s.Annotations != nil ||
		len(s.Endpoints) != 1 || s.Endpoints[0].Addresses != nil || s.Endpoints[0].NodeName != nil ||
		!equality.Semantic.DeepEqual(s.Endpoints[0].Conditions, in.Endpoints[0].Conditions) {
		t.Errorf("cached %+v", s)
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
