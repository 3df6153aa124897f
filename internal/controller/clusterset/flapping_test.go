package clusterset

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// threeMembers is a ClusterSet prod of cluster-a (a), cluster-b (b) and
// cluster-c (c).
func threeMembers(t *testing.T, a, b, c testfixture.Member, options ...func(*testConfig)) *testEnv {
	t.Helper()
	sel := map[string]string{"set": "prod"}
	return newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", sel, ""), testfixture.CAPICluster("cluster-b", sel, ""),
			testfixture.CAPICluster("cluster-c", sel, ""), testfixture.ClusterSetObject("prod")},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": c},
		options...)
}

// importedAddresses are the endpoint addresses of source's slices of the
// import ns/name that m holds.
func importedAddresses(ctx context.Context, m testfixture.Member, ns, name, source string) []string {
	list, err := m.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: mcsv1beta1.LabelSourceCluster + "=" + source + "," + mcsv1beta1.LabelServiceName + "=" + name})
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			out = append(out, ep.Addresses...)
		}
	}
	return out
}

// countSliceWrites counts the EndpointSlice writes into m's namespace ns.
func countSliceWrites(m testfixture.Member, ns string) *atomic.Int64 {
	var n atomic.Int64
	m.PrependReactor("*", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			if a.GetNamespace() == ns {
				n.Add(1)
			}
		}
		return false, nil, nil
	})
	return &n
}

// A member whose endpoints change without pause (100 changes a second)
// causes at most MemberSyncsPerSecond syncs a second (after a burst of
// as many), so the writes into the other members are bounded by the
// same; the other members' exports still arrive, and the last state of
// the flapping member is synced once it stops. The rate is 1 here, below
// the default, so that the bound holds apart from the unbounded count
// even when the test runs slowly.
func TestControllerClusterSetFlappingMemberIsRateLimited(t *testing.T) {
	a, b, c := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, ""), testfixture.NewMember(false, "")
	writes := countSliceWrites(c, "shop")
	const perSecond = 1
	e := threeMembers(t, a, b, c, func(c *testConfig) { c.MemberSyncsPerSecond = perSecond })
	testfixture.Eventually(t, "cluster-a's shop/web imported into cluster-c", func() bool {
		return slices.Equal(importedAddresses(e.ctx, c, "shop", "web", "cluster-a"), []string{"10.244.1.5"})
	})

	const flaps = 100
	syncsBefore, writesBefore := e.syncs(), writes.Load()
	start := time.Now()
	for i := range flaps {
		s := testfixture.ServiceEndpoints("shop", "web", "web-1", testfixture.Endpoint(fmt.Sprintf("10.244.2.%d", i+1), true))
		s.Ports = flapPorts()
		if _, err := a.DiscoveryV1().EndpointSlices("shop").Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == flaps/2 {
			// Another member exports while cluster-a flaps.
			addExport(t, b, "shop", "api", "10.244.3.1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)

	testfixture.Eventually(t, "cluster-b's shop/api imported into cluster-c while cluster-a flaps", func() bool {
		return slices.Equal(importedAddresses(e.ctx, c, "shop", "api", "cluster-b"), []string{"10.244.3.1"})
	})
	last := fmt.Sprintf("10.244.2.%d", flaps)
	testfixture.Eventually(t, "cluster-a's last endpoint imported into cluster-c", func() bool {
		return slices.Equal(importedAddresses(e.ctx, c, "shop", "web", "cluster-a"), []string{last})
	})
	flapEnd := time.Since(start)

	// Each member's events cause a burst, then perSecond syncs a second:
	// cluster-a's changes, cluster-b's new export, and in every member
	// the events of the controller's own writes there. A write that ends
	// after its sync stopped waiting syncs once more: rare, a few on a
	// loaded machine. Unbounded, the 100 changes make about 100 syncs.
	perMember := func(d time.Duration) float64 { return perSecond * (1 + d.Seconds()) }
	bound := 3*perMember(flapEnd) + 4
	syncs := e.syncs() - syncsBefore
	t.Logf("%d changes in %v: %v syncs, %d slice writes into cluster-c (bound %v)", flaps, elapsed, syncs, writes.Load()-writesBefore, bound)
	if syncs > bound {
		t.Errorf("%d changes of one member's endpoints in %v caused %v syncs; want at most %v", flaps, elapsed, syncs, bound)
	}
	// A sync writes a changed import's slice into cluster-c once, and
	// cluster-b's new import creates its own slice there once.
	if n, most := float64(writes.Load()-writesBefore), bound+1; n > most {
		t.Errorf("%d changes of one member's endpoints caused %v slice writes into another member; want at most %v", flaps, n, most)
	}
}

// flapPorts are the ports of testfixture.NewMember's shop/web slice.
func flapPorts() []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}
}
