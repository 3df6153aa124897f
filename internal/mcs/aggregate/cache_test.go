package aggregate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// The export informer keeps identity, creation time, conditions and the
// exported labels and annotations only, idempotently.
func TestExportForCache(t *testing.T) {
	created := metav1.NewTime(time.Unix(100, 0))
	cond := []metav1.Condition{{Type: "Valid", Status: metav1.ConditionTrue, Reason: "Valid"}}
	in := &mcsv1beta1.ServiceExport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u", ResourceVersion: "4", Generation: 2,
			CreationTimestamp: created, Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec:   mcsv1beta1.ServiceExportSpec{ExportedLabels: map[string]string{"l": "v"}},
		Status: mcsv1beta1.ServiceExportStatus{Conditions: cond},
	}
	want := &mcsv1beta1.ServiceExport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u", ResourceVersion: "4", Generation: 2, CreationTimestamp: created},
		Spec:       mcsv1beta1.ServiceExportSpec{ExportedLabels: map[string]string{"l": "v"}},
		Status:     mcsv1beta1.ServiceExportStatus{Conditions: cond},
	}
	got, err := ForCache(in)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ForCache = %+v, %v\nwant %+v", got, err, want)
	}
	if again, _ := ForCache(got); !reflect.DeepEqual(again, want) {
		t.Errorf("not idempotent: %+v", again)
	}
}

// A tenant may write a megabyte of exported annotations: the cache keeps
// twice what an import may carry, and says how much it cut.
func TestExportForCacheBounded(t *testing.T) {
	big := map[string]string{}
	for i := range 1000 {
		big[fmt.Sprintf("k%04d", i)] = strings.Repeat("x", 1000)
	}
	in := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: mcsv1beta1.ServiceExportSpec{ExportedAnnotations: big}}
	got, _ := ForCache(in)
	e := got.(*mcsv1beta1.ServiceExport)
	kept := len(e.Spec.ExportedAnnotations)
	if kept == 0 || kept > 2*MaxExportedEntries || ExportedCut(e) != 1000-kept {
		t.Fatalf("kept %d entries, cut %d: want at most %d kept and the rest counted", kept, ExportedCut(e), 2*MaxExportedEntries)
	}
	if again, _ := ForCache(e); !reflect.DeepEqual(again, e) {
		t.Errorf("not idempotent: cut %d", ExportedCut(again.(*mcsv1beta1.ServiceExport)))
	}
}

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
	got, _ := ForCache(in)
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
		if len(c.Message) > MaxConditionMessageBytes || len(c.Reason) > maxConditionReasonBytes || len(c.Type) > maxConditionTypeBytes {
			t.Errorf("condition %.20s... kept with a message of %d bytes, a reason of %d, a type of %d", c.Type, len(c.Message), len(c.Reason), len(c.Type))
		}
		if !strings.HasSuffix(c.Message, CutMark) {
			t.Errorf("a cut message of %s does not say so: ...%s", c.Type, c.Message[len(c.Message)-10:])
		}
	}
	if again, _ := ForCache(e); !reflect.DeepEqual(again, e) {
		t.Error("not idempotent")
	}
}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// ownConditions are the controller's own condition types of an export.
var ownConditions = []ConditionType{ConditionValid, ConditionConflict, ConditionReady, ConditionCrossNetwork}
