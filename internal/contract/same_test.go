package contract

import (
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// One comparison for every contract slice, gateway and clusterset alike:
// what serve reads counts, what others add does not, and an update keeps
// what others added.
func TestSameSliceAndMerge(t *testing.T) {
	base := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{LabelManagedBy: ManagedByValue},
				Annotations: map[string]string{AnnotationHostname: "web.shop.svc.clusterset.local", AnnotationTTL: "5"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Hostname: ptr.To("db-0"),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		}
	}
	for _, c := range []struct {
		name   string
		change func(existing *discoveryv1.EndpointSlice)
		same   bool
	}{
		{"equal", func(*discoveryv1.EndpointSlice) {}, true},
		{"a label someone else added", func(e *discoveryv1.EndpointSlice) { e.Labels["team"] = "shop" }, true},
		{"an annotation someone else added", func(e *discoveryv1.EndpointSlice) { e.Annotations["note"] = "x" }, true},
		{"another port", func(e *discoveryv1.EndpointSlice) { e.Ports[0].Port = ptr.To[int32](8080) }, false},
		{"no ports", func(e *discoveryv1.EndpointSlice) { e.Ports = nil }, false},
		{"another hostname", func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Hostname = ptr.To("db-1") }, false},
		{"not ready", func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Conditions.Ready = ptr.To(false) }, false},
		{"another address", func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses = []string{"10.0.0.2"} }, false},
		{"one endpoint more", func(e *discoveryv1.EndpointSlice) { e.Endpoints = append(e.Endpoints, e.Endpoints[0]) }, false},
		{"our label changed", func(e *discoveryv1.EndpointSlice) { e.Labels[LabelManagedBy] = "someone" }, false},
		{"another address type", func(e *discoveryv1.EndpointSlice) { e.AddressType = discoveryv1.AddressTypeIPv6 }, false},
		// A failover order left from an older desire would make serve
		// read the slice under a policy it no longer has.
		{"an owned annotation no longer desired", func(e *discoveryv1.EndpointSlice) { e.Annotations[AnnotationFailoverOrder] = "a,b" }, false},
		{"an owned label no longer desired", func(e *discoveryv1.EndpointSlice) { e.Labels[LabelSourceCluster] = "cluster-a" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			existing, desired := base(), base()
			c.change(existing)
			if got := SameSlice(existing, desired); got != c.same {
				t.Fatalf("SameSlice = %v, want %v", got, c.same)
			}
			u := MergeSlice(existing, desired)
			if !SameSlice(u, desired) {
				t.Errorf("the merge is not what is desired: %+v", u)
			}
			for k, v := range existing.Labels {
				if !slices.Contains(Owned.Labels, k) && u.Labels[k] != v {
					t.Errorf("label %s=%s of someone else dropped", k, v)
				}
			}
		})
	}
	// A ttl no longer wanted goes; another's annotation stays.
	existing, desired := base(), base()
	existing.Annotations["note"] = "x"
	delete(desired.Annotations, AnnotationTTL)
	if SameSlice(existing, desired) {
		t.Error("a ttl no longer wanted counts as the same")
	}
	if u := MergeSlice(existing, desired); u.Annotations[AnnotationTTL] != "" || u.Annotations["note"] != "x" {
		t.Errorf("merged annotations %v", u.Annotations)
	}
}
