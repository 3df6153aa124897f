package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// hangNamespace holds, on the management cluster, the benchmark's
	// Clusters and GatewayDNS and, on cluster-a and cluster-b, its
	// gateway Service hangService.
	hangNamespace = "xcc-bench-hang"
	hangService   = "envoy"
	hangGDNS      = "hang"
	hangLabel     = "xcc-bench-hang"
	// hangTrialsEnv overrides defaultHangTrials, the address changes made
	// without and then with the hanging target.
	hangTrialsEnv     = "XCC_BENCH_HANG_TRIALS"
	defaultHangTrials = 10
	// hangChangeTimeout bounds one change's wait.
	hangChangeTimeout = 3 * time.Minute
	// hangPoll is how often the healthy targets are asked: the
	// resolution of the figures.
	hangPoll = 20 * time.Millisecond
)

// hangAddress is cluster-a's gateway address after change r (0: the first
// one). 198.18.0.0/15 is for benchmarks.
func hangAddress(r int) string { return fmt.Sprintf("198.18.240.%d", r+1) }

// testBenchHangingTarget measures how long a load-balancer address change
// of cluster-a's gateway takes to reach the slices of the healthy targets
// (cluster-a and cluster-b, both selected by one GatewayDNS): alone; with
// a third selected Cluster whose kubeconfig points at a server that
// accepts connections and never answers; and with cluster-c selected,
// written to, and then its API server frozen with SIGSTOP (a target that
// stops answering half way). Issue 14 asks that such a target never slow
// the others: the rows should be within noise.
func testBenchHangingTarget(t *testing.T) {
	requireBench(t)
	trials := defaultHangTrials
	if v := os.Getenv(hangTrialsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", hangTrialsEnv, v)
		}
		trials = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	mgmt, err := newBenchClients(theLab.Management)
	if err != nil {
		t.Fatal(err)
	}
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	aClients, err := newBenchClients(a)
	if err != nil {
		t.Fatal(err)
	}
	hanging, err := lab.StartHangingAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeHang(t, mgmt, hanging) })

	// The gateway Services, two healthy Clusters and the GatewayDNS.
	for w, addr := range map[*lab.Cluster]string{a: hangAddress(0), b: "198.18.241.1"} {
		if err := createHangService(ctx, w, addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgmt.ensureNamespace(ctx, hangNamespace); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*lab.Cluster{a, b} {
		if err := mgmt.createCluster(ctx, benchCluster{namespace: hangNamespace, name: w.Name,
			labels: map[string]any{hangLabel: "selected"}, w: w}); err != nil {
			t.Fatal(err)
		}
	}
	if err := createHangGatewayDNS(ctx, mgmt); err != nil {
		t.Fatal(err)
	}
	healthy := []*lab.Cluster{a, b}
	if _, err := waitHangAddress(ctx, healthy, hangAddress(0)); err != nil {
		t.Fatalf("first address: %v", err)
	}

	change := 0
	run := func(label string) []time.Duration {
		var took []time.Duration
		for range trials {
			change++
			addr := hangAddress(change)
			start := time.Now()
			if err := setHangGateway(ctx, aClients, a.Name, addr); err != nil {
				t.Fatal(err)
			}
			at, err := waitHangAddress(ctx, healthy, addr)
			if err != nil {
				t.Fatalf("%s, change %d: %v", label, change, err)
			}
			d := at.Sub(start)
			took = append(took, d)
			t.Logf("%s: change %d (%s) in both healthy targets after %s", label, change, addr, d.Round(time.Millisecond))
			time.Sleep(time.Second)
		}
		return took
	}
	without := run("without")
	// Deleting the GatewayDNS with no target hanging, then again.
	deleteAlone, err := timeHangDeletion(ctx, mgmt, healthy)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deletion, no target hanging: both healthy targets clean after %s", deleteAlone.Round(time.Millisecond))
	if err := waitGatewayDNSGone(ctx, mgmt, hangNamespace, hangGDNS, hangChangeTimeout); err != nil {
		t.Fatal(err)
	}
	if err := createHangGatewayDNS(ctx, mgmt); err != nil {
		t.Fatal(err)
	}
	if _, err := waitHangAddress(ctx, healthy, hangAddress(change)); err != nil {
		t.Fatalf("GatewayDNS made again: %v", err)
	}

	// The hanging target: selected, so it is a source and a target.
	kc, err := hanging.Kubeconfig("hanging", a)
	if err != nil {
		t.Fatal(err)
	}
	if err := createHangingCluster(ctx, mgmt, hanging, kc); err != nil {
		t.Fatal(err)
	}
	// Let the controller meet it (and time out on it) before measuring.
	for end := time.Now().Add(time.Minute); hanging.Accepted() == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the controller never connected to the hanging API server")
		}
	}
	t.Logf("the controller connected to the hanging API server; waiting 15 s before measuring")
	time.Sleep(15 * time.Second)
	with := run("with")
	status, err := lab.GatewayDNSClusters(ctx, theLab.Management, hangNamespace, hangGDNS)
	if err == nil {
		t.Logf("status of the hanging Cluster: %s: %s", status["hanging"].Reason, status["hanging"].Message)
	}
	accepted := hanging.Accepted()
	if err := mgmt.deleteCluster(ctx, hangNamespace, "hanging"); err != nil {
		t.Fatal(err)
	}

	// A target that answered and then stops: cluster-c, selected and
	// written like the others, then its API server frozen (SIGSTOP).
	c := theLab.Workload(lab.ClusterC)
	if err := createHangService(ctx, c, "198.18.242.1"); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.createCluster(ctx, benchCluster{namespace: hangNamespace, name: c.Name,
		labels: map[string]any{hangLabel: "selected"}, w: c}); err != nil {
		t.Fatal(err)
	}
	if _, err := waitHangAddress(ctx, []*lab.Cluster{a, b, c}, hangAddress(change)); err != nil {
		t.Fatalf("cluster-c as a target: %v", err)
	}
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Thaw) // before removeHang, which needs it
	t.Logf("kube-apiserver of %s frozen (SIGSTOP)", c.Name)
	frozen := run("frozen")
	// Deleting the GatewayDNS while cluster-c is frozen: the healthy
	// targets are cleaned at once, the finalizer waits for cluster-c.
	deleteFrozen, err := timeHangDeletion(ctx, mgmt, healthy)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deletion, cluster-c frozen: both healthy targets clean after %s", deleteFrozen.Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	ready, err := hangReady(ctx, mgmt)
	if err != nil {
		t.Fatalf("GatewayDNS gone while cluster-c is frozen: %v", err)
	}
	t.Logf("5 s later, cluster-c still frozen: the GatewayDNS is still there, Ready %s", ready)
	thawed := time.Now()
	c.Thaw()
	if err := waitGatewayDNSGone(ctx, mgmt, hangNamespace, hangGDNS, hangChangeTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("deletion, cluster-c frozen: GatewayDNS gone %s after cluster-c was thawed", time.Since(thawed).Round(time.Millisecond))

	var tbl strings.Builder
	fmt.Fprintf(&tbl, "Propagation of a gateway address change to the slices of two healthy targets (cluster-a, cluster-b), "+
		"with a third selected target that never answers (%d changes each, %s poll)\n", trials, hangPoll)
	fmt.Fprintf(&tbl, "| third target | changes | p50 | max |\n|:--|--:|--:|--:|\n")
	for _, r := range []struct {
		what string
		d    []time.Duration
	}{
		{"none", without},
		{"never answered (accepts TCP, says nothing)", with},
		{"answered, then frozen (SIGSTOP)", frozen},
	} {
		fmt.Fprintf(&tbl, "| %s | %d | %s | %s |\n", r.what, len(r.d), fmtDuration(percentile(r.d, 50)), fmtDuration(percentile(r.d, 100)))
	}
	fmt.Fprintf(&tbl, "connections the never-answering server accepted: %d\n", accepted)
	fmt.Fprintf(&tbl, "Deleting the GatewayDNS until both healthy targets hold none of its slices: no target hanging %s; cluster-c frozen %s\n",
		fmtDuration(deleteAlone), fmtDuration(deleteFrozen))
	report(t, tbl.String())
}

// createHangGatewayDNS creates the benchmark's GatewayDNS, selecting the
// Clusters labelled hangLabel=selected.
func createHangGatewayDNS(ctx context.Context, mgmt benchClients) error {
	gd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lab.GatewayDNSGVR.GroupVersion().String(),
		"kind":       "GatewayDNS",
		"metadata":   map[string]any{"name": hangGDNS, "namespace": hangNamespace},
		"spec": map[string]any{
			"clusterSelector": map[string]any{"matchLabels": map[string]any{hangLabel: "selected"}},
			"service":         hangNamespace + "/" + hangService,
			"resolutionType":  "loadBalancer",
		},
	}}
	_, err := mgmt.dyn.Resource(lab.GatewayDNSGVR).Namespace(hangNamespace).Create(ctx, gd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create GatewayDNS %s/%s: %w", hangNamespace, hangGDNS, err)
	}
	return nil
}

// timeHangDeletion deletes the benchmark's GatewayDNS and returns how
// long it took until the healthy targets held none of its slices.
func timeHangDeletion(ctx context.Context, mgmt benchClients, healthy []*lab.Cluster) (time.Duration, error) {
	start := time.Now()
	if err := lab.DeleteGatewayDNS(ctx, theLab.Management, hangNamespace, hangGDNS); err != nil {
		return 0, err
	}
	sel := "kubernetes.io/service-name=" + hangGDNS + ".x"
	at, err := pollUntil(ctx, hangPoll, hangChangeTimeout, func() error {
		for _, w := range healthy {
			list, err := w.Client.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return err
			}
			if n := len(list.Items); n > 0 {
				return fmt.Errorf("%s still holds %d slices of %s/%s", w.Name, n, hangNamespace, hangGDNS)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("deleting GatewayDNS %s/%s: %w", hangNamespace, hangGDNS, err)
	}
	return at.Sub(start), nil
}

// hangReady returns the reason and message of the Ready condition of the
// benchmark's GatewayDNS.
func hangReady(ctx context.Context, mgmt benchClients) (string, error) {
	u, err := mgmt.dyn.Resource(lab.GatewayDNSGVR).Namespace(hangNamespace).Get(ctx, hangGDNS, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get GatewayDNS %s/%s: %w", hangNamespace, hangGDNS, err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" {
			return fmt.Sprintf("%v: %v", m["reason"], m["message"]), nil
		}
	}
	return "(none)", nil
}

// createHangService creates hangService, a LoadBalancer Service, on w
// with load-balancer address addr.
func createHangService(ctx context.Context, w *lab.Cluster, addr string) error {
	c, err := newBenchClients(w)
	if err != nil {
		return err
	}
	if err := c.ensureNamespace(ctx, hangNamespace); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: hangService, Namespace: hangNamespace},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: new(false),
			Ports:                         []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := c.kube.CoreV1().Services(hangNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s/%s on %s: %w", hangNamespace, hangService, w.Name, err)
	}
	return setHangGateway(ctx, c, w.Name, addr)
}

// setHangGateway sets the load-balancer address of hangService on cluster
// name.
func setHangGateway(ctx context.Context, c benchClients, name, addr string) error {
	patch := fmt.Sprintf(`{"status":{"loadBalancer":{"ingress":[{"ip":%q,"ipMode":"VIP"}]}}}`, addr)
	if _, err := c.kube.CoreV1().Services(hangNamespace).Patch(ctx, hangService, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set load-balancer address of %s/%s on %s to %s: %w", hangNamespace, hangService, name, addr, err)
	}
	return nil
}

// waitHangAddress polls the healthy targets until each holds cluster-a's
// gateway slice with addr; it returns when the last one did.
func waitHangAddress(ctx context.Context, targets []*lab.Cluster, addr string) (time.Time, error) {
	sel := fmt.Sprintf("kubernetes.io/service-name=%s.x,xcc-dns.io/source-cluster=%s,xcc-dns.io/record=gateway", hangGDNS, lab.ClusterA)
	pending := map[string]bool{}
	for _, w := range targets {
		pending[w.Name] = true
	}
	return pollUntil(ctx, hangPoll, hangChangeTimeout, func() error {
		for _, w := range targets {
			if pending[w.Name] && hasHangAddress(ctx, w, sel, addr) {
				delete(pending, w.Name)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("%s not in the slices of %v", addr, pending)
		}
		return nil
	})
}

// hasHangAddress reports whether w holds a slice of the benchmark's
// GatewayDNS, selected by sel, with addr.
func hasHangAddress(ctx context.Context, w *lab.Cluster, sel, addr string) bool {
	list, err := w.Client.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return false
	}
	for _, s := range list.Items {
		if s.Annotations["connectivity.tanzu.vmware.com/gateway-dns-ref"] != hangNamespace+"/"+hangGDNS {
			continue
		}
		for _, e := range s.Endpoints {
			if slices.Contains(e.Addresses, addr) {
				return true
			}
		}
	}
	return false
}

// createHangingCluster creates Cluster hanging, selected, and its
// kubeconfig Secret pointing at the hanging API server.
func createHangingCluster(ctx context.Context, mgmt benchClients, h *lab.HangingAPIServer, kubeconfig []byte) error {
	port, _ := strconv.Atoi(h.Addr[strings.LastIndex(h.Addr, ":")+1:])
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lab.ClusterGVR.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": "hanging", "namespace": hangNamespace, "labels": map[string]any{hangLabel: "selected"}},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": theLab.ControlPlaneHostOf("hanging"), "port": int64(port)},
		},
	}}
	if _, err := mgmt.dyn.Resource(lab.ClusterGVR).Namespace(hangNamespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Cluster %s/hanging: %w", hangNamespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hanging-kubeconfig", Namespace: hangNamespace,
			Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "hanging"}},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{lab.KubeconfigSecretKey: kubeconfig},
	}
	if _, err := mgmt.kube.CoreV1().Secrets(hangNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Secret %s/hanging-kubeconfig: %w", hangNamespace, err)
	}
	return nil
}

// removeHang deletes the hanging Cluster first (a GatewayDNS being
// deleted waits for every selected cluster it cannot reach), then the
// GatewayDNS, waiting for its finalizer, then the rest.
func removeHang(t *testing.T, mgmt benchClients, h *lab.HangingAPIServer) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := mgmt.deleteCluster(ctx, hangNamespace, "hanging"); err != nil {
		t.Error(err)
	}
	h.Close()
	if err := lab.DeleteGatewayDNS(ctx, theLab.Management, hangNamespace, hangGDNS); err != nil {
		t.Error(err)
	}
	if err := waitGatewayDNSGone(ctx, mgmt, hangNamespace, hangGDNS, 3*time.Minute); err != nil {
		t.Error(err)
	}
	for _, name := range []string{lab.ClusterA, lab.ClusterB, lab.ClusterC} {
		if err := mgmt.deleteCluster(ctx, hangNamespace, name); err != nil {
			t.Error(err)
		}
		err := theLab.Workload(name).Client.CoreV1().Services(hangNamespace).Delete(ctx, hangService, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}
