package clusterset

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// exportOf reads every field the aggregator compares, and nothing of a
// Service that is missing or being deleted.
func TestExportOf(t *testing.T) {
	created := time.Unix(1000, 0).UTC()
	e := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", CreationTimestamp: metav1.NewTime(created)}}
	local := corev1.ServiceInternalTrafficPolicyLocal
	svc := &corev1.Service{Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10",
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, AppProtocol: ptr.To("http")},
			{Protocol: corev1.ProtocolUDP, Port: 53}},
		SessionAffinity:       corev1.ServiceAffinityClientIP,
		SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}},
		InternalTrafficPolicy: &local,
		TrafficDistribution:   ptr.To("PreferClose"),
	}}
	want := aggregate.Export{Cluster: "a", Namespace: "shop", Name: "web", Created: created, Service: &aggregate.Service{
		Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.10",
		Ports:           []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 80, AppProtocol: "http"}, {Protocol: "UDP", Port: 53}},
		SessionAffinity: "ClientIP", SessionAffinityConfig: &aggregate.SessionAffinityConfig{TimeoutSeconds: 60},
		InternalTrafficPolicy: "Local", TrafficDistribution: "PreferClose",
	}}
	if got := exportOf("a", e, svc); !reflect.DeepEqual(got, want) {
		t.Errorf("exportOf =\n%+v\nwant\n%+v", got, want)
	}
	if got := exportOf("a", e, nil); got.Service != nil {
		t.Errorf("no Service: got %+v", got.Service)
	}
	svc.DeletionTimestamp = ptr.To(metav1.Now())
	if got := exportOf("a", e, svc); got.Service != nil {
		t.Errorf("a Service being deleted is read as %+v", got.Service)
	}
}

// A read's sum changes with every part of the read that the state
// keeps: an export or its Service written again, a slice of its
// endpoints replaced, the time vouched for it, its being over the limit.
func TestReadSum(t *testing.T) {
	type read struct {
		exports   []*mcsv1beta1.ServiceExport
		admitted  []aggregate.Export
		services  map[string]*corev1.Service
		endpoints map[aggregate.Key][]*discoveryv1.EndpointSlice
	}
	base := func() read {
		web := aggregate.Key{Namespace: "shop", Name: "web"}
		return read{
			exports:  []*mcsv1beta1.ServiceExport{exportAt("web", "u1", "10")},
			admitted: []aggregate.Export{{Namespace: "shop", Name: "web", Seen: time.Unix(100, 0)}},
			services: map[string]*corev1.Service{"web": {ObjectMeta: metav1.ObjectMeta{UID: "s1", ResourceVersion: "20"}}},
			endpoints: map[aggregate.Key][]*discoveryv1.EndpointSlice{
				web: {{ObjectMeta: metav1.ObjectMeta{UID: "e1", ResourceVersion: "30"}}}},
		}
	}
	sum := func(r read) uint64 {
		return readSum(r.exports, r.admitted, r.endpoints, func(e *mcsv1beta1.ServiceExport) *corev1.Service { return r.services[e.Name] })
	}
	want := sum(base())
	if want == 0 || sum(base()) != want {
		t.Fatalf("sums %d, %d of one read", want, sum(base()))
	}
	web := aggregate.Key{Namespace: "shop", Name: "web"}
	for name, change := range map[string]func(*read){
		"the export written":        func(r *read) { r.exports[0] = exportAt("web", "u1", "11") },
		"the Service written":       func(r *read) { r.services["web"].ResourceVersion = "21" },
		"the Service gone":          func(r *read) { delete(r.services, "web") },
		"a slice replaced":          func(r *read) { r.endpoints[web][0].ResourceVersion = "31" },
		"a slice more":              func(r *read) { r.endpoints[web] = append(r.endpoints[web], &discoveryv1.EndpointSlice{}) },
		"the time vouched for":      func(r *read) { r.admitted[0].Seen = time.Unix(101, 0) },
		"the export over the limit": func(r *read) { r.admitted[0].OverLimit = true },
		"another export": func(r *read) {
			r.exports = append(r.exports, exportAt("api", "u2", "1"))
			r.admitted = append(r.admitted, aggregate.Export{})
		},
	} {
		r := base()
		change(&r)
		if sum(r) == want {
			t.Errorf("%s: the sum is unchanged", name)
		}
	}
}
