package clusterset

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A member cannot win precedence by claiming an old creationTimestamp:
// cluster-b exports shop/web, as a Headless Service, after the controller
// imported cluster-a's ClusterSetIP export, with a creation time of 1970.
// The import stays cluster-a's (ClusterSetIP) and cluster-b's export says
// Conflict naming cluster-a; across a restart too, from the time the
// controller's state keeps of when it first saw the export.
func TestControllerClusterSetForgedAgeLoses(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "imported into cluster-b", func() bool { return hasImport(e.ctx, b) })

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	if _, err := b.CoreV1().Services("shop").Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	forged := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
		CreationTimestamp: metav1.NewTime(time.Unix(0, 0))}}
	if _, err := b.MCS.MulticlusterV1beta1().ServiceExports("shop").Create(e.ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		testfixture.Eventually(t, when+": cluster-b's export in Conflict", func() bool {
			return conflictOf(e.ctx, b) != nil
		})
		c := conflictOf(e.ctx, b)
		if !strings.Contains(c.Message, "of cluster cluster-a") {
			t.Errorf("%s: cluster-b's Conflict %q: want the import to use cluster-a's export", when, c.Message)
		}
		for _, m := range []testfixture.Member{a, b} {
			si, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
			if err != nil || si.Spec.Type != mcsv1beta1.ClusterSetIP {
				t.Errorf("%s: ServiceImport %v, %v: want cluster-a's type, ClusterSetIP", when, si, err)
			}
		}
	}
	check("running")
	e.restart(nil)
	for range 5 {
		e.rec.Add("dev-team/prod")
		time.Sleep(50 * time.Millisecond)
	}
	check("after a restart")
}

// conflictOf is the Conflict condition of m's export shop/web when True.
func conflictOf(ctx context.Context, m testfixture.Member) *metav1.Condition {
	ex, err := m.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	c := meta.FindStatusCondition(ex.Status.Conditions, string(mcsv1beta1.ServiceExportConditionConflict))
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}
