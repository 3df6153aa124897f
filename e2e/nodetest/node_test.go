// Package nodetest runs the node lab (real one-node clusters, both charts
// as pods) and asks from a pod. make e2e-node runs it; a machine that
// lacks what the lab needs fails it, naming what is missing.
package nodetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

var nl *lab.NodeLab

func TestMain(m *testing.M) {
	ctx := context.Background()
	start := time.Now()
	root, err := lab.FindRepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "node lab:", err)
		os.Exit(1)
	}
	// The operator's commands run against the lab (status, explain).
	if _, err := os.Stat(filepath.Join(root, "bin", "xcc-syncer")); err != nil {
		fmt.Fprintln(os.Stderr, "node lab: the tests run bin/xcc-syncer: make xcc-syncer builds it:", err)
		os.Exit(1)
	}
	nl, err = lab.StartNodeLab(ctx, lab.NodeOptions{RepoRoot: root, Progress: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "node lab:", err)
		os.Exit(1)
	}
	fmt.Printf(">> node lab up in %s\n", time.Since(start).Round(100*time.Millisecond))
	code := m.Run()
	if code != 0 {
		fmt.Println(nl.Tails())
	}
	nl.Stop()
	os.Exit(code)
}

// answer is one line of probe query: the rcode and the records' values.
type answer struct {
	Rcode  string
	Values []string
}

// parseProbe reads probe query's lines: "<name> <type> <rcode> via
// <server>: <type>=<value>, ...", keyed by "<name> <type>".
func parseProbe(out string) map[string]answer {
	m := map[string]answer{}
	for _, line := range strings.Split(out, "\n") {
		head, tail, ok := strings.Cut(line, ": ")
		if !ok {
			head = strings.TrimSuffix(line, ":")
		}
		f := strings.Fields(head)
		if len(f) < 3 {
			continue
		}
		a := answer{Rcode: f[2]}
		for _, rr := range strings.Split(tail, ", ") {
			if _, v, ok := strings.Cut(strings.TrimSpace(rr), "="); ok {
				a.Values = append(a.Values, v)
			}
		}
		if f[1] == "SRV" {
			// priority weight port target: the test checks port and target.
			for i, v := range a.Values {
				if sf := strings.Fields(v); len(sf) == 4 {
					a.Values[i] = sf[2] + " " + sf[3]
				}
			}
		}
		slices.Sort(a.Values)
		m[strings.TrimSuffix(f[0], ".")+" "+f[1]] = a
	}
	return m
}

type want struct {
	qtype, name, rcode string
	values             []string
}

// askUntil runs probe pods in cluster asking every query of wants until
// all answer as wanted or the timeout passes, and returns how long it
// took.
func askUntil(t *testing.T, cluster string, wants []want, timeout time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	c := nl.Cluster(cluster)
	start := time.Now()
	for {
		var bad []string
		byType := map[string][]string{}
		for _, w := range wants {
			byType[w.qtype] = append(byType[w.qtype], w.name)
		}
		got := map[string]answer{}
		for qtype, names := range byType {
			out, err := nl.RunProbe(ctx, c, "probe-"+strings.ToLower(qtype), append([]string{"query", qtype}, names...)...)
			if err != nil {
				bad = append(bad, err.Error())
			}
			for k, v := range parseProbe(out) {
				got[k] = v
			}
		}
		for _, w := range wants {
			key := strings.TrimSuffix(w.name, ".") + " " + w.qtype
			if w.qtype == "PTR" {
				key = reverse(w.name) + " PTR"
			}
			want := slices.Clone(w.values)
			slices.Sort(want)
			a, ok := got[key]
			if !ok || a.Rcode != w.rcode || !slices.Equal(a.Values, want) {
				bad = append(bad, fmt.Sprintf("%s: got %+v, want %s %v", key, a, w.rcode, want))
			}
		}
		if len(bad) == 0 {
			took := time.Since(start)
			t.Logf("%s: every answer as wanted after %s", cluster, took.Round(100*time.Millisecond))
			for _, w := range wants {
				t.Logf("  %s %s: %s %v", w.qtype, w.name, w.rcode, w.values)
			}
			return took
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s:\n%s", cluster, timeout, strings.Join(bad, "\n"))
		}
		time.Sleep(2 * time.Second)
	}
}

// reverse is the in-addr.arpa name of an IPv4 address.
func reverse(ip string) string {
	p := strings.Split(ip, ".")
	slices.Reverse(p)
	return strings.Join(p, ".") + ".in-addr.arpa"
}

func TestNodeLab(t *testing.T) {
	a, b := nl.Cluster(lab.ClusterA), nl.Cluster(lab.ClusterB)
	gwA, gwB := a.GatewayAddress(), b.GatewayAddress()

	// The cluster DNS picks up the patched Corefile when the kubelet
	// refreshes the ConfigMap's volume and CoreDNS's reload plugin
	// notices: up to about two minutes after the install.
	t.Run("PodAsks", func(t *testing.T) {
		askUntil(t, lab.ClusterB, []want{
			{"A", lab.GatewayHost("kuard", lab.ClusterA), "NOERROR", []string{gwA}},
			{"A", "kuard." + lab.GatewayDNSName + "." + lab.ClusterNamespace + ".gateways." + lab.Zone, "NOERROR", []string{gwA, gwB}},
			{"PTR", gwA, "NOERROR", []string{"gateway." + lab.ClusterA + "." + lab.ClusterNamespace + ".clusters." + lab.Zone + "."}},
			{"A", lab.GatewayHost("kuard", "cluster-z"), "NXDOMAIN", nil},
			{"A", "kubernetes.default.svc.cluster.local", "NOERROR", []string{b.Net.KubernetesIP()}},
		}, 4*time.Minute)
	})

	// What an operator runs once a pod resolves the walkthrough's name:
	// xcc-syncer status and explain against the real clusters.
	t.Run("StatusAndExplain", testStatusAndExplain)

	// The other kinds of names, real pods behind them: a Service's own
	// name (fqdn annotation) and a headless Service's pods, by the name
	// across clusters, per pod and as SRV.
	t.Run("PodAsksServices", func(t *testing.T) {
		ctx := context.Background()
		if err := nl.SetupServices(ctx, a); err != nil {
			t.Fatal(err)
		}
		db0, err := a.PodIP(ctx, lab.HeadlessNamespace, "db-0")
		if err != nil {
			t.Fatal(err)
		}
		db1, err := a.PodIP(ctx, lab.HeadlessNamespace, "db-1")
		if err != nil {
			t.Fatal(err)
		}
		db := lab.HeadlessHost("db")
		askUntil(t, lab.ClusterB, []want{
			{"A", lab.NamesHost("web", lab.ClusterNamespace), "NOERROR", []string{a.Net.LBAddress(lab.NodeNamesAddressHost)}},
			{"A", db, "NOERROR", []string{db0, db1}},
			{"A", "db-0." + lab.ClusterA + "." + db, "NOERROR", []string{db0}},
			{"SRV", "_pg._tcp." + db, "NOERROR", []string{"5432 db-0." + lab.ClusterA + "." + db + ".", "5432 db-1." + lab.ClusterA + "." + db + "."}},
		}, 3*time.Minute)
		// Pod addresses are routed between the clusters: the exported
		// pod answers.
		out, err := nl.RunProbe(ctx, b, "probe-tcp", "tcp", db0+":5432")
		if err != nil || !strings.HasPrefix(out, "connected ") {
			t.Fatalf("probe tcp %s:5432: %s %v", db0, out, err)
		}
		t.Log(strings.TrimSpace(out))
	})

	// The name is useful, as the walkthrough's last step shows with curl:
	// cluster-b's pod resolves cluster-a's gateway name and its HTTP GET
	// crosses the router to cluster-a's node, where kube-proxy sends it to
	// Traefik, which routes it by its Host to kuard. A request to the
	// same address with no route's Host gets Traefik's 404: the answer
	// comes from the Gateway's routing, not from whoever listens there.
	t.Run("PodGetsKuard", func(t *testing.T) {
		ctx := context.Background()
		url := "http://" + lab.GatewayHost(lab.KuardName, lab.ClusterA) + "/"
		out, err := nl.RunProbe(ctx, b, "probe-get", "get", "1", url)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "200 hello from "+lab.KuardName+"-") {
			t.Fatalf("probe get %s: %q, want 200 from a pod of Deployment %s", url, out, lab.KuardName)
		}
		t.Logf("GET %s: %s", url, strings.TrimSpace(out))
		out, err = nl.RunProbe(ctx, b, "probe-get", "get", "1", "http://"+gwA+"/")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "404 ") {
			t.Fatalf("probe get http://%s/: %q, want Traefik's 404 for a Host no route names", gwA, out)
		}
		t.Logf("GET http://%s/: %s", gwA, strings.TrimSpace(out))
	})

	// Last, with a headless GatewayDNS among them (its state ConfigMap
	// written): every process's /metrics as a scraper reads them.
	t.Run("Metrics", testMetrics)
}

// totals is the last line of totals of probe load.
type totals struct {
	T, Sent, OK, Failed, Slow, MaxMS int
	Failures                         []string
}

func parseTotals(t *testing.T, out string) totals {
	t.Helper()
	var tot totals
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			tot.Failures = append(tot.Failures, line)
		}
		if strings.HasPrefix(line, "t=") {
			if _, err := fmt.Sscanf(line, "t=%ds sent=%d ok=%d failed=%d slow=%d max=%dms", &tot.T, &tot.Sent, &tot.OK, &tot.Failed, &tot.Slow, &tot.MaxMS); err != nil {
				t.Fatalf("probe load line %q: %v", line, err)
			}
		}
	}
	return tot
}

// snapshot reads the load pod's totals once the queries of the last
// two seconds have had their answers.
func snapshot(t *testing.T, c *lab.NodeCluster, pod string) totals {
	t.Helper()
	time.Sleep(3 * time.Second)
	out, err := c.PodLogs(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	return parseTotals(t, out)
}

func (a totals) since(b totals) string {
	return fmt.Sprintf("%d s, %d queries, %d failed, %d slow (> 500 ms), slowest %d ms (all run)",
		a.T-b.T, a.Sent-b.Sent, a.Failed-b.Failed, a.Slow-b.Slow, a.MaxMS)
}

// UpgradeAndKill: a pod of cluster-b asks 60 names a second through its
// cluster DNS, each a new name (kuard-<n>.gateway...) so that the cluster
// DNS's cache never answers and every query reaches an xcc-dns replica
// through the xcc-dns Service. Meanwhile: helm upgrade of the workload
// chart with a new image tag (a rolling update of both replicas), then
// SIGKILL of every container of the replica xcc-dns-0.
func TestUpgradeAndKill(t *testing.T) {
	ctx := context.Background()
	a, b := nl.Cluster(lab.ClusterA), nl.Cluster(lab.ClusterB)
	const pod, qps = "load", 60
	name := "kuard-{n}.gateway." + lab.ClusterA + "." + lab.ClusterNamespace + ".clusters." + lab.Zone
	// The cluster DNS must have read the patched Corefile first.
	askUntil(t, lab.ClusterB, []want{{"A", lab.GatewayHost("kuard-0", lab.ClusterA), "NOERROR", []string{a.GatewayAddress()}}}, 4*time.Minute)
	if err := nl.StartProbePod(ctx, b, pod, "load", fmt.Sprint(qps), name, a.GatewayAddress()); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = b.StopPod(ctx, pod) }()
	settled := settle(t, b, pod)
	time.Sleep(10 * time.Second)
	base := snapshot(t, b, pod)
	t.Logf("before: %s", base.since(settled))
	if base.Failed > settled.Failed {
		t.Fatalf("failures before any change:\n%s", strings.Join(base.Failures[len(settled.Failures):], "\n"))
	}

	const tag = "0.1.0-upgrade"
	if err := b.TagImages(ctx, "0.1.0", tag); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := nl.HelmUpgrade(ctx, b, lab.WorkloadChart, "image.tag="+tag); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitStatefulSetRolledOut(ctx, lab.SliceNamespace, lab.ReleaseName, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	rolled := time.Since(start)
	up := snapshot(t, b, pod)
	t.Logf("helm upgrade (image tag %s): rolled out in %s; %s", tag, rolled.Round(100*time.Millisecond), up.since(base))
	upgradeFailures := up.Failed - base.Failed
	for _, f := range up.Failures[len(base.Failures):] {
		t.Log(f)
	}

	start = time.Now()
	before, err := b.KillPodContainers(ctx, lab.SliceNamespace, lab.ReleaseName+"-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WaitPodRestarted(ctx, lab.SliceNamespace, lab.ReleaseName+"-0", before, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	ready := time.Since(start)
	time.Sleep(5 * time.Second)
	killed := snapshot(t, b, pod)
	t.Logf("SIGKILL of every container of %s-0: ready again in %s; %s", lab.ReleaseName, ready.Round(100*time.Millisecond), killed.since(up))
	for _, f := range killed.Failures[len(up.Failures):] {
		t.Log(f)
	}
	if upgradeFailures > 0 {
		t.Errorf("%d queries failed during the helm upgrade, want none", upgradeFailures)
	}
	if killed.Failed > up.Failed {
		t.Logf("%d queries failed after the SIGKILL (a pod's resolver retries them)", killed.Failed-up.Failed)
	}
}

// settle waits until the load pod's queries have all been answered for a
// few seconds: each of the cluster DNS's replicas reloads the patched
// Corefile on its own (the reload plugin's period), and until both have,
// some queries of the zone go upstream. When run after the other tests
// this returns at once.
func settle(t *testing.T, c *lab.NodeCluster, pod string) totals {
	t.Helper()
	prev := snapshot(t, c, pod)
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		cur := snapshot(t, c, pod)
		if cur.Failed == prev.Failed && cur.Sent > prev.Sent {
			return cur
		}
		prev = cur
	}
	t.Fatalf("queries still failing after 3 minutes:\n%s", strings.Join(prev.Failures[max(0, len(prev.Failures)-20):], "\n"))
	return prev
}

// memory reads the working set of the xcc-dns replicas' containers and of
// the cluster DNS's pods in cluster c.
func memory(t *testing.T, c *lab.NodeCluster) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[string]int64{}
	for _, pod := range []string{lab.ReleaseName + "-0", lab.ReleaseName + "-1"} {
		m, err := c.ContainerMemory(ctx, lab.SliceNamespace, pod)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			out[pod+"/"+k] = v
		}
	}
	pods, err := c.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pods.Items {
		m, err := c.ContainerMemory(ctx, "kube-system", p.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("cluster-dns-%d/coredns", i)] = m["coredns"]
	}
	return out
}

// Resources: the memory of the DNS pods, from their cgroups, with the
// walkthrough's few records and with 10,000 more records served (10,000
// slices in cluster-b, one gateway name each, as the controller writes
// them). The cluster DNS's CoreDNS caches every EndpointSlice of the
// cluster for its kubernetes plugin, the xcc-dns slices too.
func TestResources(t *testing.T) {
	ctx := context.Background()
	b := nl.Cluster(lab.ClusterB)
	const n = 10000
	time.Sleep(10 * time.Second)
	before := memory(t, b)
	start := time.Now()
	if err := lab.WriteRecordSlices(ctx, b, n); err != nil {
		t.Fatal(err)
	}
	wrote := time.Since(start)
	t.Logf("%d slices written in %s", n, wrote.Round(100*time.Millisecond))
	took := askUntil(t, lab.ClusterB, []want{
		{"A", lab.RecordHost(0, "kuard"), "NOERROR", []string{lab.RecordAddress(0)}},
		{"A", lab.RecordHost(n-1, "kuard"), "NOERROR", []string{lab.RecordAddress(n - 1)}},
	}, 10*time.Minute)
	t.Logf("%d slices written in %s, the first and last answered in a pod %s later", n, wrote.Round(100*time.Millisecond), took.Round(100*time.Millisecond))
	time.Sleep(10 * time.Second)
	after := memory(t, b)
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.Logf("working set (MiB): %-32s %10s %10s", "pod/container", "few", "10,000")
	for _, k := range keys {
		t.Logf("working set (MiB): %-32s %10.1f %10.1f", k, float64(before[k])/(1<<20), float64(after[k])/(1<<20))
	}
}
