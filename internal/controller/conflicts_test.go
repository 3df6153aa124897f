package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/internal/fixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// Two GatewayDNS whose clusters report one load-balancer address: both
// clusters say AddressConflict and still publish; when one moves away,
// the other GatewayDNS (whose own inputs did not change) is synced again
// and says Published.
func TestControllerAddressConflictAcrossGatewayDNS(t *testing.T) {
	gdA, gdB := testfixture.GatewayDNS("gw-a"), testfixture.GatewayDNS("gw-b")
	gdA.Spec.ClusterSelector.MatchLabels = map[string]string{"team": "a"}
	gdB.Spec.ClusterSelector.MatchLabels = map[string]string{"team": "b"}
	workloadB := fakeWorkload(true, "10.0.0.1")
	e := newTestEnv(t,
		[]runtime.Object{kubeconfigSecret("cluster-a", "cluster-a"), kubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{capiCluster("cluster-a", map[string]string{"team": "a"}, ""), capiCluster("cluster-b", map[string]string{"team": "b"}, ""),
			gatewayDNSObject(t, gdA), gatewayDNSObject(t, gdB)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-b": workloadB})

	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.1"}, "cluster-a", "cluster-b")
	for gd, cluster := range map[string]string{"gw-a": "cluster-a", "gw-b": "cluster-b"} {
		st := e.eventuallyStatus(gd, func(s v1alpha1.GatewayDNSStatus) bool {
			return reasonsOf(s) == cluster+"="+desired.ReasonAddressConflict
		})
		if c := st.Clusters[0]; !c.Ready || !strings.Contains(c.Message, "10.0.0.1 also claimed by dev-team/") {
			t.Errorf("%s: %+v, want Ready and the shared address named", gd, c)
		}
	}

	// Let the syncs that the status writes set off run out, so that only
	// the Service change (which concerns gw-b alone) can sync gw-a again.
	time.Sleep(300 * time.Millisecond)
	svc := fixture.LBService(fixture.IPs("10.0.0.2")...)
	if _, err := workloadB.CoreV1().Services(svc.Namespace).UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyStatus("gw-b", func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == "cluster-b="+desired.ReasonPublished })
	e.eventuallyStatus("gw-a", func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == "cluster-a="+desired.ReasonPublished })
}
