package clusterset

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

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

// A Cluster whose slice namespace has not been read yet may reach the API
// server another ClusterSet holds: until it is known its set does not
// write there. cluster-c of the newer set other reaches cluster-b's API
// server, and its Namespace informer cannot list until the test lets it:
// meanwhile other must not write (it would delete prod's import); once
// it can, cluster-c is refused, and other's deletion leaves prod's import.
func TestControllerClusterSetUnknownDestinationNotWritten(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace, UID: "ns-b"}}
	if err := b.Tracker().Update(corev1.SchemeGroupVersion.WithResource("namespaces"), ns, ""); err != nil {
		t.Fatal(err)
	}
	// prod wants both its imports in cluster-b, so never deletes one:
	// a delete is another set's write. prod would write it back at
	// once, so that its import is there proves nothing.
	var deletes atomic.Int32
	b.MCS.PrependReactor("delete", "serviceimports", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes.Add(1)
		return false, nil, nil
	})
	// While unlisted, the slice namespace's informer (the only one listing
	// Namespaces by name) fails to list: failed, not blocked, as a blocked
	// call would hold every call of the fake. Set once prod wrote
	// cluster-b, so known its destination; cluster-c's connection is made
	// by other's first sync.
	var unlisted atomic.Bool
	b.PrependReactor("list", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l, ok := a.(k8stesting.ListAction)
		if ok && !l.GetListRestrictions().Fields.Empty() && unlisted.Load() {
			return true, nil, errors.New("namespaces not listed yet")
		}
		return false, nil, nil
	})
	prod := testfixture.ClusterSetObject("prod")
	prod.SetCreationTimestamp(metav1.NewTime(time.Unix(100, 0)))
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", map[string]string{"set": "prod"}, ""),
			testfixture.CAPICluster("cluster-b", map[string]string{"set": "prod"}, ""),
			testfixture.CAPICluster("cluster-c", map[string]string{"set": "other"}, ""), prod},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": b})
	intact := func(when string) {
		t.Helper()
		if n := deletes.Load(); n != 0 || !hasImport(e.ctx, b) {
			t.Fatalf("%s: %d ServiceImports deleted in cluster-b, prod's import there: %v", when, n, hasImport(e.ctx, b))
		}
	}
	// What cluster-c exports once read: other imports it.
	addExport(t, b, "shop", "db", "10.244.2.5")
	testfixture.Eventually(t, "prod's imports in cluster-b", func() bool {
		_, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "db", metav1.GetOptions{})
		return err == nil && hasImport(e.ctx, b)
	})

	unlisted.Store(true)
	other := testfixture.ClusterSetObject("other")
	other.SetCreationTimestamp(metav1.NewTime(time.Unix(200, 0)))
	sets := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team")
	if _, err := sets.Create(e.ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Status is written after a sync's writes: once other imports
	// cluster-c's export, it has read cluster-c, and the sync that did
	// has written it, or held its write back, or the write is running.
	testfixture.Eventually(t, "other read cluster-c and wrote it or held it back", func() bool {
		st := clusterSetStatusOf(e.ctx, t, e, "other")
		for _, m := range st.Clusters {
			if m.Name == "cluster-c" && st.Imports == 1 {
				return strings.Contains(m.Message, "slice namespace") ||
					!strings.Contains(m.Message, "not read yet") && !strings.Contains(m.Message, "writing")
			}
		}
		return false
	})
	intact("other read cluster-c, its slice namespace not")

	unlisted.Store(false)
	testfixture.Eventually(t, "cluster-c of other refused as SharedAPIServer", func() bool {
		for _, m := range clusterSetStatusOf(e.ctx, t, e, "other").Clusters {
			if m.Name == "cluster-c" && m.Reason == xccv1alpha1.ReasonSharedAPIServer {
				return true
			}
		}
		return false
	})
	intact("cluster-c refused")
	if err := sets.Delete(e.ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "other gone", func() bool {
		_, err := sets.Get(e.ctx, "other", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	e.rec.Add("dev-team/prod")
	testfixture.Eventually(t, "prod says Ready", func() bool {
		cond := meta.FindStatusCondition(clusterSetStatusOf(e.ctx, t, e, "prod").Conditions, xccv1alpha1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue
	})
	intact("other deleted")
}
