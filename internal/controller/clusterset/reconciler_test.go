package clusterset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A ClusterSet of two members, one exporting shop/web: both get its
// ServiceImport, a derived Service and the endpoints of the exporter, and
// the contract slices of its DNS name; the export says Valid. Unexport
// removes the import from both; a deleted ClusterSet leaves nothing.
func TestControllerClusterSet(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	e := twoMembers(t, a, b)
	ctx := e.ctx
	imported := func(m testfixture.Member) bool {
		si, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && si.Spec.Type == mcsv1beta1.ClusterSetIP && len(si.Status.Clusters) == 1 && si.Status.Clusters[0].Cluster == "cluster-a"
	}
	testfixture.Eventually(t, "ServiceImport shop/web in both members", func() bool { return imported(a) && imported(b) })
	// Ready once its ClusterSetIP is in spec.ips (the second round of a
	// write), and the controller's EndpointSlices are there.
	usable := func(m testfixture.Member) bool {
		si, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(si.Spec.IPs) == 1 && si.Status.EndpointSliceObjects == mcsv1beta1.EndpointSliceObjectsPresent &&
			meta.IsStatusConditionTrue(si.Status.Conditions, string(mcsv1beta1.ServiceImportConditionReady))
	}
	testfixture.Eventually(t, "ServiceImport shop/web Ready and its EndpointSlices Present in both members", func() bool { return usable(a) && usable(b) })

	derived := objects.DerivedServiceName("shop", "web")
	svc, err := b.CoreV1().Services("shop").Get(ctx, derived, metav1.GetOptions{})
	if err != nil || svc.Spec.Selector != nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 {
		t.Errorf("derived Service in cluster-b: %+v, %v", svc, err)
	}
	testfixture.Eventually(t, "cluster-a's endpoints in cluster-b", func() bool {
		list, err := b.DiscoveryV1().EndpointSlices("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range list.Items {
			if s.Labels[discoveryv1.LabelServiceName] == derived && s.Labels[mcsv1beta1.LabelSourceCluster] == "cluster-a" &&
				len(s.Endpoints) == 1 && s.Endpoints[0].Addresses[0] == "10.244.1.5" {
				return true
			}
		}
		return false
	})
	testfixture.Eventually(t, "the clusterset slices of the name in cluster-b", func() bool {
		return len(clusterSetSlices(ctx, t, b)) > 0
	})
	testfixture.Eventually(t, "export status Valid", func() bool {
		ex, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(ex.Status.Conditions, func(c metav1.Condition) bool {
			return c.Type == "Valid" && c.Status == metav1.ConditionTrue
		})
	})
	testfixture.Eventually(t, "ClusterSet status of 2 members and 1 import", func() bool {
		st := clusterSetStatusOf(ctx, t, e, "prod")
		return st.Members == 2 && st.Imports == 1 && st.Exports == 1
	})

	// Exported labels and annotations reach the import in every member;
	// a reserved one is left out and named in the export's Valid message.
	ex, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ex.Spec.ExportedLabels = map[string]string{"team": "shop", objects.LabelManagedBy: "someone"}
	ex.Spec.ExportedAnnotations = map[string]string{"note": "hi"}
	if _, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Update(ctx, ex, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "the exported label and annotation on cluster-b's ServiceImport, not the reserved one", func() bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && si.Labels["team"] == "shop" && si.Annotations["note"] == "hi" && si.Labels[objects.LabelManagedBy] == objects.ManagedByValue
	})
	testfixture.Eventually(t, "the reserved label named in the export's Valid message", func() bool {
		ex, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(ctx, "web", metav1.GetOptions{})
		c := meta.FindStatusCondition(ex.Status.Conditions, "Valid")
		return err == nil && c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, objects.LabelManagedBy)
	})

	// Unexport: the import goes everywhere.
	if err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := func(m testfixture.Member) bool {
		_, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(ctx, "web", metav1.GetOptions{})
		_, svcErr := m.CoreV1().Services("shop").Get(ctx, derived, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && apierrors.IsNotFound(svcErr) && len(clusterSetSlices(ctx, t, m)) == 0
	}
	testfixture.Eventually(t, "the import gone from both after unexport", func() bool { return gone(a) && gone(b) })

	// Export again, then delete the ClusterSet: nothing of it is left.
	if _, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Create(ctx, &mcsv1beta1.ServiceExport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "imported again", func() bool { return imported(b) })
	if err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Delete(ctx, "prod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "nothing left once the ClusterSet is deleted", func() bool { return gone(a) && gone(b) })
}

func clusterSetSlices(ctx context.Context, t *testing.T, m testfixture.Member) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := m.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelRecord + "=" + string(contract.KindClusterSet)})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func clusterSetStatusOf(ctx context.Context, t *testing.T, e *testEnv, name string) xccv1alpha1.ClusterSetStatus {
	t.Helper()
	u, err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := decode(u)
	if err != nil {
		t.Fatal(err)
	}
	return cs.Status
}

// A member's ClusterProperty cluster.clusterset.k8s.io is its cluster id:
// the import lists it, and a second member claiming the same id, or one
// that is no DNS label, takes no part and says why.
func TestControllerClusterSetIDs(t *testing.T) {
	a, b, c := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(true, "10.244.2.5"), testfixture.NewMember(true, "10.244.3.5")
	a.ID, b.ID, c.ID = ptr.To("east"), ptr.To("east"), ptr.To("West.1")
	sel := map[string]string{"set": "prod"}
	clusters := make([]runtime.Object, 0, 4)
	for i, name := range []string{"cluster-a", "cluster-b", "cluster-c"} {
		u := testfixture.CAPICluster(name, sel, "")
		u.SetCreationTimestamp(metav1.NewTime(time.Unix(int64(10*(i+1)), 0)))
		clusters = append(clusters, u)
	}
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		append(clusters, testfixture.ClusterSetObject("prod")),
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": c})
	testfixture.Eventually(t, "the import lists cluster-a by its property", func() bool {
		si, err := a.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil && len(si.Status.Clusters) == 1 && si.Status.Clusters[0].Cluster == "east"
	})
	testfixture.Eventually(t, "cluster-b and cluster-c refused with their reasons", func() bool {
		reasons := map[string]xccv1alpha1.MemberReason{}
		for _, m := range clusterSetStatusOf(e.ctx, t, e, "prod").Clusters {
			reasons[m.Name] = m.Reason
		}
		return reasons["cluster-a"] == xccv1alpha1.ReasonMember && reasons["cluster-b"] == xccv1alpha1.ReasonClusterIDConflict &&
			reasons["cluster-c"] == xccv1alpha1.ReasonInvalidClusterID
	})
	if _, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused member got the import: %v", err)
	}
}

// A member whose API server stops answering keeps its exports in the
// other members (its last known ones), and the ClusterSet says it is
// away; back up, the ClusterSet is Ready again.
func TestControllerClusterSetUnreachableMemberKept(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	d := testfixture.DownableMember(a)
	e := twoMembers(t, a, b, func(c *testConfig) { c.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	imported := func() bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil && len(si.Status.Clusters) == 1
	}
	ready := func(reason string) func() bool {
		return func() bool {
			c := meta.FindStatusCondition(clusterSetStatusOf(e.ctx, t, e, "prod").Conditions, xccv1alpha1.ConditionReady)
			return c != nil && c.Reason == reason
		}
	}
	testfixture.Eventually(t, "imported into cluster-b", imported)
	testfixture.Eventually(t, "the ClusterSet Ready", ready(ReasonWritten))

	d.Down()
	testfixture.Eventually(t, "the ClusterSet says cluster-a is away", ready(ReasonUnreachable))
	for range 5 {
		e.rec.Add("dev-team/prod")
		time.Sleep(50 * time.Millisecond)
		if !imported() {
			t.Fatal("cluster-a's export left cluster-b while cluster-a was unreachable")
		}
	}
	d.Up()
	testfixture.Eventually(t, "the ClusterSet Ready again", ready(ReasonWritten))
}

// A member's valid exports past --max-exports-per-member, the newest,
// are refused with TooManyExports and their endpoints not read; its
// older ones and the other members' are imported.
func TestControllerClusterSetExportLimit(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	newer := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api",
		CreationTimestamp: metav1.NewTime(time.Unix(200, 0))}}
	if err := a.MCS.Tracker().Add(newer); err != nil {
		t.Fatal(err)
	}
	api := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.11",
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	if err := a.Tracker().Add(api); err != nil {
		t.Fatal(err)
	}
	e := twoMembers(t, a, b, func(c *testConfig) { c.MaxExportsPerMember = 1 })
	testfixture.Eventually(t, "the newer export refused with TooManyExports", func() bool {
		ex, err := a.MCS.MulticlusterV1beta1().ServiceExports("shop").Get(e.ctx, "api", metav1.GetOptions{})
		c := meta.FindStatusCondition(ex.Status.Conditions, "Valid")
		return err == nil && c != nil && c.Status == metav1.ConditionFalse && c.Reason == "TooManyExports"
	})
	testfixture.Eventually(t, "the older one imported", func() bool {
		_, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil
	})
	if informers, exports := e.workloads.ExportReads(); informers != 1 || exports != 1 {
		t.Errorf("endpoints of %d exports read by %d informers, want 1 by 1: a refused export's endpoints are not read", exports, informers)
	}
}

// Exports without a Service cost nothing: many of them, older than a
// valid export in another namespace (here three, the limit two), do not
// make it TooManyExports; they say NoService.
func TestControllerClusterSetExportsWithoutServiceCostNothing(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	for i := range 3 {
		junk := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "junk", Name: fmt.Sprintf("gone-%d", i),
			CreationTimestamp: metav1.NewTime(time.Unix(int64(10+i), 0))}}
		if err := a.MCS.Tracker().Add(junk); err != nil {
			t.Fatal(err)
		}
	}
	e := twoMembers(t, a, b, func(c *testConfig) { c.MaxExportsPerMember = 2 })
	valid := func(ns, name, reason string) func() bool {
		return func() bool {
			ex, err := a.MCS.MulticlusterV1beta1().ServiceExports(ns).Get(e.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			c := meta.FindStatusCondition(ex.Status.Conditions, "Valid")
			return c != nil && c.Reason == reason
		}
	}
	testfixture.Eventually(t, "the valid export imported", func() bool {
		_, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil && valid("shop", "web", "Valid")()
	})
	for i := range 3 {
		testfixture.Eventually(t, "an export without its Service NoService", valid("junk", fmt.Sprintf("gone-%d", i), "NoService"))
	}
}
