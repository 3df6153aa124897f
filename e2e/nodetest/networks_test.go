package nodetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// TestMCSNetworks runs a ClusterSet across two networks on real nodes:
// the router stops routing between the pod ranges of cluster-a and
// cluster-b, which are labelled networks east and west. cluster-a
// exports a Service with an HTTP port and a plain TCP port; Traefik in
// cluster-a is the east-west Gateway (the lab copies the controller's
// ListenerSet onto a second Gateway of it, Traefik having none). A pod of
// cluster-b, which cannot reach cluster-a's pod, connects by the
// clusterset name and is answered by that pod: cluster-b's slices of
// cluster-a hold the gateway's address on its listener ports, and
// Traefik's access log holds the request.
func TestMCSNetworks(t *testing.T) {
	ctx := context.Background()
	mgmt, a, b := nl.Clusters[0], nl.Cluster(lab.ClusterA), nl.Cluster(lab.ClusterB)
	const set, ns, svc, network = "networks", "nets", "echo", "xcc-dns.io/network"
	t.Cleanup(func() { cleanupNetworks(t, mgmt, a, b, set, ns, network) })
	version := "dns-version." + lab.ClusterSetZone
	askUntil(t, lab.ClusterB, []want{{"TXT", version, "NOERROR", []string{`"1.0.0"`}}}, 4*time.Minute)
	eachDNSPodSays(t, b, servedBy[lab.ClusterSetServe])

	// The exported Service: its HTTP port goes through an HTTP listener,
	// its plain TCP port (the same server) through a TCP listener.
	if err := lab.CreateMCSService(ctx, a, ns, svc, 80); err != nil {
		t.Fatal(err)
	}
	setEastWestPorts(t, a, ns, svc)
	pods, err := a.PodsOf(ctx, ns, svc)
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods of %s/%s in cluster-a: %v %v", ns, svc, pods, err)
	}
	pod, podIP := onlyPod(pods)
	if err := lab.EnsureNamespace(ctx, b.Cluster, ns); err != nil {
		t.Fatal(err)
	}

	// Two networks: first the pod is reachable, then it is not.
	isolate(t, a, b, pod, podIP+":8080")

	// The east-west Gateway, the networks, the ClusterSet, the export.
	if err := lab.EnsureNamespace(ctx, a.Cluster, lab.EastWestNamespace); err != nil {
		t.Fatal(err)
	}
	for _, gw := range []string{lab.EastWestGateway, lab.EastWestMerged} {
		if _, err := lab.ApplyYAML(ctx, a.Cluster, lab.GatewayAPIGVR("gateways"), lab.EastWestGatewayOfTraefik(gw)); err != nil {
			t.Fatal(err)
		}
	}
	for c, n := range map[*lab.NodeCluster]string{a: "east", b: "west"} {
		if err := lab.LabelCluster(ctx, mgmt.Cluster, c.Name, network, n); err != nil {
			t.Fatal(err)
		}
	}
	cs := lab.ClusterSetWithNetworks(set, lab.SelectorLabel, lab.SelectorValue, lab.EastWestNamespace, lab.EastWestGateway,
		lab.EastWestHTTPPort, lab.EastWestTCPPort, lab.EastWestTCPPort)
	if _, err := lab.ApplyYAML(ctx, mgmt.Cluster, lab.ClusterSetGVR, cs); err != nil {
		t.Fatal(err)
	}
	if err := lab.Export(ctx, a.Cluster, ns, svc); err != nil {
		t.Fatal(err)
	}

	gatewayAddr := mergeAndProgram(t, a, ns, "xcc-"+svc, []string{"http-80", "tcp-9000"})
	if gatewayAddr != a.GatewayAddress() {
		t.Errorf("the east-west Gateway's status address is %s, want Traefik's load-balancer address %s", gatewayAddr, a.GatewayAddress())
	}
	slicesOnGateway(t, b, ns, svc, gatewayAddr)
	poll(t, "ServiceExport "+ns+"/"+svc+" of cluster-a CrossNetwork", time.Minute, func() error {
		conds, err := lab.ExportConditions(ctx, a.Cluster, ns, svc)
		if err == nil && conds["CrossNetwork"] != "True/Routed" {
			err = fmt.Errorf("conditions %v", conds)
		}
		return err
	})

	// The pod of cluster-b connects by name through both ports.
	x := lab.ClusterSetHost(ns, svc)
	for _, url := range []string{"http://" + x + "/", "http://" + x + ":9000/"} {
		var out string
		poll(t, "GET "+url+" from cluster-b", 2*time.Minute, func() error {
			var err error
			out, err = nl.RunProbe(ctx, b, "mcs-get", "get", "1", url)
			if err == nil && strings.TrimSpace(out) != "200 hello from "+pod {
				err = fmt.Errorf("answer %q", out)
			}
			return err
		})
		t.Logf("networks: GET %s from a pod of cluster-b: %s", url, strings.TrimSpace(out))
	}
	traefikRouted(t, a, "xcc-"+svc+"-http-80-merged")
}

// cleanupNetworks removes what TestMCSNetworks made: the ClusterSet set,
// the network labels, namespace ns of a and b and the east-west
// Gateways' namespace of a.
func cleanupNetworks(t *testing.T, mgmt, a, b *lab.NodeCluster, set, ns, network string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := lab.DeleteClusterSet(ctx, mgmt.Cluster, lab.ClusterNamespace, set); err != nil {
		t.Error(err)
	}
	for _, c := range []*lab.NodeCluster{a, b} {
		if err := lab.LabelCluster(ctx, mgmt.Cluster, c.Name, network, ""); err != nil {
			t.Error(err)
		}
		if err := c.DeletePod(ctx, "mcs-get"); err != nil {
			t.Error(err)
		}
		if err := c.DeleteNamespace(ctx, ns, 2*time.Minute); err != nil {
			t.Error(err)
		}
	}
	if err := a.DeleteNamespace(ctx, lab.EastWestNamespace, 2*time.Minute); err != nil {
		t.Error(err)
	}
}

// isolate has the lab's router stop routing between the pod ranges of a
// and b until the test ends; a pod of b connects to direct, the address
// of a's pod, before (it must) and after (it must not).
func isolate(t *testing.T, a, b *lab.NodeCluster, pod, direct string) {
	t.Helper()
	ctx := context.Background()
	if out, err := nl.RunProbe(ctx, b, "mcs-get", "tcp", direct); err != nil {
		t.Fatalf("connect from %s to %s's pod %s before the networks part: %q %v", b.Name, a.Name, direct, out, err)
	}
	undo, err := lab.IsolatePods(ctx, a, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := undo(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if out, err := nl.RunProbe(ctx, b, "mcs-get", "tcp", direct); err == nil {
		t.Fatalf("a pod of %s still connects to %s's pod %s: %q", b.Name, a.Name, direct, out)
	}
	t.Logf("networks: %s's pods no longer reach %s's pod %s (%s)", b.Name, a.Name, pod, direct)
}

// slicesOnGateway waits until b's derived Service of ns/svc has slices
// of cluster-a only, holding the gateway's address addr on the
// listener ports of web (HTTP) and raw (TCP).
func slicesOnGateway(t *testing.T, b *lab.NodeCluster, ns, svc, addr string) {
	t.Helper()
	ctx := context.Background()
	poll(t, b.Name+"'s slices of "+ns+"/"+svc+" holding the gateway's address", 2*time.Minute, func() error {
		d, err := lab.GetDerived(ctx, b.Cluster, ns, svc)
		switch {
		case err != nil:
			return err
		case d == nil:
			return fmt.Errorf("no derived Service")
		case !slices.Equal(d.Sources[lab.ClusterA], []string{addr}) || len(d.Sources) != 1:
			return fmt.Errorf("slices by source cluster %v, want %s [%s]", d.Sources, lab.ClusterA, addr)
		}
		ss, err := lab.ImportedSlices(ctx, b.Cluster, ns, svc, lab.ClusterA)
		if err != nil {
			return err
		}
		ports := map[string]int32{}
		for _, s := range ss {
			for _, p := range s.Ports {
				ports[ptr.Deref(p.Name, "")] = ptr.Deref(p.Port, 0)
			}
		}
		if want := map[string]int32{"web": lab.EastWestHTTPPort, "raw": lab.EastWestTCPPort}; !maps.Equal(ports, want) {
			return fmt.Errorf("slices of %s have ports %v, want the gateway's listener ports %v", lab.ClusterA, ports, want)
		}
		t.Logf("networks: derived Service %s/%s ports %v, slices by source cluster %v on ports %v", ns, d.Name, d.Ports, d.Sources, ports)
		return nil
	})
}

// setEastWestPorts gives the Service ns/name of c (CreateMCSService's)
// two ports to the same server: web (appProtocol http) 80 and raw
// (plain TCP) 9000.
func setEastWestPorts(t *testing.T, c *lab.NodeCluster, ns, name string) {
	t.Helper()
	ctx := context.Background()
	s, err := c.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	http := "http"
	s.Spec.Ports = []corev1.ServicePort{
		{Name: "web", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), AppProtocol: &http},
		{Name: "raw", Protocol: corev1.ProtocolTCP, Port: 9000, TargetPort: intstr.FromInt32(8080)},
	}
	if _, err := c.Client.CoreV1().Services(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func onlyPod(pods map[string]string) (string, string) {
	for n, ip := range pods {
		return n, ip
	}
	return "", ""
}

// mergeAndProgram waits for the controller's ListenerSet ns/set in c to
// hold the listeners want, merges it into lab.EastWestMerged, waits
// until Traefik has accepted and programmed the merged listeners with
// their routes, and writes the ListenerSet's status for those listeners;
// it returns the Gateway's one status address.
func mergeAndProgram(t *testing.T, c *lab.NodeCluster, ns, set string, want []string) string {
	t.Helper()
	ctx := context.Background()
	var merged map[string]string
	var addrs []string
	poll(t, "Traefik programming the listeners "+strings.Join(want, ", ")+" of "+ns+"/"+set, 2*time.Minute, func() error {
		var err error
		if merged, err = lab.MergeListenerSet(ctx, c.Cluster, ns, set); err != nil {
			return err
		}
		if got := slices.Sorted(maps.Keys(merged)); !slices.Equal(got, want) {
			return fmt.Errorf("ListenerSet listeners %v, want %v", got, want)
		}
		why, as, err := lab.MergedListenersProgrammed(ctx, c.Cluster, slices.Sorted(maps.Values(merged)))
		addrs = as
		if err == nil && why != "" {
			err = fmt.Errorf("%s", why)
		}
		return err
	})
	only := map[string]bool{}
	for _, l := range want {
		only[l] = true
	}
	if err := lab.ListenerSetListenersAccepted(ctx, c.Cluster, ns, set, only); err != nil {
		t.Fatal(err)
	}
	t.Logf("networks: Traefik programmed %v of ListenerSet %s/%s; Gateway addresses %v", merged, ns, set, addrs)
	if len(addrs) != 1 {
		t.Fatalf("the east-west Gateway's status addresses %v, want one", addrs)
	}
	return addrs[0]
}

// traefikRouted checks that Traefik's access log in c holds a request
// routed by the router Traefik made of the route named route.
func traefikRouted(t *testing.T, c *lab.NodeCluster, route string) {
	t.Helper()
	ctx := context.Background()
	pods, err := c.Client.CoreV1().Pods(lab.GatewayNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + lab.TraefikName})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("Traefik's pod in %s: %v", c.Name, err)
	}
	raw, err := c.Client.CoreV1().Pods(lab.GatewayNamespace).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, route) && strings.Contains(line, `"GET / HTTP/1.1" 200`) {
			t.Logf("networks: Traefik's access log: %s", line)
			return
		}
	}
	t.Errorf("no GET routed by %s in Traefik's access log of %s", route, c.Name)
}
