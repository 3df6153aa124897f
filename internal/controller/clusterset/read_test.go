package clusterset

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
