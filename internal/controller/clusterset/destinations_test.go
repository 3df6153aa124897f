package clusterset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// Two ClusterSets whose Clusters reach one API server (cluster-b of prod
// and cluster-c of the newer other are two kubeconfigs of one member):
// the older set holds it, the newer one's Cluster is SharedAPIServer, and
// nothing the newer set does, its deletion included, removes the older
// set's import there.
func TestControllerClusterSetsSharingAnAPIServer(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace, UID: "ns-b"}}
	if err := b.Tracker().Update(corev1.SchemeGroupVersion.WithResource("namespaces"), ns, ""); err != nil {
		t.Fatal(err)
	}
	prod, other := testfixture.ClusterSetObject("prod"), testfixture.ClusterSetObject("other")
	prod.SetCreationTimestamp(metav1.NewTime(time.Unix(100, 0)))
	other.SetCreationTimestamp(metav1.NewTime(time.Unix(200, 0)))
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", map[string]string{"set": "prod"}, ""),
			testfixture.CAPICluster("cluster-b", map[string]string{"set": "prod"}, ""),
			testfixture.CAPICluster("cluster-c", map[string]string{"set": "other"}, ""), prod, other},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": b})
	testfixture.Eventually(t, "prod's import in cluster-b", func() bool { return hasImport(e.ctx, b) })
	holds := func(what string) {
		t.Helper()
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			e.rec.Add("dev-team/other")
			if !hasImport(e.ctx, b) {
				t.Fatalf("%s: prod's import in cluster-b is gone", what)
			}
		}
	}
	holds("other synced")
	testfixture.Eventually(t, "cluster-c of other refused as SharedAPIServer", func() bool {
		for _, m := range clusterSetStatusOf(e.ctx, t, e, "other").Clusters {
			if m.Name == "cluster-c" && m.Reason == xccv1alpha1.ReasonSharedAPIServer {
				return true
			}
		}
		return false
	})
	if err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Delete(e.ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	holds("other deleted")
}
