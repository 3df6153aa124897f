package testfixture

import (
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A member's fakes keep resourceVersions and UIDs as an API server does:
// each write gets a newer resourceVersion, an update keeps the UID, and
// an update sent from an older copy is refused.
func TestMemberVersionsWrites(t *testing.T) {
	m := NewMember(true, "10.244.1.5")
	exports := m.MCS.MulticlusterV1beta1().ServiceExports("shop")
	old, err := exports.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if old.UID == "" || old.ResourceVersion == "" {
		t.Fatalf("export as created: uid %q, resourceVersion %q; want both set", old.UID, old.ResourceVersion)
	}
	cur := old.DeepCopy()
	cur.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	got, err := exports.UpdateStatus(t.Context(), cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was, _ := strconv.Atoi(old.ResourceVersion)
	now, _ := strconv.Atoi(got.ResourceVersion)
	if now <= was || got.UID != old.UID {
		t.Errorf("after the update: resourceVersion %s (was %s), uid %s (was %s); want newer, same", got.ResourceVersion, old.ResourceVersion, got.UID, old.UID)
	}
	if _, err := exports.UpdateStatus(t.Context(), old, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update from the older copy: %v; want a conflict", err)
	}
	// The core fake shares the counter: one API server.
	svc, err := m.CoreV1().Services("shop").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.ResourceVersion = ""
	svc.UID = ""
	up, err := m.CoreV1().Services("shop").Update(t.Context(), svc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(up.ResourceVersion); n <= now || up.UID == "" {
		t.Errorf("unconditional update of the Service: resourceVersion %s, uid %q; want newer than %d and the stored uid", up.ResourceVersion, up.UID, now)
	}
}
