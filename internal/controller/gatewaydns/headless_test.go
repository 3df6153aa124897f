package gatewaydns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// postgres is the Service databases/postgres of a workload cluster,
// headless when clusterIP is None.
func postgres(clusterIP string) *corev1.Service {
	svc := testfixture.HeadlessService()
	svc.Spec.ClusterIP = clusterIP
	return svc
}

// postgresEndpoints is its EndpointSlice as the endpoint slice
// controller writes it for a StatefulSet: pod db-<i> at addrs[i], ready
// unless listed in notReady.
func postgresEndpoints(addrs []string, notReady ...string) *discoveryv1.EndpointSlice {
	s := testfixture.ServiceEndpoints("databases", "postgres", "postgres-xyz12")
	s.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	s.Ports = testfixture.PostgresPorts()
	for i, a := range addrs {
		ep := testfixture.PodEndpoint(a, fmt.Sprintf("db-%d", i), !slices.Contains(notReady, a))
		ep.NodeName = ptr.To("node-1")
		ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "databases", Name: fmt.Sprintf("db-%d", i)}
		s.Endpoints = append(s.Endpoints, ep)
	}
	return s
}

// podsOf is "cluster=reason/pods/healthReason/answered" of every status entry.
func podsOf(st v1alpha1.GatewayDNSStatus) string {
	var out []string
	for _, c := range st.Clusters {
		out = append(out, fmt.Sprintf("%s=%s/%d/%s/%v", c.Name, c.Reason, c.Pods, c.HealthReason, c.Answered))
	}
	return strings.Join(out, " ")
}

// A headless export from the informers to the targets: the Service's
// EndpointSlices watched once per cluster for every GatewayDNS that uses
// it, a pod that turns not ready leaving, a Service that stops being
// headless refused, beside the clusters' gateway GatewayDNS without
// conflict, and self markers for the namespace.
func TestControllerHeadless(t *testing.T) {
	gw := testfixture.GatewayDNS("gw")
	gw.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour)) // older: owns the clusters' names
	db := testfixture.HeadlessGatewayDNS("db")
	db.Spec.Locality = &v1alpha1.Locality{Policy: v1alpha1.LocalityLocal}
	db2 := db.DeepCopy()
	db2.Name = "db2"
	a, b := fakeWorkload(true, "10.0.0.1"), fakeWorkload(true, "10.0.0.2")
	for c, addrs := range map[*fake.Clientset][]string{a: {"10.1.0.5", "10.1.0.6"}, b: {"10.2.0.5"}} {
		if _, err := c.CoreV1().Services("databases").Create(context.Background(), postgres(corev1.ClusterIPNone), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DiscoveryV1().EndpointSlices("databases").Create(context.Background(), postgresEndpoints(addrs), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, "192.0.2.10"), testfixture.CAPICluster("cluster-b", contour, "192.0.2.11"),
			gatewayDNSObject(t, gw), gatewayDNSObject(t, db), gatewayDNSObject(t, db2)},
		map[string]*fake.Clientset{"cluster-a": a, "cluster-b": b})
	const x = "db.dev-team.services.xcc.test"
	eventuallyOf := func(cluster string, want ...string) {
		t.Helper()
		slices.Sort(want)
		var got []string
		err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got = slices.DeleteFunc(e.slicesOf(cluster, contract.KindHeadless, contract.KindSelf), func(s string) bool {
				return strings.HasPrefix(s, "db2.") // the same, under db2's name
			})
			return slices.Equal(got, want), nil
		})
		if err != nil {
			t.Fatalf("%s:\n got %q\nwant %q", cluster, got, want)
		}
	}
	both := []string{x + " IPv4 10.1.0.5,10.1.0.6", x + " IPv4 10.2.0.5"}
	eventuallyOf("cluster-a", append(both, "self dev-team cluster-a")...)
	eventuallyOf("cluster-b", append(both, "self dev-team cluster-b")...)
	e.eventuallyStatus("db", func(s v1alpha1.GatewayDNSStatus) bool {
		return podsOf(s) == "cluster-a=Published/2/Healthy/true cluster-b=Published/1/Healthy/true" &&
			s.ReadyClusters == 2 && s.HealthyClusters == 2
	})
	// The gateway GatewayDNS keeps the clusters' names: no Conflict either way.
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 2 })
	// One Service informer and one EndpointSlice informer per Service
	// and cluster, whatever the number of GatewayDNS using them.
	if clusters, services, users := e.rec.workloads.Watched(); clusters != 2 || services != 4 || users != 6 {
		t.Errorf("watched %d clusters, %d Services, %d users; want 2, 4 (envoy and postgres per cluster), 6", clusters, services, users)
	}

	// db-1 of cluster-a turns not ready: it leaves; health stays.
	if _, err := a.DiscoveryV1().EndpointSlices("databases").Update(e.ctx, postgresEndpoints([]string{"10.1.0.5", "10.1.0.6"}, "10.1.0.6"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := []string{x + " IPv4 10.1.0.5", x + " IPv4 10.2.0.5"}
	eventuallyOf("cluster-b", append(one, "self dev-team cluster-b")...)
	e.eventuallyStatus("db", func(s v1alpha1.GatewayDNSStatus) bool {
		return podsOf(s) == "cluster-a=Published/1/Healthy/true cluster-b=Published/1/Healthy/true"
	})

	// cluster-b's Service stops being headless: refused, its pods leave.
	if _, err := b.CoreV1().Services("databases").Update(e.ctx, postgres("10.96.0.10"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOf("cluster-a", x+" IPv4 10.1.0.5", "self dev-team cluster-a")
	st := e.eventuallyStatus("db", func(s v1alpha1.GatewayDNSStatus) bool {
		return podsOf(s) == "cluster-a=Published/1/Healthy/true cluster-b=ServiceNotHeadless/0/NoReadyEndpoints/false"
	})
	if m := st.Clusters[1].Message; !strings.Contains(m, `clusterIP "10.96.0.10"`) {
		t.Errorf("message %q", m)
	}
	if !e.sawEvent("Warning ServiceNotHeadless", "cluster-b") {
		t.Errorf("no ServiceNotHeadless Warning")
	}

	// The headless exports go; the gateway GatewayDNS and its self markers stay.
	for _, n := range []string{"db", "db2"} {
		if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventuallyOf("cluster-a", "self dev-team cluster-a")
	eventuallyOf("cluster-b", "self dev-team cluster-b")
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, services, _ := e.rec.workloads.Watched()
		return services == 2, nil
	})
	if err != nil {
		t.Errorf("the postgres informers are not stopped with their last user")
	}
}

// stateNamespace is the controller's own namespace in the tests: where it
// keeps state on the management cluster.
const stateNamespace = "xcc-dns-system"

// After a restart the controller has no memory of what a headless export
// published; a cluster it cannot reach then keeps the pods the
// controller's state on the management cluster holds, rather than losing
// them everywhere, and never what a target cluster holds: cluster-a's
// admin forged a slice as cluster-b's, with an address of its choosing.
func TestControllerHeadlessKeptOverRestart(t *testing.T) {
	db := testfixture.HeadlessGatewayDNS("db")
	db.Status.Clusters = []v1alpha1.ClusterStatus{{Name: "cluster-b", Reason: "Published", Ready: true, Pods: 1, Healthy: true, HealthReason: "Healthy"}}
	a := fakeWorkload(true)
	if _, err := a.CoreV1().Services("databases").Create(context.Background(), postgres(corev1.ClusterIPNone), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DiscoveryV1().EndpointSlices("databases").Create(context.Background(), postgresEndpoints([]string{"10.1.0.5"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg := []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}
	// The forgery: a managed slice in cluster-a, labelled as cluster-b's.
	const x = "db.dev-team.services.xcc.test"
	src := contract.Source{Namespace: "dev-team", GatewayDNS: "db", Cluster: "cluster-b", Kind: contract.KindHeadless, Hostname: x}
	for _, s := range contract.BuildHeadless(src, contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{{
		Ports: pg, IPv4: []contract.Endpoint{{Address: "10.66.0.66", Hostname: "db-9"}},
	}}}) {
		s.Namespace = testfixture.SliceNamespace
		if _, err := a.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// What the controller kept before it restarted: cluster-b's pod.
	kept := savedState(t, "dev-team/db", map[string]contract.HeadlessEndpoints{
		"cluster-b": {Groups: []contract.HeadlessGroup{{Ports: pg, IPv4: []contract.Endpoint{{Address: "10.2.0.5", Hostname: "db-0"}}}}},
	})
	// cluster-b has no kubeconfig Secret now: its state is unknown.
	e := newTestEnv(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), kept},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-b", contour, ""), gatewayDNSObject(t, db)},
		map[string]*fake.Clientset{"cluster-a": a})
	e.eventuallyStatus("db", func(s v1alpha1.GatewayDNSStatus) bool {
		return podsOf(s) == "cluster-a=Published/1/Healthy/true cluster-b=KubeconfigMissing/1/Healthy/true"
	})
	want := []string{x + " IPv4 10.1.0.5", x + " IPv4 10.2.0.5", "self dev-team cluster-a"}
	if got := e.slicesOf("cluster-a", contract.KindHeadless, contract.KindSelf); !slices.Equal(got, want) {
		t.Errorf("cluster-a holds %q, want %q (the kept pod, never the forged one)", got, want)
	}
	// The state now holds both clusters' pods; the GatewayDNS deleted, none.
	if got := e.keptHeadless("dev-team/db"); !slices.Equal(got, []string{"cluster-a 10.1.0.5", "cluster-b 10.2.0.5"}) {
		t.Errorf("state holds %q", got)
	}
	if err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Delete(e.ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(e.keptHeadless("dev-team/db")) == 0, nil
	})
	if err != nil {
		t.Errorf("the state of a deleted GatewayDNS stays: %q", e.keptHeadless("dev-team/db"))
	}
}

// savedState returns the ConfigMap state.ConfigMaps writes for key's eps.
func savedState(t *testing.T, key string, eps map[string]contract.HeadlessEndpoints) *corev1.ConfigMap {
	t.Helper()
	kube := fake.NewClientset()
	if err := (&state.ConfigMaps{Client: kube, Namespace: stateNamespace}).Save(context.Background(), key, eps); err != nil {
		t.Fatal(err)
	}
	list, err := kube.CoreV1().ConfigMaps(stateNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("saved state: %v, %d ConfigMaps", err, len(list.Items))
	}
	return &list.Items[0]
}

// keptHeadless returns "<cluster> <address>" of every endpoint the
// controller's state keeps for key.
func (e *testEnv) keptHeadless(key string) []string {
	e.t.Helper()
	got, err := (&state.ConfigMaps{Client: e.mgmt, Namespace: stateNamespace}).Load(e.ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for cluster, h := range got {
		for _, g := range h.Groups {
			for _, ep := range slices.Concat(g.IPv4, g.IPv6) {
				out = append(out, cluster+" "+ep.Address)
			}
		}
	}
	slices.Sort(out)
	return out
}
