package gatewaydns

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// claimingService is a LoadBalancer Service of namespace shop annotated
// with the fqdn annotation value, and its EndpointSlice with one ready
// endpoint.
func claimingService(name, value string, addrs ...string) []runtime.Object {
	svc := testfixture.LoadBalancerService("shop", name, addrs...)
	svc.Annotations = map[string]string{contract.AnnotationFQDN: value, "unrelated": strings.Repeat("x", 100)}
	eps := testfixture.ServiceEndpoints("shop", name, name+"-abcde", testfixture.Endpoint("10.244.1.7", true))
	return []runtime.Object{svc, eps}
}

// namesOf is "name=reason" of every status.names entry.
func namesOf(st v1alpha1.GatewayDNSStatus) string {
	var out []string
	for _, n := range st.Names {
		out = append(out, n.Name+"="+n.Reason)
	}
	return strings.Join(out, " ")
}

// Names from the annotated Services of two clusters, through two
// GatewayDNS of one namespace: one name answering both clusters' Services
// is published by the older; a name outside the grants is refused with a
// status reason and an Event; the newer takes over when the older goes.
func TestControllerNames(t *testing.T) {
	older := testfixture.GatewayDNS("gw")
	older.Spec.Names = &v1alpha1.Names{Enabled: true}
	older.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"site": "a"}}
	newer := testfixture.GatewayDNS("gw2")
	newer.Spec.Names = &v1alpha1.Names{Enabled: true}
	newer.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"site": "b"}}

	a := fake.NewClientset(slices.Concat(
		[]runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace}}},
		claimingService("web", "web", "10.1.0.1"),
		claimingService("cart", "cart.shop.xcc.test", "10.1.0.2"),
		claimingService("evil", "x.other.names.xcc.test", "10.1.0.3"),
		// A ClusterIP Service claims nothing, annotated or not.
		[]runtime.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "internal",
			Annotations: map[string]string{contract.AnnotationFQDN: "internal"}}}},
	)...)
	b := fake.NewClientset(slices.Concat(
		[]runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace}}},
		claimingService("web", "web.dev-team.names.xcc.test", "10.2.0.1"),
	)...)
	grants, err := contract.ParseGrants("dev-team=shop.xcc.test", "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", map[string]string{"site": "a"}, ""), testfixture.CAPICluster("cluster-b", map[string]string{"site": "b"}, ""),
			gatewayDNSObject(t, older), gatewayDNSObject(t, newer)},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": b}, nil,
		func(c *testConfig) { c.NameGrants = grants })

	const web = "web.dev-team.names.xcc.test"
	eventually := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		for _, cluster := range []string{"cluster-a", "cluster-b"} {
			var got []string
			err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				got = e.slicesOf(cluster, contract.KindName)
				return slices.Equal(got, want), nil
			})
			if err != nil {
				t.Fatalf("%s:\n got %q\nwant %q", cluster, got, want)
			}
		}
	}
	eventually("cart.shop.xcc.test IPv4 10.1.0.2", web+" IPv4 10.1.0.1")
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		return namesOf(s) == "cart.shop.xcc.test=Published "+web+"=Published x.other.names.xcc.test=NameRefused"
	})
	e.eventuallyStatus("gw2", func(s v1alpha1.GatewayDNSStatus) bool { return namesOf(s) == web+"=Conflict" })
	if !e.sawEvent("Warning NameRefused", "x.other.names.xcc.test", "cluster-a/shop/evil") {
		t.Errorf("no NameRefused Event")
	}

	// The Service in cluster-a loses its ready endpoint: still published, not ready.
	if err := a.DiscoveryV1().EndpointSlices("shop").Delete(e.ctx, "web-abcde", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("cart.shop.xcc.test IPv4 10.1.0.2", web+" IPv4 10.1.0.1 unready")

	// Health follows the EndpointSlice: a ready endpoint again, ready again.
	if _, err := a.DiscoveryV1().EndpointSlices("shop").Create(e.ctx,
		claimingService("web", "web", "10.1.0.1")[1].(*discoveryv1.EndpointSlice), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("cart.shop.xcc.test IPv4 10.1.0.2", web+" IPv4 10.1.0.1")
	if err := a.DiscoveryV1().EndpointSlices("shop").Delete(e.ctx, "web-abcde", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("cart.shop.xcc.test IPv4 10.1.0.2", web+" IPv4 10.1.0.1 unready")

	// A new address is published at once.
	svc, err := a.CoreV1().Services("shop").Get(e.ctx, "cart", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.1.0.9"}}
	if _, err := a.CoreV1().Services("shop").UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("cart.shop.xcc.test IPv4 10.1.0.9", web+" IPv4 10.1.0.1 unready")

	// The older GatewayDNS goes: the newer publishes the name from cluster-b.
	if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, "gw", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(web + " IPv4 10.2.0.1")
	e.eventuallyStatus("gw2", func(s v1alpha1.GatewayDNSStatus) bool { return namesOf(s) == web+"=Published" })
}

// A cluster reached again (here: through a new kubeconfig, so new
// informers) whose Services cannot be listed yet keeps the names it
// published, in every target, until they are listed.
func TestControllerNamesKeptUntilListed(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	gd.Spec.Names = &v1alpha1.Names{Enabled: true}
	gd.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"site": "a"}}
	a := fake.NewClientset(slices.Concat(
		[]runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace}}},
		claimingService("web", "web", "10.1.0.1"),
	)...)
	var refuse atomic.Bool
	a.PrependReactor("list", "services", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() && action.GetNamespace() == metav1.NamespaceAll {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	b := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testfixture.SliceNamespace}})
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", map[string]string{"site": "a"}, ""), testfixture.CAPICluster("cluster-b", nil, ""),
			gatewayDNSObject(t, gd)},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-a-again": a, "cluster-b": b}, nil)

	const want = "web.dev-team.names.xcc.test IPv4 10.1.0.1"
	has := func(timeout time.Duration) bool {
		t.Helper()
		err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			return slices.Equal(e.slicesOf("cluster-a", contract.KindName), []string{want}) &&
				slices.Equal(e.slicesOf("cluster-b", contract.KindName), []string{want}), nil
		})
		return err == nil
	}
	if !has(10 * time.Second) {
		t.Fatalf("names not published: %q, %q", e.slicesOf("cluster-a", contract.KindName), e.slicesOf("cluster-b", contract.KindName))
	}

	// Reconnect with the Services not listable: the names stay.
	refuse.Store(true)
	if _, err := e.mgmt.CoreV1().Secrets("dev-team").Update(e.ctx, testfixture.KubeconfigSecret("cluster-a", "cluster-a-again"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		for _, c := range s.Clusters {
			if c.Name == "cluster-a" && strings.Contains(c.Message, "last published names kept") {
				return true
			}
		}
		return false
	})
	for _, cluster := range []string{"cluster-a", "cluster-b"} {
		if got := e.slicesOf(cluster, contract.KindName); !slices.Equal(got, []string{want}) {
			t.Errorf("%s while Services are not listed: %q, want %q", cluster, got, want)
		}
	}

	// Listed at last: the names are those of the Services again.
	refuse.Store(false)
	if !has(30 * time.Second) {
		t.Fatalf("names after the list: %q, %q", e.slicesOf("cluster-a", contract.KindName), e.slicesOf("cluster-b", contract.KindName))
	}
}
