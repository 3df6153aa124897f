package workload

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// A member may write any number of conditions of 32 KiB messages into a
// ServiceExport's status (a hostile API server more): the cache keeps
// the controller's own types and the first others up to
// MaxCachedConditions, each cut to documented sizes.
func TestExportForCacheConditionsBounded(t *testing.T) {
	var conds []metav1.Condition
	for i := range 40 {
		conds = append(conds, metav1.Condition{Type: "Other" + strings.Repeat("t", i), Status: metav1.ConditionTrue,
			Reason: strings.Repeat("R", 4096), Message: strings.Repeat("m", 32<<10)})
	}
	for _, own := range ownConditions {
		conds = append(conds, metav1.Condition{Type: string(own), Status: metav1.ConditionTrue, Reason: "Mine", Message: strings.Repeat("é", 20<<10)})
	}
	in := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Status: mcsv1beta1.ServiceExportStatus{Conditions: conds}}
	got, _ := exportForCache(in)
	e := got.(*mcsv1beta1.ServiceExport)
	kept := e.Status.Conditions
	if len(kept) != MaxCachedConditions {
		t.Fatalf("kept %d conditions, want %d", len(kept), MaxCachedConditions)
	}
	for _, own := range ownConditions {
		if c := findCondition(kept, string(own)); c == nil || c.Reason != "Mine" {
			t.Errorf("the controller's own condition %s not kept: %+v", own, c)
		}
	}
	for _, c := range kept {
		if len(c.Message) > aggregate.MaxConditionMessageBytes || len(c.Reason) > maxConditionReasonBytes || len(c.Type) > maxConditionTypeBytes {
			t.Errorf("condition %.20s... kept with a message of %d bytes, a reason of %d, a type of %d", c.Type, len(c.Message), len(c.Reason), len(c.Type))
		}
		if !strings.HasSuffix(c.Message, aggregate.CutMark) {
			t.Errorf("a cut message of %s does not say so: ...%s", c.Type, c.Message[len(c.Message)-10:])
		}
	}
	if again, _ := exportForCache(e); !reflect.DeepEqual(again, e) {
		t.Error("not idempotent")
	}
}

// ownConditions are the controller's own condition types of an export.
var ownConditions = []aggregate.ConditionType{aggregate.ConditionValid, aggregate.ConditionConflict, aggregate.ConditionReady,
	aggregate.ConditionCrossNetwork}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

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
