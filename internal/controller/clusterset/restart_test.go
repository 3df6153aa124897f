package clusterset

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	k8stesting "k8s.io/client-go/testing"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// twoMembers is a ClusterSet prod of cluster-a (a) and cluster-b (b).
func twoMembers(t *testing.T, a, b testfixture.Member, options ...func(*testConfig)) *testEnv {
	t.Helper()
	sel := map[string]string{"set": "prod"}
	return newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", sel, ""), testfixture.CAPICluster("cluster-b", sel, ""), testfixture.ClusterSetObject("prod")},
		nil, map[string]workload.Client{"ka": a, "kb": b},
		options...)
}

// hasImport reports whether m holds the ServiceImport shop/web of
// cluster-a's export, and cluster-a's endpoint behind it.
func hasImport(ctx context.Context, m testfixture.Member) bool {
	si, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(si.Status.Clusters) != 1 || si.Status.Clusters[0].Cluster != "cluster-a" {
		return false
	}
	list, err := m.DiscoveryV1().EndpointSlices("shop").List(ctx, metav1.ListOptions{
		LabelSelector: mcsv1beta1.LabelSourceCluster + "=cluster-a"})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.Items, func(s discoveryv1.EndpointSlice) bool {
		return len(s.Endpoints) == 1 && s.Endpoints[0].Addresses[0] == "10.244.1.5"
	})
}

// holdsNothing reports whether m holds no object of the ClusterSet: no
// ServiceImport, derived Service, imported EndpointSlice or contract slice.
func holdsNothing(ctx context.Context, t *testing.T, m testfixture.Member) bool {
	_, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(ctx, "web", metav1.GetOptions{})
	_, svcErr := m.CoreV1().Services("shop").Get(ctx, objects.DerivedServiceName("shop", "web"), metav1.GetOptions{})
	imported, listErr := m.DiscoveryV1().EndpointSlices("shop").List(ctx, metav1.ListOptions{LabelSelector: mcsv1beta1.LabelSourceCluster})
	return apierrors.IsNotFound(err) && apierrors.IsNotFound(svcErr) && listErr == nil && len(imported.Items) == 0 &&
		len(clusterSetSlices(ctx, t, m)) == 0
}

// clusterSet reads the ClusterSet name of dev-team.
func (e *testEnv) clusterSet(name string) *xccv1alpha1.ClusterSet {
	e.t.Helper()
	u, err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Get(e.base, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	cs, err := decode(u)
	if err != nil {
		e.t.Fatal(err)
	}
	return cs
}

// markSetDeleting sets the ClusterSet's deletionTimestamp, as the API
// server does on delete while a finalizer holds it.
func (e *testEnv) markSetDeleting(name string) {
	e.t.Helper()
	res := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team")
	u, err := res.Get(e.base, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	now := metav1.Now()
	u.SetDeletionTimestamp(&now)
	if _, err := res.Update(e.base, u, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// keptSet is what the controller's state keeps of dev-team/prod; nil:
// nothing.
func (e *testEnv) keptSet() *state.ClusterSet {
	e.t.Helper()
	kept, err := (&state.ConfigMaps{Client: e.mgmt, Namespace: stateNamespace}).LoadClusterSet(e.base, "dev-team/prod")
	if err != nil {
		e.t.Fatal(err)
	}
	return kept
}

// writtenIn is the cluster id the Cluster key holds objects of kept
// under, "" when it holds none.
func writtenIn(kept *state.ClusterSet, key string) string {
	if c := kept.Clusters[key]; c.Written {
		return c.WrittenID
	}
	return ""
}

// keptBoth waits until the state keeps both members written and
// cluster-a's export.
func (e *testEnv) keptBoth() {
	e.t.Helper()
	testfixture.Eventually(e.t, "the state keeps both members and cluster-a's export", func() bool {
		kept := e.keptSet()
		return kept != nil && writtenIn(kept, "dev-team/cluster-a") == "cluster-a" && writtenIn(kept, "dev-team/cluster-b") == "cluster-b" &&
			len(kept.Members["cluster-a"].Exports) == 1 && len(kept.Members["cluster-a"].Exports[0].Slices) == 1
	})
}

// A ClusterSet deleted while no controller ran, being deleted (its
// finalizer holds it) or gone altogether (the finalizer taken off by
// hand), has its objects removed from both members by the next
// controller, which knows where they are from its state alone; then the
// finalizer and the state go.
func TestControllerClusterSetRemovedAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete func(*testEnv)
	}{
		{"being deleted", func(e *testEnv) { e.markSetDeleting("prod") }},
		{"gone", func(e *testEnv) {
			if err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Delete(e.base, "prod", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
			e := twoMembers(t, a, b)
			testfixture.Eventually(t, "imported into both", func() bool { return hasImport(e.ctx, a) && hasImport(e.ctx, b) })
			testfixture.Eventually(t, "the ClusterSet holds the finalizer", func() bool { return hasFinalizer(e.clusterSet("prod")) })
			e.keptBoth()

			e.restart(func() { tc.delete(e) })
			testfixture.Eventually(t, "nothing of the ClusterSet left in either member", func() bool {
				return holdsNothing(e.ctx, t, a) && holdsNothing(e.ctx, t, b)
			})
			if tc.name == "being deleted" {
				testfixture.Eventually(t, "the finalizer removed", func() bool { return !hasFinalizer(e.clusterSet("prod")) })
			}
			testfixture.Eventually(t, "the state forgotten", func() bool { return e.keptSet() == nil })
		})
	}
}

// A member unreachable when the controller starts keeps its imports in
// the other members, from the last exports the state keeps, by the rule
// of an outage while the controller runs; back up, it is read again.
func TestControllerClusterSetUnreachableAcrossRestart(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	d := testfixture.DownableMember(a)
	e := twoMembers(t, a, b, func(c *testConfig) { c.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	testfixture.Eventually(t, "imported into cluster-b", func() bool { return hasImport(e.ctx, b) })
	e.keptBoth()

	e.restart(d.Down)
	testfixture.Eventually(t, "the ClusterSet says cluster-a is away", func() bool {
		c := meta.FindStatusCondition(clusterSetStatusOf(e.ctx, t, e, "prod").Conditions, xccv1alpha1.ConditionReady)
		return c != nil && c.Reason == ReasonUnreachable
	})
	for range 5 {
		e.rec.Add("dev-team/prod")
		time.Sleep(50 * time.Millisecond)
		if !hasImport(e.ctx, b) {
			t.Fatal("cluster-a's export left cluster-b after a restart while cluster-a was unreachable")
		}
	}
	d.Up()
	testfixture.Eventually(t, "the ClusterSet Ready again", func() bool {
		c := meta.FindStatusCondition(clusterSetStatusOf(e.ctx, t, e, "prod").Conditions, xccv1alpha1.ConditionReady)
		return c != nil && c.Reason == ReasonWritten
	})
	if !hasImport(e.ctx, b) {
		t.Error("cluster-a's export gone from cluster-b once it is back")
	}
}

// A member that left while no controller ran, unselected or its Cluster
// deleted, has its imports removed by the next controller; the member
// that stays keeps them. One whose kubeconfig Secret went with its
// Cluster cannot be reached and is not waited for: it is forgotten.
func TestControllerClusterSetMemberLeftWhileDown(t *testing.T) {
	clusters := func(e *testEnv) dynamic.ResourceInterface { return e.dyn.Resource(clusterGVR).Namespace("dev-team") }
	for _, tc := range []struct {
		name      string
		leave     func(*testEnv)
		unreached bool
	}{
		{name: "unselected", leave: func(e *testEnv) {
			u, err := clusters(e).Get(e.base, "cluster-b", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			u.SetLabels(nil)
			if _, err := clusters(e).Update(e.base, u, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "Cluster deleted", leave: func(e *testEnv) {
			if err := clusters(e).Delete(e.base, "cluster-b", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "Cluster and its Secret deleted", unreached: true, leave: func(e *testEnv) {
			if err := clusters(e).Delete(e.base, "cluster-b", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := e.mgmt.CoreV1().Secrets("dev-team").Delete(e.base, "cluster-b-kubeconfig", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
			e := twoMembers(t, a, b)
			testfixture.Eventually(t, "imported into both", func() bool { return hasImport(e.ctx, a) && hasImport(e.ctx, b) })
			e.keptBoth()

			e.restart(func() { tc.leave(e) })
			if !tc.unreached {
				testfixture.Eventually(t, "nothing of the ClusterSet left in cluster-b", func() bool { return holdsNothing(e.ctx, t, b) })
			}
			if !hasImport(e.ctx, a) {
				t.Error("cluster-a lost its import")
			}
			testfixture.Eventually(t, "the state keeps cluster-a alone", func() bool {
				kept := e.keptSet()
				return kept != nil && writtenIn(kept, "dev-team/cluster-a") != "" && writtenIn(kept, "dev-team/cluster-b") == ""
			})
		})
	}
}

// A member unreachable while its ClusterSet is deleted keeps the
// finalizer, and status says which member still holds the objects; the
// other member is cleaned meanwhile. Back up, it is cleaned and the
// finalizer goes.
func TestControllerClusterSetDeletionWaitsForMember(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	d := testfixture.NewDownable(b.Clientset)
	b.MCS.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		if d.IsDown() {
			return true, nil, testfixture.ErrServerDown
		}
		return false, nil, nil
	})
	e := twoMembers(t, a, b, func(c *testConfig) { c.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	testfixture.Eventually(t, "imported into both", func() bool { return hasImport(e.ctx, a) && hasImport(e.ctx, b) })
	testfixture.Eventually(t, "the ClusterSet holds the finalizer", func() bool { return hasFinalizer(e.clusterSet("prod")) })

	d.Down()
	e.markSetDeleting("prod")
	testfixture.Eventually(t, "nothing left in cluster-a", func() bool { return holdsNothing(e.ctx, t, a) })
	testfixture.Eventually(t, "status names cluster-b as still holding the objects", func() bool {
		c := meta.FindStatusCondition(e.clusterSet("prod").Status.Conditions, xccv1alpha1.ConditionReady)
		return c != nil && c.Reason == ReasonRemoving && strings.Contains(c.Message, "cluster-b")
	})
	if !hasFinalizer(e.clusterSet("prod")) {
		t.Fatal("finalizer removed while cluster-b still holds the objects")
	}
	d.Up()
	testfixture.Eventually(t, "nothing left in cluster-b", func() bool { return holdsNothing(e.ctx, t, b) })
	testfixture.Eventually(t, "the finalizer removed", func() bool { return !hasFinalizer(e.clusterSet("prod")) })
}

// A member that refuses the deletes of a removal (an admission policy)
// keeps the finalizer: a refusal is not a removal done. Once it allows
// them, the removal ends.
func TestControllerClusterSetDeletionWaitsForRefusedDelete(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	var refuse atomic.Bool
	b.MCS.PrependReactor("delete", "serviceimports", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "multicluster.x-k8s.io", Resource: "serviceimports"}, "web",
				errorString("deletes are paused"))
		}
		return false, nil, nil
	})
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "imported into both", func() bool { return hasImport(e.ctx, a) && hasImport(e.ctx, b) })
	testfixture.Eventually(t, "the ClusterSet holds the finalizer", func() bool { return hasFinalizer(e.clusterSet("prod")) })

	refuse.Store(true)
	e.markSetDeleting("prod")
	testfixture.Eventually(t, "nothing left in cluster-a", func() bool { return holdsNothing(e.ctx, t, a) })
	testfixture.Eventually(t, "status says cluster-b refused", func() bool {
		c := meta.FindStatusCondition(e.clusterSet("prod").Status.Conditions, xccv1alpha1.ConditionReady)
		return c != nil && c.Reason == ReasonRemoving && strings.Contains(c.Message, "deletes are paused")
	})
	if !hasFinalizer(e.clusterSet("prod")) {
		t.Fatal("finalizer removed while cluster-b refuses to delete the ServiceImport")
	}
	refuse.Store(false)
	testfixture.Eventually(t, "nothing left in cluster-b", func() bool { return holdsNothing(e.ctx, t, b) })
	testfixture.Eventually(t, "the finalizer removed", func() bool { return !hasFinalizer(e.clusterSet("prod")) })
}

// configMapWrites counts the ConfigMap creates and updates on the
// management cluster: the state's writes.
func (e *testEnv) configMapWrites() int {
	n := 0
	for _, a := range e.mgmt.Actions() {
		if a.GetResource().Resource == "configmaps" && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			n++
		}
	}
	return n
}

// The state is written when what it keeps changes, not at every sync:
// syncs that read the same exports and endpoints write nothing; a new
// endpoint is written.
func TestControllerClusterSetStateSavedOnChange(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	e := twoMembers(t, a, b)
	e.keptBoth()
	testfixture.Eventually(t, "the ClusterSet Ready", func() bool {
		c := meta.FindStatusCondition(clusterSetStatusOf(e.ctx, t, e, "prod").Conditions, xccv1alpha1.ConditionReady)
		return c != nil && c.Reason == ReasonWritten
	})
	before := e.configMapWrites()
	for range 5 {
		e.rec.Add("dev-team/prod")
		time.Sleep(50 * time.Millisecond)
	}
	if n := e.configMapWrites() - before; n != 0 {
		t.Errorf("%d state writes in syncs that changed nothing", n)
	}

	s, err := a.DiscoveryV1().EndpointSlices("shop").Get(e.ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoints = append(s.Endpoints, testfixture.Endpoint("10.244.1.6", true))
	if _, err := a.DiscoveryV1().EndpointSlices("shop").Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "the new endpoint kept", func() bool {
		kept := e.keptSet()
		return kept != nil && len(kept.Members["cluster-a"].Exports) == 1 &&
			len(kept.Members["cluster-a"].Exports[0].Slices) == 1 && len(kept.Members["cluster-a"].Exports[0].Slices[0].Endpoints) == 2
	})
}

// clusterSetSelecting is the ClusterSet name of dev-team, created at
// created, selecting the Clusters labelled key=value.
func clusterSetSelecting(name, key, value string, created time.Time) *unstructured.Unstructured {
	u := testfixture.ClusterSetObject(name)
	_ = unstructured.SetNestedStringMap(u.Object, map[string]string{key: value}, "spec", "clusterSelector", "matchLabels")
	u.SetCreationTimestamp(metav1.NewTime(created))
	return u
}

// A Cluster selected by two ClusterSets belongs to the older while that
// one is being deleted: its removal is never raced by the newer's writes.
// Once the older is gone, the newer takes the Cluster and writes its
// imports there.
func TestControllerClusterSetHandOver(t *testing.T) {
	a, b, c := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, ""), testfixture.NewMember(true, "10.244.3.5")
	d := testfixture.DownableMember(a)
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{
			testfixture.CAPICluster("cluster-a", map[string]string{"set": "prod"}, ""),
			testfixture.CAPICluster("cluster-b", map[string]string{"set": "prod", "tier": "web"}, ""),
			testfixture.CAPICluster("cluster-c", map[string]string{"tier": "web"}, ""),
			clusterSetSelecting("prod", "set", "prod", time.Unix(100, 0)),
			clusterSetSelecting("next", "tier", "web", time.Unix(200, 0)),
		},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": c},
		func(c *testConfig) { c.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	refusedByNext := func(says ...string) bool {
		for _, m := range clusterSetStatusOf(e.ctx, t, e, "next").Clusters {
			if m.Name == "cluster-b" && m.Reason == xccv1alpha1.ReasonConflict {
				for _, s := range says {
					if !strings.Contains(m.Message, s) {
						return false
					}
				}
				return true
			}
		}
		return false
	}
	testfixture.Eventually(t, "cluster-a's import in cluster-b (prod has it)", func() bool { return hasImport(e.ctx, b) })
	testfixture.Eventually(t, "next refuses cluster-b: prod is older", func() bool { return refusedByNext() })
	testfixture.Eventually(t, "prod holds the finalizer", func() bool { return hasFinalizer(e.clusterSet("prod")) })

	// prod is deleted while cluster-a cannot be reached: its removal is
	// done in cluster-b, and next still does not take cluster-b.
	d.Down()
	e.markSetDeleting("prod")
	testfixture.Eventually(t, "prod's objects gone from cluster-b", func() bool { return holdsNothing(e.ctx, t, b) })
	testfixture.Eventually(t, "next says cluster-b is prod's while prod is being deleted", func() bool { return refusedByNext("being deleted") })
	if !holdsNothing(e.ctx, t, b) {
		t.Fatal("next took cluster-b while prod, being deleted, still removes its objects")
	}

	// The removal ends, the API server deletes prod: next takes cluster-b.
	d.Up()
	testfixture.Eventually(t, "prod's finalizer removed", func() bool { return !hasFinalizer(e.clusterSet("prod")) })
	if err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Delete(e.ctx, "prod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "next's import of cluster-c's export in cluster-b", func() bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil && len(si.Status.Clusters) == 1 && si.Status.Clusters[0].Cluster == "cluster-c"
	})
}

// A member that moves from one ClusterSet to another is handed over: the
// set it left leaves its objects to the set it joined, which replaces
// them with its own.
func TestControllerClusterSetMemberMoves(t *testing.T) {
	a, b, c := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, ""), testfixture.NewMember(true, "10.244.3.5")
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{
			testfixture.CAPICluster("cluster-a", map[string]string{"set": "prod"}, ""),
			testfixture.CAPICluster("cluster-b", map[string]string{"set": "prod"}, ""),
			testfixture.CAPICluster("cluster-c", map[string]string{"tier": "web"}, ""),
			clusterSetSelecting("prod", "set", "prod", time.Unix(100, 0)),
			clusterSetSelecting("next", "tier", "web", time.Unix(200, 0)),
		},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": c})
	testfixture.Eventually(t, "cluster-a's import in cluster-b", func() bool { return hasImport(e.ctx, b) })

	clusters := e.dyn.Resource(clusterGVR).Namespace("dev-team")
	u, err := clusters.Get(e.ctx, "cluster-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetLabels(map[string]string{"tier": "web"})
	if _, err := clusters.Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	importOfC := func() bool {
		si, err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, "web", metav1.GetOptions{})
		return err == nil && len(si.Status.Clusters) == 1 && si.Status.Clusters[0].Cluster == "cluster-c"
	}
	testfixture.Eventually(t, "next's import of cluster-c's export in cluster-b", importOfC)
	for range 3 {
		e.rec.Add("dev-team/prod")
		e.rec.Add("dev-team/next")
		time.Sleep(100 * time.Millisecond)
	}
	testfixture.Eventually(t, "still next's import in cluster-b after both synced again", importOfC)
	if kept := e.keptSet(); kept != nil && writtenIn(kept, "dev-team/cluster-b") != "" {
		t.Errorf("prod still lists cluster-b as holding its objects: %v", kept.Clusters)
	}
}

// A ClusterSet deleted while no controller ran, its kept state damaged:
// the next controller cannot know from the state where its objects are,
// so it removes them from the members the ClusterSet selects.
func TestControllerClusterSetRemovedWithDamagedState(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "imported into both", func() bool { return hasImport(e.ctx, a) && hasImport(e.ctx, b) })
	testfixture.Eventually(t, "the ClusterSet holds the finalizer", func() bool { return hasFinalizer(e.clusterSet("prod")) })
	e.keptBoth()

	e.restart(func() {
		e.markSetDeleting("prod")
		cms, err := e.mgmt.CoreV1().ConfigMaps(stateNamespace).List(e.base, metav1.ListOptions{})
		if err != nil || len(cms.Items) == 0 {
			t.Fatalf("state ConfigMaps: %v, %v", cms, err)
		}
		for _, cm := range cms.Items {
			for k := range cm.BinaryData {
				cm.BinaryData[k] = []byte("not gzip")
			}
			if _, err := e.mgmt.CoreV1().ConfigMaps(stateNamespace).Update(e.base, &cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	})
	testfixture.Eventually(t, "nothing of the ClusterSet left in either member", func() bool {
		return holdsNothing(e.ctx, t, a) && holdsNothing(e.ctx, t, b)
	})
	testfixture.Eventually(t, "the finalizer removed", func() bool { return !hasFinalizer(e.clusterSet("prod")) })
}
