package gatewaydns

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// envoyEndpoints is the EndpointSlice the endpoint slice controller keeps
// for projectcontour/envoy, with one endpoint, ready or not.
func envoyEndpoints(ready bool) *discoveryv1.EndpointSlice {
	return testfixture.ServiceEndpoints("projectcontour", "envoy", "envoy-abcde", testfixture.Endpoint("10.244.0.7", ready))
}

// gatewaysOf is "cluster=healthReason/answered" of every status entry.
func gatewaysOf(st v1alpha1.GatewayDNSStatus) string {
	var out []string
	for _, c := range st.Clusters {
		a := "-"
		if c.Answered {
			a = "answered"
		}
		out = append(out, c.Name+"="+c.HealthReason+"/"+a)
	}
	return strings.Join(out, " ")
}

// The multi-cluster name from the informers to the targets: health from
// the gateway Service's EndpointSlices and the Cluster's conditions, a
// self marker per target, status, and the markers gone with the last
// GatewayDNS of the namespace.
func TestControllerGatewaysHealthAndSelf(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	gd.Spec.Locality = &v1alpha1.Locality{Policy: v1alpha1.LocalityLocal}
	a, b := fakeWorkload(true, "10.0.0.1"), fakeWorkload(true, "10.0.0.2")
	for _, c := range []*fake.Clientset{a, b} {
		if _, err := c.DiscoveryV1().EndpointSlices("projectcontour").Create(context.Background(), envoyEndpoints(true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// cluster-c opts in but is not selected; a hand-made object holding
	// its self marker's name is never touched.
	c := fakeWorkload(true)
	foreign := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: testfixture.SliceNamespace, Name: contract.SelfSliceName("dev-team")},
		AddressType: discoveryv1.AddressTypeFQDN}
	if _, err := c.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b"), testfixture.KubeconfigSecret("cluster-c", "cluster-c")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), testfixture.CAPICluster("cluster-c", nil, ""), gatewayDNSObject(t, gd)},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": b, "cluster-c": c})
	const name = "*.gw.dev-team.gateways.xcc.test"
	kinds := []contract.Kind{contract.KindGateways, contract.KindSelf}
	eventuallyOf := func(want []string, cluster string, extra ...string) {
		t.Helper()
		want = append(slices.Clone(want), extra...)
		slices.Sort(want)
		var got []string
		err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got = e.slicesOf(cluster, kinds...)
			return slices.Equal(got, want), nil
		})
		if err != nil {
			t.Fatalf("%s:\n got %q\nwant %q", cluster, got, want)
		}
	}
	healthy := []string{name + " IPv4 10.0.0.1", name + " IPv4 10.0.0.2"}
	eventuallyOf(healthy, "cluster-a", "self dev-team cluster-a")
	eventuallyOf(healthy, "cluster-b", "self dev-team cluster-b")
	eventuallyOf(healthy, "cluster-c", " FQDN ") // the foreign object, as it was
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return gatewaysOf(s) == "cluster-a=Healthy/answered cluster-b=Healthy/answered" && s.HealthyClusters == 2
	})
	if st.SelectedClusters != 2 {
		t.Errorf("selected %d", st.SelectedClusters)
	}
	if !e.sawEvent("Warning SelfMarkerFailed", "cluster-c", "not written by xcc-dns") {
		t.Errorf("no Warning about the foreign object in cluster-c")
	}

	// cluster-a's envoy loses its ready endpoints: its gateway is
	// unready everywhere, and (Local) no cluster's DNS answers it.
	if _, err := a.DiscoveryV1().EndpointSlices("projectcontour").Update(e.ctx, envoyEndpoints(false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	unreadyA := []string{name + " IPv4 10.0.0.1 unready", name + " IPv4 10.0.0.2"}
	eventuallyOf(unreadyA, "cluster-b", "self dev-team cluster-b")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return gatewaysOf(s) == "cluster-a=NoReadyEndpoints/- cluster-b=Healthy/answered" && s.HealthyClusters == 1
	})
	if !e.sawEvent("Warning GatewayUnhealthy", "cluster-a", "NoReadyEndpoints") {
		t.Errorf("no GatewayUnhealthy Event")
	}
	if _, err := a.DiscoveryV1().EndpointSlices("projectcontour").Update(e.ctx, envoyEndpoints(true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOf(healthy, "cluster-b", "self dev-team cluster-b")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.HealthyClusters == 2 })
	if !e.sawEvent("Normal GatewayHealthy", "cluster-a") {
		t.Errorf("no GatewayHealthy Event")
	}

	// Cluster API says cluster-b is not available.
	u, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Get(e.ctx, "cluster-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Available", "status": "False", "reason": "ControlPlaneDown"}}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(clusterGVR).Namespace("dev-team").Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOf([]string{name + " IPv4 10.0.0.1", name + " IPv4 10.0.0.2 unready"}, "cluster-a", "self dev-team cluster-a")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return gatewaysOf(s) == "cluster-a=Healthy/answered cluster-b=ClusterNotAvailable/-"
	})

	// The last GatewayDNS of the namespace goes: its slices and the self
	// markers with it; the foreign object stays.
	if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, "gw", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOf(nil, "cluster-a")
	eventuallyOf(nil, "cluster-b")
	eventuallyOf(nil, "cluster-c", " FQDN ")
}

// A self marker deleted or changed by hand is written again by the
// target's next full list (after half the resync period), as any slice.
func TestControllerSelfMarkerRepaired(t *testing.T) {
	a, b := fakeWorkload(true, "10.0.0.1"), fakeWorkload(true, "10.0.0.2")
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": b}, nil,
		func(cfg *testConfig) { cfg.Resync = time.Second })
	self := []contract.Kind{contract.KindSelf}
	e.eventuallyOf([]string{"self dev-team cluster-a"}, self, "cluster-a")
	e.eventuallyOf([]string{"self dev-team cluster-b"}, self, "cluster-b")

	name := contract.SelfSliceName("dev-team")
	if err := a.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := b.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Annotations[contract.AnnotationSelfClusters] = "cluster-x"
	if _, err := b.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Update(e.ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyOf([]string{"self dev-team cluster-a"}, self, "cluster-a")
	e.eventuallyOf([]string{"self dev-team cluster-b"}, self, "cluster-b")
}
