package gatewaydns

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
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
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", map[string]string{"team": "a"}, ""), testfixture.CAPICluster("cluster-b", map[string]string{"team": "b"}, ""),
			gatewayDNSObject(t, gdA), gatewayDNSObject(t, gdB)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-b": workloadB})

	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.1"}, "cluster-a", "cluster-b")
	for gd, cluster := range map[string]string{"gw-a": "cluster-a", "gw-b": "cluster-b"} {
		st := e.eventuallyStatus(gd, func(s v1alpha1.GatewayDNSStatus) bool {
			return reasonsOf(s) == cluster+"="+desired.ReasonAddressConflict
		})
		if c := st.Clusters[0]; !c.Ready || !strings.Contains(c.Message, "10.0.0.1 also claimed by cluster-") {
			t.Errorf("%s: %+v, want Ready and the shared address named", gd, c)
		}
	}

	// Let the syncs that the status writes set off run out, so that only
	// the Service change (which concerns gw-b alone) can sync gw-a again.
	time.Sleep(300 * time.Millisecond)
	svc := testfixture.GatewayService(testfixture.IPs("10.0.0.2")...)
	if _, err := workloadB.CoreV1().Services(svc.Namespace).UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyStatus("gw-b", func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == "cluster-b="+desired.ReasonPublished })
	e.eventuallyStatus("gw-a", func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == "cluster-a="+desired.ReasonPublished })
}

// A tenant that claims another namespace's address (here its Cluster's
// controlPlaneEndpoint is dev-team's gateway address) learns nothing and
// changes nothing: both clusters stay Published, neither status names the
// other, and dev-team's records stay as they were.
func TestControllerAddressClaimsStayInsideANamespace(t *testing.T) {
	const other = "other-team"
	gdA := testfixture.GatewayDNS("gw")
	gdB := testfixture.GatewayDNS("gw")
	gdB.Namespace = other
	clusterB := testfixture.CAPICluster("cluster-x", map[string]string{"hasContour": "true"}, "10.0.0.1")
	clusterB.SetNamespace(other)
	secretB := testfixture.KubeconfigSecret("cluster-x", "cluster-x")
	secretB.Namespace = other
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), secretB},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", map[string]string{"hasContour": "true"}, ""), clusterB,
			gatewayDNSObject(t, gdA), gatewayDNSObject(t, gdB)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-x": fakeWorkload(true, "10.0.0.9")})

	e.eventually([]string{gwA + " IPv4 10.0.0.1"}, "cluster-a")
	statusOf := func(namespace string) v1alpha1.GatewayDNSStatus {
		u, err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace(namespace).Get(e.ctx, "gw", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gd, err := toGatewayDNS(u)
		if err != nil {
			t.Fatal(err)
		}
		return gd.Status
	}
	var stA, stB v1alpha1.GatewayDNSStatus
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		stA, stB = statusOf("dev-team"), statusOf(other)
		return reasonsOf(stA) == "cluster-a="+desired.ReasonPublished && reasonsOf(stB) == "cluster-x="+desired.ReasonPublished, nil
	})
	if err != nil {
		t.Fatalf("statuses %+v and %+v, want both Published", stA.Clusters, stB.Clusters)
	}
	// Let any sync the other namespace could set off run out.
	time.Sleep(300 * time.Millisecond)
	stA, stB = statusOf("dev-team"), statusOf(other)
	for _, st := range []v1alpha1.GatewayDNSStatus{stA, stB} {
		for _, c := range st.Clusters {
			if c.Reason != desired.ReasonPublished || strings.Contains(c.Message, "claimed") || strings.Contains(c.Message, "cluster-") {
				t.Errorf("%s: %s %q, want Published and nothing of the other namespace", c.Name, c.Reason, c.Message)
			}
		}
	}
	e.eventually([]string{gwA + " IPv4 10.0.0.1"}, "cluster-a")
}
