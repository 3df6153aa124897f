package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// eastWestGolden is what the controller's eastwest.Desired makes of one
// export with an HTTP, a TLS and a TCP port (kept equal to it by the main
// module's TestGoldenObjects).
var eastWestGolden = filepath.Join("..", "internal", "mcs", "eastwest", "testdata", "objects.yaml")

// testEastWestObjects: the ListenerSet and routes the controller writes
// into an exporting member for importers of other networks are accepted
// by a real API server under the Gateway API v1.6 CRDs (their schemas and
// CEL rules), and read back with the spec and labels written: the
// controller's next write then has nothing to update.
func testEastWestObjects(t *testing.T) {
	ctx := ctxFor(t)
	a := theLab.Workload(lab.ClusterA)
	withGatewayAPI(t, a)
	data, err := os.ReadFile(eastWestGolden)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		want := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &want.Object); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(want.Object, "status")
		if err := lab.EnsureNamespace(ctx, a, want.GetNamespace()); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: strings.ToLower(want.GetKind()) + "s"}
		res := a.Dynamic.Resource(gvr).Namespace(want.GetNamespace())
		if _, err := res.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s refused: %v", want.GetKind(), want.GetName(), err)
		}
		got, err := res.Get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := jsonOf(t, got.Object["spec"]), jsonOf(t, want.Object["spec"]); g != w {
			t.Errorf("%s %s read back another spec than written:\n got %s\nwant %s", want.GetKind(), want.GetName(), g, w)
		}
		if g, w := jsonOf(t, got.GetLabels()), jsonOf(t, want.GetLabels()); g != w {
			t.Errorf("%s %s labels %s, want %s", want.GetKind(), want.GetName(), g, w)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testMCSNetworks: cluster-a and cluster-b are put in two networks of a
// ClusterSet with spec.networks. The controller writes, into cluster-a,
// the ListenerSet and routes (HTTP, TLS, TCP) of each export on the
// operator's east-west Gateway, TCP listeners on the lowest ports of the
// range that a tenant's ListenerSet does not hold, kept across a
// restart. cluster-b's imported slices of cluster-a hold the gateway's
// address on the listeners' ports once the gateway and its listeners are
// ready (the lab writes their status as an implementation would). A
// gateway no longer Programmed leaves cluster-b with no endpoint of
// cluster-a, never a dead address; an unexport and the ClusterSet's
// deletion remove the east-west objects, never the tenant's.
func testMCSNetworks(t *testing.T) {
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	const set, ns, svc, db, tenant, label = "networks", "nets", "cart", "db", "nets-tenant", "xcc-networks-test"
	const gwNS, gwName, gwAddress = "xcc-east-west", "east-west", "198.51.100.80"
	const httpPort, first, last = 8080, 31000, 31009
	ctx := ctxFor(t)
	withGatewayAPI(t, a)
	cleanupClusterSet(t, set, []*lab.Cluster{a, b}, []string{label, networkLabel}, a, ns, svc, db)
	if err := lab.EnsureNamespace(ctx, a, gwNS); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.ApplyYAML(ctx, a, lab.GatewayAPIGVR("gateways"), lab.EastWestGatewayYAML(gwNS, gwName, "lab", 9000)); err != nil {
		t.Fatal(err)
	}
	if err := lab.GatewayProgrammed(ctx, a, gwNS, gwName, true, gwAddress); err != nil {
		t.Fatal(err)
	}
	// A tenant's ListenerSet holds the range's first port already.
	if err := lab.EnsureNamespace(ctx, a, tenant); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.ApplyYAML(ctx, a, lab.GatewayAPIGVR("listenersets"), lab.TenantListenerSetYAML(tenant, "mine", gwNS, gwName, first)); err != nil {
		t.Fatal(err)
	}
	ports := []corev1.ServicePort{
		{Name: "web", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), AppProtocol: ptr.To("http")},
		{Name: "tls", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443), AppProtocol: ptr.To("tls")},
		{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)},
	}
	pg := []corev1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)}}
	for _, s := range []lab.ExportedService{
		{Namespace: ns, Name: svc, Ports: ports, Pods: []lab.HeadlessPod{{Address: "198.51.100.81", Ready: true}}},
		{Namespace: ns, Name: db, Ports: pg, Pods: []lab.HeadlessPod{{Address: "198.51.100.82", Ready: true}}},
	} {
		if err := lab.CreateExportedService(ctx, a, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := lab.EnsureNamespace(ctx, b, ns); err != nil {
		t.Fatal(err)
	}
	for w, network := range map[*lab.Cluster]string{a: "east", b: "west"} {
		if err := lab.LabelCluster(ctx, mgmt, w.Name, networkLabel, network); err != nil {
			t.Fatal(err)
		}
		if err := lab.LabelCluster(ctx, mgmt, w.Name, label, "true"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetWithNetworks(set, label, "true", gwNS, gwName, httpPort, first, last)); err != nil {
		t.Fatal(err)
	}

	// The east-west objects in cluster-a: one listener per port, the TCP
	// ones on the lowest ports of the range the tenant's does not hold
	// (cart before db), a route per listener.
	setName, dbSet := "xcc-"+svc, "xcc-"+db
	ls := waitGatewayObject(t, a, "listenersets", ns, setName, func(u *unstructured.Unstructured) bool { return u != nil })
	if got, want := listenerPorts(ls), map[string]int64{"http-80": httpPort, "tls-443": 443, "tcp-5432": first + 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListenerSet %s/%s listeners %v, want %v", ns, setName, got, want)
	}
	dbLS := waitGatewayObject(t, a, "listenersets", ns, dbSet, func(u *unstructured.Unstructured) bool { return u != nil })
	if got, want := listenerPorts(dbLS), map[string]int64{"tcp-5432": first + 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListenerSet %s/%s listeners %v, want %v", ns, dbSet, got, want)
	}
	for res, name := range map[string]string{"httproutes": setName + "-http-80", "tlsroutes": setName + "-tls-443", "tcproutes": setName + "-tcp-5432"} {
		waitGatewayObject(t, a, res, ns, name, func(u *unstructured.Unstructured) bool { return u != nil })
	}

	// Allocation survives a restart: the ports are read from the member,
	// and a controller that knows nothing writes nothing anew.
	withController(t)
	waitExportConditions(t, a, ns, svc, map[string]string{"Ready": "True"})
	for name, before := range map[string]*unstructured.Unstructured{setName: ls, dbSet: dbLS} {
		after := waitGatewayObject(t, a, "listenersets", ns, name, func(u *unstructured.Unstructured) bool { return u != nil })
		if after.GetResourceVersion() != before.GetResourceVersion() {
			t.Errorf("ListenerSet %s/%s written again after a restart: %v, was %v", ns, name, listenerPorts(after), listenerPorts(before))
		}
	}

	// Until the gateway accepts the listeners, cluster-b gets nothing of
	// cluster-a; then the gateway's address on the listeners' ports.
	waitExportConditions(t, a, ns, svc, map[string]string{"CrossNetwork": "False/ListenerRefused"})
	if err := lab.ListenerSetAccepted(ctx, a, ns, setName); err != nil {
		t.Fatal(err)
	}
	waitImportedAddresses(t, b, ns, svc, lab.ClusterA, func(addrs []string) bool { return reflect.DeepEqual(addrs, []string{gwAddress}) })
	slices, err := lab.ImportedSlices(ctx, b, ns, svc, lab.ClusterA)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slicePorts(slices), map[string]int32{"web": httpPort, "tls": 443, "pg": first + 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("cluster-b's slices of cluster-a have ports %v, want the gateway's %v", got, want)
	}
	waitExportConditions(t, a, ns, svc, map[string]string{"CrossNetwork": "True/Routed"})

	// Failover: a gateway no longer Programmed leaves no dead address.
	if err := lab.GatewayProgrammed(ctx, a, gwNS, gwName, false, gwAddress); err != nil {
		t.Fatal(err)
	}
	waitImportedAddresses(t, b, ns, svc, lab.ClusterA, func(addrs []string) bool { return len(addrs) == 0 })
	waitExportConditions(t, a, ns, svc, map[string]string{"CrossNetwork": "False/GatewayNotReady"})

	// An export that goes takes its objects with it, and its port is free.
	if err := lab.Unexport(ctx, a, ns, db); err != nil {
		t.Fatal(err)
	}
	waitGatewayObject(t, a, "listenersets", ns, dbSet, func(u *unstructured.Unstructured) bool { return u == nil })
	waitGatewayObject(t, a, "tcproutes", ns, dbSet+"-tcp-5432", func(u *unstructured.Unstructured) bool { return u == nil })
	if u, err := lab.GatewayAPIObject(ctx, a, "listenersets", tenant, "mine"); err != nil || u == nil {
		t.Errorf("the tenant's ListenerSet: %v %v, want it kept", u != nil, err)
	}

	// The ClusterSet's deletion removes the east-west objects.
	if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
		t.Fatal(err)
	}
	waitGatewayObject(t, a, "listenersets", ns, setName, func(u *unstructured.Unstructured) bool { return u == nil })
	waitGatewayObject(t, a, "tcproutes", ns, setName+"-tcp-5432", func(u *unstructured.Unstructured) bool { return u == nil })
}

// networkLabel is the Cluster label naming a member's network.
const networkLabel = "xcc-dns.io/network"

// waitGatewayObject waits until the Gateway API object resource
// namespace/name of w (nil: none) is as ok wants, and returns it.
func waitGatewayObject(t *testing.T, w *lab.Cluster, resource, namespace, name string, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		u, err := lab.GatewayAPIObject(ctx, w, resource, namespace, name)
		if err == nil && ok(u) {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s/%s in %s: %v (err %v), not as wanted after %s", resource, namespace, name, w.Name, u != nil, err, answerTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// listenerPorts are the listeners of a ListenerSet, name to port.
func listenerPorts(u *unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	ls, _, _ := unstructured.NestedSlice(u.Object, "spec", "listeners")
	for _, l := range ls {
		m, _ := l.(map[string]any)
		p, _ := m["port"].(int64)
		out[fmt.Sprint(m["name"])] = p
	}
	return out
}

// slicePorts are the ports of EndpointSlices, name to port.
func slicePorts(slices []discoveryv1.EndpointSlice) map[string]int32 {
	out := map[string]int32{}
	for _, s := range slices {
		for _, p := range s.Ports {
			out[ptr.Deref(p.Name, "")] = ptr.Deref(p.Port, 0)
		}
	}
	return out
}

// cleanupClusterSet deletes, when t ends (before the cleanups registered
// earlier), the ClusterSet set, the labels of clusters, and the exported
// Services namespace/services of exporter.
func cleanupClusterSet(t *testing.T, set string, clusters []*lab.Cluster, labels []string, exporter *lab.Cluster, namespace string, services ...string) {
	t.Helper()
	mgmt := theLab.Management
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		for _, w := range clusters {
			for _, l := range labels {
				if err := lab.LabelCluster(ctx, mgmt, w.Name, l, ""); err != nil {
					t.Error(err)
				}
			}
		}
		for _, n := range services {
			if err := lab.DeleteExportedService(ctx, exporter, namespace, n); err != nil {
				t.Error(err)
			}
		}
	})
}

// withGatewayAPI installs the main module's standard-channel Gateway API
// CRDs into c for t, and uninstalls them, with every object of theirs,
// when t ends.
func withGatewayAPI(t *testing.T, c *lab.Cluster) {
	t.Helper()
	ctx := ctxFor(t)
	dir, err := lab.GatewayAPICRDDir(ctx, "..")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.UninstallGatewayAPI(ctx, c); err != nil {
			t.Error(err)
		}
	})
	if err := lab.InstallGatewayAPI(ctx, c, dir); err != nil {
		t.Fatal(err)
	}
}
