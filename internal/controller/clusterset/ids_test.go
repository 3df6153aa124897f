package clusterset

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A member keeps the cluster id it joined with: a member that changes its
// ClusterProperty to another member's id is refused, never the holder,
// whichever is older, with a Warning Event; its objects are removed and
// the holder's imports stay. Deleting the ClusterSet afterwards leaves
// nothing of the controller's in either member.
func TestControllerClusterSetIDsAreSticky(t *testing.T) {
	for _, tc := range []struct {
		name         string
		thief, owner string // Cluster names; cluster-a is the older
	}{
		{name: "the older asks for the newer's id", thief: "cluster-a", owner: "cluster-b"},
		{name: "the newer asks for the older's id", thief: "cluster-b", owner: "cluster-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
			addExport(t, b, "shop", "api", "10.244.2.6")
			for _, m := range []*testfixture.Member{&a, &b} {
				m.Prop = &atomic.Pointer[string]{}
			}
			fakes := map[string]testfixture.Member{"cluster-a": a, "cluster-b": b}
			e := olderAndNewer(t, a, b)
			imports := func(m testfixture.Member, name, from string) bool {
				si, err := m.MCS.MulticlusterV1beta1().ServiceImports("shop").Get(e.ctx, name, metav1.GetOptions{})
				return err == nil && len(si.Status.Clusters) == 1 && si.Status.Clusters[0].Cluster == from
			}
			testfixture.Eventually(t, "each member imports the other's export", func() bool {
				return imports(b, "web", "cluster-a") && imports(a, "api", "cluster-b")
			})
			testfixture.Eventually(t, "the state keeps the id each member holds", func() bool {
				kept := e.keptSet()
				return kept != nil && kept.Clusters["dev-team/cluster-a"].ID == "cluster-a" && kept.Clusters["dev-team/cluster-b"].ID == "cluster-b"
			})

			owner := fakes[tc.owner]
			id := tc.owner
			fakes[tc.thief].Prop.Store(&id)
			reasons := func() map[string]xccv1alpha1.MemberStatus {
				e.rec.Add("dev-team/prod") // the property is read at a sync
				out := map[string]xccv1alpha1.MemberStatus{}
				for _, m := range clusterSetStatusOf(e.ctx, t, e, "prod").Clusters {
					out[m.Name] = m
				}
				return out
			}
			testfixture.Eventually(t, tc.thief+" refused, "+tc.owner+" still a member with its id", func() bool {
				r := reasons()
				return r[tc.thief].Reason == xccv1alpha1.ReasonClusterIDConflict && strings.Contains(r[tc.thief].Message, "keeps its id") &&
					r[tc.owner].Reason == xccv1alpha1.ReasonMember && r[tc.owner].ClusterID == tc.owner
			})
			if !e.sawEvent("Warning", string(xccv1alpha1.ReasonClusterIDConflict), tc.thief) {
				t.Errorf("no Warning Event for %s", tc.thief)
			}
			testfixture.Eventually(t, "the refused member holds nothing, and its export left the owner", func() bool {
				return holdsNothingOf(e, t, fakes[tc.thief]) && !importsAny(e, owner, tc.thief)
			})
			ownerExport := map[string]string{"cluster-a": "web", "cluster-b": "api"}[tc.owner]
			if !imports(owner, ownerExport, tc.owner) {
				t.Errorf("the owner's own import %s lost its cluster id", ownerExport)
			}

			if err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Delete(e.ctx, "prod", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			testfixture.Eventually(t, "nothing of the ClusterSet left in either member", func() bool {
				return holdsNothingOf(e, t, a) && holdsNothingOf(e, t, b)
			})
		})
	}
}

// olderAndNewer is a ClusterSet prod of cluster-a (client a, the older
// Cluster) and cluster-b (client b), whose properties are read again
// every 50 ms.
func olderAndNewer(t *testing.T, a, b workload.Client) *testEnv {
	t.Helper()
	sel := map[string]string{"set": "prod"}
	ca, cb := testfixture.CAPICluster("cluster-a", sel, ""), testfixture.CAPICluster("cluster-b", sel, "")
	ca.SetCreationTimestamp(metav1.NewTime(time.Unix(10, 0)))
	cb.SetCreationTimestamp(metav1.NewTime(time.Unix(20, 0)))
	return newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb")},
		[]runtime.Object{ca, cb, testfixture.ClusterSetObject("prod")},
		nil, map[string]workload.Client{"ka": a, "kb": b},
		func(c *testConfig) { c.ReadLimits.PropertyRefresh = 50 * time.Millisecond })
}

// holdsNothingOf reports whether m holds no ServiceImport, derived Service
// or EndpointSlice of the controller, nor a clusterset contract slice.
func holdsNothingOf(e *testEnv, t *testing.T, m testfixture.Member) bool {
	imports, err := m.MCS.MulticlusterV1beta1().ServiceImports("").List(e.ctx, metav1.ListOptions{})
	if err != nil || len(imports.Items) > 0 {
		return false
	}
	svcs, err := m.CoreV1().Services("").List(e.ctx, metav1.ListOptions{LabelSelector: objects.LabelManagedBy + "=" + objects.ManagedByValue})
	if err != nil || len(svcs.Items) > 0 {
		return false
	}
	eps, err := m.DiscoveryV1().EndpointSlices("").List(e.ctx, metav1.ListOptions{LabelSelector: mcsv1beta1.LabelSourceCluster})
	return err == nil && len(eps.Items) == 0 && len(clusterSetSlices(e.ctx, t, m)) == 0
}

// importsAny reports whether m holds a ServiceImport that lists cluster.
func importsAny(e *testEnv, m testfixture.Member, cluster string) bool {
	list, err := m.MCS.MulticlusterV1beta1().ServiceImports("").List(e.ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	for _, si := range list.Items {
		for _, c := range si.Status.Clusters {
			if c.Cluster == cluster {
				return true
			}
		}
	}
	return false
}

// The id a member holds outlives a restart: an older member that asks,
// while no controller runs, for a newer member's id is refused by the
// next controller, which knows who holds it from its state alone.
func TestControllerClusterSetIDsSurviveARestart(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	a.Prop, b.Prop = &atomic.Pointer[string]{}, &atomic.Pointer[string]{}
	// After the restart cluster-b's property is read last: from the
	// members' properties alone the older, cluster-a, would take its id.
	slowB := slowProperty{Member: b, wait: &atomic.Pointer[chan struct{}]{}}
	e := olderAndNewer(t, a, slowB)
	testfixture.Eventually(t, "the state keeps the id each member holds", func() bool {
		kept := e.keptSet()
		return kept != nil && kept.Clusters["dev-team/cluster-a"].ID == "cluster-a" && kept.Clusters["dev-team/cluster-b"].ID == "cluster-b"
	})
	e.restart(func() {
		id := "cluster-b"
		a.Prop.Store(&id)
		wait := make(chan struct{})
		slowB.wait.Store(&wait)
		time.AfterFunc(time.Second, func() { close(wait) })
	})
	testfixture.Eventually(t, "cluster-a refused, cluster-b keeps its id", func() bool {
		e.rec.Add("dev-team/prod")
		r := map[string]xccv1alpha1.MemberReason{}
		for _, m := range clusterSetStatusOf(e.ctx, t, e, "prod").Clusters {
			r[m.Name+"="+m.ClusterID] = m.Reason
		}
		return r["cluster-a=cluster-b"] == xccv1alpha1.ReasonClusterIDConflict && r["cluster-b=cluster-b"] == xccv1alpha1.ReasonMember
	})
	testfixture.Eventually(t, "nothing of cluster-a's left", func() bool { return holdsNothingOf(e, t, a) && !importsAny(e, b, "cluster-a") })
}

// slowProperty is a member whose property read waits, while wait holds a
// channel, until it is closed.
type slowProperty struct {
	testfixture.Member
	wait *atomic.Pointer[chan struct{}]
}

func (s slowProperty) ClusterIDProperty(ctx context.Context) (*string, error) {
	if w := s.wait.Load(); w != nil {
		select {
		case <-*w:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Member.ClusterIDProperty(ctx)
}

// refusedProperty is a member whose property read fails with err.
type refusedProperty struct {
	testfixture.Member
	err error
}

func (r refusedProperty) ClusterIDProperty(context.Context) (*string, error) { return nil, r.err }

// A member whose ClusterProperty read is refused (a body past its cap)
// is not read, and its status entry and the Ready condition say why; the
// other member is read and written as before.
func TestControllerClusterSetPropertyRefusedSaysWhy(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	refusal := errors.New("get ClusterProperty cluster.clusterset.k8s.io: response body too large: more than 65536 bytes")
	e := olderAndNewer(t, a, refusedProperty{Member: b, err: refusal})
	testfixture.Eventually(t, "cluster-b's entry names the refused property", func() bool {
		e.rec.Add("dev-team/prod")
		st := clusterSetStatusOf(e.ctx, t, e, "prod")
		ready := meta.FindStatusCondition(st.Conditions, xccv1alpha1.ConditionReady)
		for _, m := range st.Clusters {
			if m.Name == "cluster-b" {
				return strings.Contains(m.Message, "its ClusterProperty cannot be read: "+refusal.Error()) &&
					ready != nil && ready.Reason == ReasonUnreachable && strings.Contains(ready.Message, "cluster-b")
			}
		}
		return false
	})
}
