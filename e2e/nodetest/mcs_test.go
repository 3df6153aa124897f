package nodetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// TestMCS runs the Multi-Cluster Services API on real nodes: a ClusterSet
// of cluster-a and cluster-b; a ClusterIP Service backed by a pod in each
// cluster, exported from both; a headless Service of a StatefulSet
// exported from cluster-a. A pod of cluster-b resolves the clusterset
// names through its own cluster DNS (resolv.conf, kube-dns Service,
// the Corefile patched by the workload chart's job) and connects: through
// cluster-b's ClusterSetIP, where kube-proxy balances over the derived
// Service's EndpointSlices (cluster-a's pod across the router, pod
// addresses being routed between the clusters, and cluster-b's own), and
// to cluster-a's StatefulSet pod by its clusterset hostname. A newer
// export with another port is in Conflict, and the import's port then
// reaches only the pods of the cluster that exposes it; unexport removes the imports
// and their names. It times export to the first answer in the pod and
// unexport to NXDOMAIN. Everything it makes is removed at the end.
func TestMCS(t *testing.T) {
	ctx := context.Background()
	mgmt, a, b := nl.Clusters[0], nl.Cluster(lab.ClusterA), nl.Cluster(lab.ClusterB)
	const set, ns, echo, db = "prod", "store", "echo", "db"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, mgmt.Cluster, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		for _, c := range []*lab.NodeCluster{a, b} {
			for _, p := range []string{"mcs-until", "mcs-until-xcc", "mcs-get", "mcs-query"} {
				if err := c.DeletePod(ctx, p); err != nil {
					t.Error(err)
				}
			}
			if err := c.DeleteNamespace(ctx, ns, 2*time.Minute); err != nil {
				t.Error(err)
			}
		}
	})

	// The cluster DNS forwards the zone once the kubelet has refreshed
	// the patched Corefile in its pods (up to two minutes after the
	// install): the zone's own version name answers first.
	// Each of its two replicas reloads on its own, and the timings below
	// mean something only once both have.
	version := "dns-version." + lab.ClusterSetZone
	askUntil(t, lab.ClusterB, []want{{"TXT", version, "NOERROR", []string{`"1.0.0"`}}}, 4*time.Minute)
	eachDNSPodSays(t, b, servedBy[lab.ClusterSetServe])
	t.Logf("mcs: both cluster DNS pods of cluster-b forward %s", lab.ClusterSetZone)

	for _, c := range []*lab.NodeCluster{a, b} {
		if err := lab.CreateMCSService(ctx, c, ns, echo, 80); err != nil {
			t.Fatal(err)
		}
	}
	if err := lab.CreateMCSHeadless(ctx, a, ns, db, 2); err != nil {
		t.Fatal(err)
	}
	echoA, err := a.PodsOf(ctx, ns, echo)
	if err != nil {
		t.Fatal(err)
	}
	echoB, err := b.PodsOf(ctx, ns, echo)
	if err != nil {
		t.Fatal(err)
	}
	dbPods, err := a.PodsOf(ctx, ns, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(echoA) != 1 || len(echoB) != 1 || dbPods["db-0"] == "" || dbPods["db-1"] == "" {
		t.Fatalf("pods: echo in cluster-a %v, in cluster-b %v, db %v", echoA, echoB, dbPods)
	}
	t.Logf("pods: echo %v in cluster-a, %v in cluster-b; db %v in cluster-a", echoA, echoB, dbPods)

	// The ClusterSet first, so that what is timed below is export to
	// answer, not membership.
	if _, err := lab.ApplyYAML(ctx, mgmt.Cluster, lab.ClusterSetGVR, lab.ClusterSetYAML(set)); err != nil {
		t.Fatal(err)
	}
	poll(t, "ClusterSet "+set+" with two members", time.Minute, func() error {
		n, err := lab.ClusterSetMembers(ctx, mgmt.Cluster, lab.ClusterNamespace, set)
		if err == nil && n != 2 {
			err = fmt.Errorf("%d members", n)
		}
		return err
	})

	// Export the ClusterIP Service from both clusters while a pod of
	// cluster-b asks its name every 100 ms.
	x := lab.ClusterSetHost(ns, echo)
	var exported time.Time
	timed(t, b, "export of "+ns+"/"+echo+" from both clusters", "A", x, "NOERROR", nil, func() {
		exported = time.Now()
		for _, c := range []*lab.NodeCluster{a, b} {
			if err := lab.Export(ctx, c.Cluster, ns, echo); err != nil {
				t.Fatal(err)
			}
		}
	})

	var impB *lab.Import
	poll(t, "ServiceImport "+ns+"/"+echo+" of cluster-b with both clusters", time.Minute, func() error {
		impB, err = lab.GetImport(ctx, b.Cluster, ns, echo)
		switch {
		case err != nil:
			return err
		case impB == nil:
			return fmt.Errorf("none")
		case impB.Type != "ClusterSetIP" || len(impB.IPs) != 1 || !slices.Equal(impB.Clusters, []string{lab.ClusterA, lab.ClusterB}) || !slices.Equal(impB.Ports, []string{"http/TCP/80"}):
			return fmt.Errorf("%+v", impB)
		}
		return nil
	})
	impA, err := lab.GetImport(ctx, a.Cluster, ns, echo)
	if err != nil || impA == nil || len(impA.IPs) != 1 {
		t.Fatalf("ServiceImport %s/%s of cluster-a: %+v %v", ns, echo, impA, err)
	}
	clusterSetIP := impB.IPs[0]
	t.Logf("mcs: ClusterSetIP of %s/%s: %s in cluster-b, %s in cluster-a", ns, echo, clusterSetIP, impA.IPs[0])
	if clusterSetIP == impA.IPs[0] {
		t.Errorf("both members have the ClusterSetIP %s, want each its own (their service ranges differ)", clusterSetIP)
	}
	// The derived Service holds the ClusterSetIP, and the slices kube-proxy
	// reads hold both clusters' pods, each labelled with its source.
	poll(t, "derived Service and EndpointSlices of "+ns+"/"+echo+" in cluster-b", time.Minute, func() error {
		d, err := lab.GetDerived(ctx, b.Cluster, ns, echo)
		switch {
		case err != nil:
			return err
		case d == nil:
			return fmt.Errorf("no derived Service")
		case !strings.HasPrefix(d.Name, "derived-") || !slices.Equal(d.ClusterIPs, []string{clusterSetIP}) || !slices.Equal(d.Ports, []string{"http/TCP/80"}):
			return fmt.Errorf("derived Service %+v, want ClusterIPs [%s] and port http/TCP/80", d, clusterSetIP)
		case !slices.Equal(d.Sources[lab.ClusterA], values(echoA)) || !slices.Equal(d.Sources[lab.ClusterB], values(echoB)) || len(d.Sources) != 2:
			return fmt.Errorf("slices of %s by source cluster %v, want %s %v and %s %v", d.Name, d.Sources, lab.ClusterA, values(echoA), lab.ClusterB, values(echoB))
		}
		t.Logf("mcs: derived Service %s/%s (ClusterIP %s), slices by source cluster %v", ns, d.Name, clusterSetIP, d.Sources)
		return nil
	})
	// Every answer the pod gets is cluster-b's ClusterSetIP.
	askUntil(t, lab.ClusterB, []want{
		{"A", x, "NOERROR", []string{clusterSetIP}},
		{"SRV", "_http._tcp." + x, "NOERROR", []string{"80 " + x + "."}},
		{"A", lab.ClusterA + "." + x, "NXDOMAIN", nil},
	}, time.Minute)
	// What an operator sees of it: explain of the name from cluster-b,
	// and the ClusterSet's series on the controller's /metrics.
	explainClusterSetName(t, lab.ClusterB, set, ns, echo, clusterSetIP, []string{lab.ClusterA, lab.ClusterB})
	clusterSetMetrics(t, set, 2)

	// Connections through the ClusterSetIP by name (Go's resolver, the
	// pod's resolv.conf and search list), a new one per request: kube-proxy
	// of cluster-b sends them to both clusters' pods.
	url := "http://" + x + "/"
	var got map[string]int
	poll(t, "GETs of "+url+" from cluster-b reaching both clusters' pods", 2*time.Minute, func() error {
		var err error
		if got, err = getAnswers(ctx, b, url); err != nil {
			return err
		}
		for _, pod := range append(slices.Collect(maps.Keys(echoA)), slices.Collect(maps.Keys(echoB))...) {
			if got["200 hello from "+pod] == 0 {
				return fmt.Errorf("no answer from %s in %v", pod, got)
			}
		}
		if len(got) != 2 {
			return fmt.Errorf("answers %v, want only the two pods'", got)
		}
		return nil
	})
	t.Logf("mcs: 20 GETs of %s from a pod of cluster-b (%s after export): %v", url, time.Since(exported).Round(100*time.Millisecond), got)

	// The headless Service of cluster-a: each pod by its hostname and
	// cluster id, connected to by that name.
	y := lab.ClusterSetHost(ns, db)
	db0 := "db-0." + lab.ClusterA + "." + y
	timed(t, b, "export of headless "+ns+"/"+db+" from cluster-a", "A", db0, "NOERROR", []string{dbPods["db-0"]}, func() {
		if err := lab.Export(ctx, a.Cluster, ns, db); err != nil {
			t.Fatal(err)
		}
	})
	imp, err := lab.GetImport(ctx, b.Cluster, ns, db)
	if err != nil || imp == nil || imp.Type != "Headless" || len(imp.IPs) != 0 || !slices.Equal(imp.Clusters, []string{lab.ClusterA}) {
		t.Fatalf("ServiceImport %s/%s of cluster-b: %+v %v, want Headless without ips, from %s", ns, db, imp, err, lab.ClusterA)
	}
	askUntil(t, lab.ClusterB, []want{
		{"A", y, "NOERROR", values(dbPods)},
		{"A", "db-1." + lab.ClusterA + "." + y, "NOERROR", []string{dbPods["db-1"]}},
		{"SRV", "_pg._tcp." + y, "NOERROR", []string{"5432 " + db0 + ".", "5432 db-1." + lab.ClusterA + "." + y + "."}},
	}, time.Minute)
	out, err := nl.RunProbe(ctx, b, "mcs-get", "get", "1", "http://"+db0+":5432/")
	if err != nil || strings.TrimSpace(out) != "200 hello from db-0" {
		t.Fatalf("GET http://%s:5432/ from cluster-b: %q %v, want 200 hello from db-0", db0, out, err)
	}
	t.Logf("mcs: GET http://%s:5432/ from a pod of cluster-b: %s", db0, strings.TrimSpace(out))

	byClusterDNS(t, b, []want{
		{"A", x, "NOERROR", []string{clusterSetIP}},
		{"SRV", "_http._tcp." + x, "NOERROR", []string{"80 " + x + "."}},
		{"A", lab.ClusterA + "." + x, "NXDOMAIN", nil},
		{"A", y, "NOERROR", values(dbPods)},
		{"A", db0, "NOERROR", []string{dbPods["db-0"]}},
	}, "http://"+db0+":5432/", "200 hello from db-0")

	// A newer export of echo from cluster-b with another port: Conflict
	// on it; the import keeps the older export's port.
	if err := lab.Unexport(ctx, b.Cluster, ns, echo); err != nil {
		t.Fatal(err)
	}
	if err := lab.SetMCSServicePort(ctx, b, ns, echo, 8000); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // creationTimestamp has a resolution of a second
	if err := lab.Export(ctx, b.Cluster, ns, echo); err != nil {
		t.Fatal(err)
	}
	var conds map[string]string
	poll(t, "ServiceExport "+ns+"/"+echo+" of cluster-b in Conflict", time.Minute, func() error {
		conds, err = lab.ExportConditions(ctx, b.Cluster, ns, echo)
		if err == nil && (!strings.HasPrefix(conds["Conflict"], "True/") || !strings.HasPrefix(conds["Valid"], "True/")) {
			err = fmt.Errorf("conditions %v", conds)
		}
		return err
	})
	condsA, err := lab.ExportConditions(ctx, a.Cluster, ns, echo)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mcs: conditions of the newer export (cluster-b, port 8000) %v, of the older (cluster-a, port 80) %v", conds, condsA)
	imp, err = lab.GetImport(ctx, b.Cluster, ns, echo)
	if err != nil || imp == nil || !slices.Equal(imp.Ports, []string{"http/TCP/80"}) {
		t.Fatalf("ServiceImport %s/%s of cluster-b in conflict: %+v %v, want the older port http/TCP/80", ns, echo, imp, err)
	}
	// Port 80 of the import reaches only the pods of the cluster whose
	// Service exposes 80: cluster-b's http is now 8000.
	poll(t, "GETs of "+url+" from cluster-b reaching only cluster-a's pods", 2*time.Minute, func() error {
		var err error
		if got, err = getAnswers(ctx, b, url); err != nil {
			return err
		}
		for answer := range got {
			pod := strings.TrimPrefix(answer, "200 hello from ")
			if _, ok := echoA[pod]; !ok {
				return fmt.Errorf("answers %v, want only cluster-a's pods %v", got, slices.Collect(maps.Keys(echoA)))
			}
		}
		return nil
	})
	t.Logf("mcs: 20 GETs of %s from cluster-b with cluster-b's port in conflict: %v", url, got)

	// Unexport everything: the imports go, and the names with them.
	timed(t, b, "unexport of every ServiceExport", "A", x, "NXDOMAIN", nil, func() {
		for _, e := range []struct {
			c    *lab.NodeCluster
			name string
		}{{a, echo}, {b, echo}, {a, db}} {
			if err := lab.Unexport(ctx, e.c.Cluster, ns, e.name); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, c := range []*lab.NodeCluster{a, b} {
		for _, name := range []string{echo, db} {
			poll(t, "ServiceImport "+ns+"/"+name+" of "+c.Name+" gone", time.Minute, func() error {
				imp, err := lab.GetImport(ctx, c.Cluster, ns, name)
				if err == nil && imp != nil {
					err = fmt.Errorf("still there: %+v", imp)
				}
				return err
			})
		}
		poll(t, "derived Service of "+ns+"/"+echo+" of "+c.Name+" gone", time.Minute, func() error {
			d, err := lab.GetDerived(ctx, c.Cluster, ns, echo)
			if err == nil && d != nil {
				err = fmt.Errorf("still there: %+v", d)
			}
			return err
		})
	}
	askUntil(t, lab.ClusterB, []want{
		{"A", x, "NXDOMAIN", nil},
		{"A", y, "NXDOMAIN", nil},
		{"A", db0, "NXDOMAIN", nil},
	}, time.Minute)
}

// servedBy is the dns-version a member's cluster DNS answers with each
// clusterset server of the workload chart's mcs.dnsServer: serve writes
// the MCS DNS specification's, stock CoreDNS's kubernetes plugin says the
// cluster.local specification's. Which server answered is read from it.
var servedBy = map[string]string{lab.ClusterSetServe: `"1.0.0"`, lab.ClusterSetCoreDNS: `"1.1.0"`}

// eachDNSPodSays waits until every cluster DNS pod of c answers the
// clusterset zone's dns-version with version: each replica reloads the
// patched Corefile on its own, once the kubelet has refreshed it (up to
// two minutes after the ConfigMap changed).
func eachDNSPodSays(t *testing.T, c *lab.NodeCluster, version string) {
	t.Helper()
	ctx := context.Background()
	name := "dns-version." + lab.ClusterSetZone
	askUntil(t, c.Name, []want{{"TXT", name, "NOERROR", []string{version}}}, 4*time.Minute)
	pods, err := c.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		poll(t, "cluster DNS pod "+p.Name+" of "+c.Name+" answering "+name+" "+version, 3*time.Minute, func() error {
			out, err := nl.RunProbe(ctx, c, "mcs-query", "query", "@"+p.Status.PodIP, "TXT", name)
			if err != nil {
				return err
			}
			if a := parseProbe(out)[name+" TXT"]; a.Rcode != "NOERROR" || !slices.Equal(a.Values, []string{version}) {
				return fmt.Errorf("answer %q", out)
			}
			return nil
		})
	}
}

// byClusterDNS switches c to mcs.dnsServer coredns with helm upgrade, as
// a user would: the chart's hook and serve's keeper rewrite the cluster
// DNS's kubernetes line, and kubeadm's stock CoreDNS answers the
// clusterset names itself from what the controller wrote, with the
// chart's grant on ServiceImports. A pod asks wants and GETs url by name.
// Back to serve, serve answers again and the Corefile is what it was,
// byte for byte.
func byClusterDNS(t *testing.T, c *lab.NodeCluster, wants []want, url, answer string) {
	ctx := context.Background()
	before, err := lab.ClusterCorefile(ctx, c.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	switchTo := func(server string) {
		t.Helper()
		if err := nl.HelmUpgrade(ctx, c, lab.WorkloadChart, "mcs.dnsServer="+server); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitStatefulSetRolledOut(ctx, lab.SliceNamespace, lab.ReleaseName, 5*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	switched := time.Now()
	switchTo(lab.ClusterSetCoreDNS)
	back := false
	t.Cleanup(func() {
		if !back {
			switchTo(lab.ClusterSetServe)
		}
	})
	eachDNSPodSays(t, c, servedBy[lab.ClusterSetCoreDNS])
	t.Logf("mcs: %s's cluster DNS answers %s itself %s after helm upgrade --set mcs.dnsServer=%s",
		c.Name, lab.ClusterSetZone, time.Since(switched).Round(time.Second), lab.ClusterSetCoreDNS)
	askUntil(t, c.Name, wants, time.Minute)
	out, err := nl.RunProbe(ctx, c, "mcs-get", "get", "1", url)
	if err != nil || strings.TrimSpace(out) != answer {
		t.Fatalf("GET %s from %s answered by its cluster DNS: %q %v, want %s", url, c.Name, out, err, answer)
	}

	switched = time.Now()
	switchTo(lab.ClusterSetServe)
	back = true
	eachDNSPodSays(t, c, servedBy[lab.ClusterSetServe])
	t.Logf("mcs: serve answers %s in %s again %s after the switch back", lab.ClusterSetZone, c.Name, time.Since(switched).Round(time.Second))
	after, err := lab.ClusterCorefile(ctx, c.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("Corefile after the switch back differs from before:\n--- before\n%s\n--- after\n%s", before, after)
	}
	askUntil(t, c.Name, wants, time.Minute)
}

// startUntil starts the pod pod in c asking qtype name every 100 ms
// until the answer is rcode with exactly values (NOERROR without values:
// any records); untilMatched reads when. It asks server, or with server
// empty the pod's resolv.conf nameserver (the cluster DNS).
func startUntil(t *testing.T, c *lab.NodeCluster, pod, server, qtype, name, rcode string, values ...string) {
	t.Helper()
	ctx := context.Background()
	if err := c.DeletePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll(t, "old pod "+pod+" gone", 30*time.Second, func() error {
		if _, err := c.PodLogs(ctx, pod); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	args := []string{"until", "180"}
	if server != "" {
		args = append(args, "@"+server)
	}
	if err := nl.StartProbePod(ctx, c, pod, append(append(args, qtype, name, rcode), values...)...); err != nil {
		t.Fatal(err)
	}
}

// untilMatched waits for the pod of startUntil and returns how long after
// since its answer matched.
func untilMatched(t *testing.T, c *lab.NodeCluster, pod string, since time.Time) time.Duration {
	t.Helper()
	out, err := c.WaitPodDone(context.Background(), pod, 4*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if ts, ok := strings.CutPrefix(line, "matched "); ok {
			at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(ts))
			if err != nil {
				t.Fatalf("%s: %q: %v", pod, line, err)
			}
			t.Logf("%s in %s:\n%s", pod, c.Name, strings.TrimSpace(out))
			return at.Sub(since)
		}
	}
	t.Fatalf("%s in %s matched nothing:\n%s", pod, c.Name, out)
	return 0
}

// timed starts two until pods in c for name, one through the cluster DNS
// and one asking the xcc-dns Service itself (what the cluster DNS
// forwards to, without its cache), runs change and logs how long after
// it each pod's answer matched.
func timed(t *testing.T, c *lab.NodeCluster, what, qtype, name, rcode string, values []string, change func()) {
	t.Helper()
	svc, err := c.Client.CoreV1().Services(lab.SliceNamespace).Get(context.Background(), lab.ReleaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startUntil(t, c, "mcs-until", "", qtype, name, rcode, values...)
	startUntil(t, c, "mcs-until-xcc", svc.Spec.ClusterIP, qtype, name, rcode, values...)
	start := time.Now()
	change()
	direct := untilMatched(t, c, "mcs-until-xcc", start)
	viaCluster := untilMatched(t, c, "mcs-until", start)
	t.Logf("mcs: %s to %s %s in a pod of %s: %s from the xcc-dns Service, %s through the cluster DNS",
		what, rcode, name, c.Name, direct.Round(10*time.Millisecond), viaCluster.Round(10*time.Millisecond))
}

// poll calls check every half second until it returns nil, failing the
// test with its last error after timeout.
func poll(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func values(m map[string]string) []string {
	return slices.Sorted(maps.Values(m))
}

// getAnswers runs 20 GETs of url from a probe pod of c, each on a new
// connection, and counts each answer line.
func getAnswers(ctx context.Context, c *lab.NodeCluster, url string) (map[string]int, error) {
	out, err := nl.RunProbe(ctx, c, "mcs-get", "get", "20", url)
	if err != nil {
		return nil, err
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		got[line]++
	}
	return got, nil
}
