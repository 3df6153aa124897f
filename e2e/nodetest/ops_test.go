package nodetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Bounds of the operator commands and of one scrape.
const (
	opsWait       = time.Minute
	scrapeTimeout = 5 * time.Second
	// reconcileStale is the age past which serve's last reconcile fires
	// its alert (XccServeReconcileStale, docs/metrics.md).
	reconcileStale = 900 * time.Second
)

// What explain says of a cluster DNS pod (internal/explain's
// ReloadRunning and ReloadOlder; this module cannot import it).
const (
	explainReloadRunning = "running the ConfigMap's Corefile"
	explainReloadOlder   = "still running an older one"
)

// xccSyncerBin is the xcc-syncer the operator runs, built by make
// xcc-syncer into the repository's bin/.
func xccSyncerBin() string { return filepath.Join(nl.RepoRoot, "bin", "xcc-syncer") }

// xccSyncer runs bin/xcc-syncer with args against the management cluster
// and returns its output and exit code.
func xccSyncer(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opsWait)
	defer cancel()
	args = append(args, "--kubeconfig", nl.Clusters[0].Kubeconfig)
	out, err := exec.CommandContext(ctx, xccSyncerBin(), args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("xcc-syncer %s: %v\n%s", strings.Join(args, " "), err, out)
		return "", 0
	}
}

// testStatusAndExplain: xcc-syncer status, run as an operator runs it with
// the management cluster's kubeconfig, exits 0 with the walkthrough's
// GatewayDNS Ready and both workload clusters Published and healthy, and
// with the records each serve pod of each holds, read through the
// clusters' kubeconfig Secrets and pod proxies (text and -o json);
// explain of cluster-a's gateway name asked from cluster-b says it answers
// cluster-a's gateway address, names the slice cluster-b holds for it,
// and reads from cluster-b's real CoreDNS ConfigMap that the chart's hook
// made it forward the zone to the xcc-dns Service, at its ClusterIP.
func testStatusAndExplain(t *testing.T) {
	ctx := context.Background()
	a, b := nl.Cluster(lab.ClusterA), nl.Cluster(lab.ClusterB)
	gd := lab.ClusterNamespace + "/" + lab.GatewayDNSName
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(gd) + `\s+true\s+Published\s+2/2\s+2\s+0$`)
	// Each serve replica of each workload cluster, read through its API
	// server's pod proxy, holds the published records.
	serve := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(lab.ClusterNamespace) + `/(cluster-[ab])\s+` + regexp.QuoteMeta(lab.SliceNamespace) + `/` +
		regexp.QuoteMeta(lab.ReleaseName) + `-[01]\s+[1-9][0-9]*\s+[0-9hms]+ ago$`)
	var out string
	poll(t, "xcc-syncer status exiting 0 with "+gd+" Ready, 2/2 Published and healthy, each serve pod holding records", opsWait, func() error {
		var code int
		out, code = xccSyncer(t, "status")
		if code != 0 || !row.MatchString(out) || !strings.Contains(out, "\nall 1 GatewayDNS and 0 ClusterSets Ready\n") ||
			len(serve.FindAllString(out, -1)) != 4 || strings.Contains(out, "not read") {
			return fmt.Errorf("exit code %d, want the 4 serve pods' records, all read:\n%s", code, out)
		}
		return nil
	})
	var report struct {
		Serve []struct {
			Cluster string
			Pods    []struct{ Records int64 }
		}
	}
	js, code := xccSyncer(t, "status", "-o", "json")
	if err := json.Unmarshal([]byte(js), &report); err != nil || code != 0 || len(report.Serve) != 2 {
		t.Errorf("xcc-syncer status -o json: exit code %d, %v; want the serve pods of 2 clusters:\n%s", code, err, js)
	}
	for _, c := range report.Serve {
		if len(c.Pods) != 2 || c.Pods[0].Records == 0 || c.Pods[1].Records == 0 {
			t.Errorf("xcc-syncer status -o json: %s: %+v, want 2 serve pods holding records", c.Cluster, c.Pods)
		}
	}
	for _, w := range []string{lab.ClusterA, lab.ClusterB} {
		if strings.Contains(out, "  cluster "+w+":") || strings.Contains(out, "  target "+w+":") {
			t.Errorf("xcc-syncer status lists %s as behind:\n%s", w, out)
		}
	}
	t.Logf("xcc-syncer status:\n%s", out)

	svc, err := b.Client.CoreV1().Services(lab.SliceNamespace).Get(ctx, lab.ReleaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := lab.GatewayHost("kuard", lab.ClusterA)
	// What xcc-dns and the cluster DNS answer now (a serve pod's /answer,
	// through the pod proxy): the same record, the gateway's address with
	// a TTL; and each cluster DNS pod running the patched Corefile (its
	// reload plugin's hash, or started after the patch). Until both
	// CoreDNS replicas have reloaded (the kubelet's ConfigMap sync and
	// the reload plugin's period) the verdict may still be NotReloaded.
	fqdn := regexp.QuoteMeta(strings.TrimSuffix(name, ".") + ".")
	xccLine := regexp.MustCompile(`\nxcc-dns answers now: NOERROR, ` + fqdn + ` ([0-9]+) IN A ` + regexp.QuoteMeta(a.GatewayAddress()) + `\n`)
	clusterLine := regexp.MustCompile(`\ncluster DNS answers now: NOERROR, ` + fqdn + ` ([0-9]+) IN A ` + regexp.QuoteMeta(a.GatewayAddress()) + `\n`)
	reloaded := regexp.MustCompile(`\ncluster DNS pod kube-system/coredns-[a-z0-9-]+: ` + regexp.QuoteMeta(explainReloadRunning) + `: `)
	ttlLine := regexp.MustCompile(`\nttl: +record TTL [0-9]+ s; the cluster DNS block caches answers 5\.\.30 s, denials 5\.\.30 s; a pod may keep an answer up to [0-9]+ s`)
	poll(t, "explain "+name+" --from "+lab.ClusterB+": xcc-dns and the cluster DNS answering the gateway, both CoreDNS pods running the ConfigMap's Corefile", 4*time.Minute, func() error {
		var code int
		out, code = xccSyncer(t, "explain", name, "--from", lab.ClusterB)
		switch {
		case code != 0:
			return fmt.Errorf("exit code %d:\n%s", code, out)
		case !xccLine.MatchString(out) || !clusterLine.MatchString(out):
			return fmt.Errorf("want xcc-dns and the cluster DNS answering %s A %s with a TTL:\n%s", name, a.GatewayAddress(), out)
		case len(reloaded.FindAllString(out, -1)) != 2 || strings.Contains(out, explainReloadOlder):
			return fmt.Errorf("want both cluster DNS pods %q:\n%s", explainReloadRunning, out)
		case !ttlLine.MatchString(out):
			return fmt.Errorf("want the TTLs and the block's cache 30:\n%s", out)
		}
		return nil
	})
	t.Logf("xcc-syncer explain %s --from %s:\n%s", name, lab.ClusterB, out)
	reason := "\nreason:  Published: " + lab.ClusterA + " is published in every target: " + a.GatewayAddress() + "\n"
	if !strings.Contains(out, "\nanswer:  records\n") || !strings.Contains(out, reason) {
		t.Errorf("explain: want answer records and %q", strings.TrimSpace(reason))
	}
	forward := regexp.MustCompile(`\ncluster DNS of ` + lab.ClusterB + ` \(kube-system/coredns\): forwards ` + regexp.QuoteMeta(lab.Zone) +
		` to ` + regexp.QuoteMeta(svc.Spec.ClusterIP) + `(:[0-9]+)? \(block [^,]+, patch-corefile's\): the xcc-dns Service ` +
		regexp.QuoteMeta(lab.SliceNamespace+"/"+lab.ReleaseName) + `\n`)
	if !forward.MatchString(out) {
		t.Errorf("explain: want cluster-b's CoreDNS ConfigMap forwarding %s to the xcc-dns Service %s, block of patch-corefile, the Service's address", lab.Zone, svc.Spec.ClusterIP)
	}
	sliceLine := regexp.MustCompile(`\nslices in ` + lab.ClusterB + `: [1-9][0-9]*\n`)
	if !sliceLine.MatchString(out) || strings.Contains(out, "unread:") {
		t.Errorf("explain: want the slices of cluster-b that make the name, everything read")
	}
}

// explainClusterSetName: explain of a clusterset name asked from member
// names the ClusterSet, the ServiceImport there with its ClusterSetIP and
// the exporting members, and that member's cluster DNS forwarding the
// clusterset zone.
func explainClusterSetName(t *testing.T, member, set, ns, svc, clusterSetIP string, exporters []string) {
	t.Helper()
	name := lab.ClusterSetHost(ns, svc)
	want := "\nreason:  Imported: ServiceImport " + ns + "/" + svc + " of ClusterSet " + lab.ClusterNamespace + "/" + set + " in " + member +
		": ClusterSetIP " + clusterSetIP + ", ports http/TCP/80, exported by " + strings.Join(exporters, ", ") + "; "
	forward := "\ncluster DNS of " + member + " (kube-system/coredns): forwards " + lab.ClusterSetZone + " to "
	var out string
	poll(t, "explain "+name+" --from "+member+" naming the import", opsWait, func() error {
		var code int
		out, code = xccSyncer(t, "explain", name, "--from", member)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, forward) || !strings.Contains(out, "\nanswer:  records\n") {
			return fmt.Errorf("exit code %d, want %q and %q:\n%s", code, strings.TrimSpace(want), strings.TrimSpace(forward), out)
		}
		return nil
	})
	t.Logf("xcc-syncer explain %s --from %s:\n%s", name, member, out)
}

// clusterSetMetrics: the controller's /metrics has the ClusterSet set of
// the lab's namespace Ready with members members, all ok.
func clusterSetMetrics(t *testing.T, set string, members float64) {
	t.Helper()
	ctx := context.Background()
	mgmt := nl.Clusters[0]
	dep, err := mgmt.Client.AppsV1().Deployments(lab.SliceNamespace).Get(ctx, lab.ReleaseName+"-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := lab.ClusterNamespace + "/" + set
	poll(t, "the controller's ClusterSet series of "+key, opsWait, func() error {
		for _, tg := range targets(t, mgmt, lab.SliceNamespace, dep.Spec.Selector, "controller", "http") {
			fams, err := scrape(tg.url)
			if err != nil {
				return err
			}
			ready, ok := value(fams["xcc_controller_clusterset_ready"], map[string]string{"clusterset": key})
			if !ok {
				continue // not the leader
			}
			n, _ := value(fams["xcc_controller_clusterset_members"], map[string]string{"clusterset": key, "state": "ok"})
			if ready != 1 || n != members {
				return fmt.Errorf("%s: xcc_controller_clusterset_ready %v, members ok %v; want 1 and %v", tg.pod, ready, n, members)
			}
			t.Logf("controller %s: ClusterSet %s ready, %v members ok", tg.pod, key, n)
			return nil
		}
		return fmt.Errorf("no controller pod exports the series of ClusterSet %s", key)
	})
}

// documented is one row of docs/metrics.md's table.
type documented struct {
	name   string
	labels []string // sorted; none for "none"
}

// component is the process a documented metric belongs to, by its name.
func component(name string) string {
	switch {
	case strings.HasPrefix(name, "xcc_controller_"):
		return "controller"
	case strings.HasPrefix(name, "xcc_serve_"):
		return "serve"
	case strings.HasPrefix(name, "coredns_"):
		return "coredns"
	}
	return ""
}

var (
	backticked    = regexp.MustCompile("`([^`]+)`")
	parenthesized = regexp.MustCompile(`\([^)]*\)`)
)

// documentedMetrics reads the table of docs/metrics.md, by component:
// each metric's name and the names of its labels (a label's values, in
// parentheses, are not names).
func documentedMetrics(t *testing.T) map[string][]documented {
	t.Helper()
	f, err := os.Open(filepath.Join(nl.RepoRoot, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]documented{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), " | ")
		if len(cols) < 3 || !strings.HasPrefix(cols[0], "| `") {
			continue
		}
		m := backticked.FindStringSubmatch(cols[0])
		d := documented{name: m[1]}
		for _, l := range backticked.FindAllStringSubmatch(parenthesized.ReplaceAllString(cols[2], ""), -1) {
			d.labels = append(d.labels, l[1])
		}
		slices.Sort(d.labels)
		if c := component(d.name); c != "" {
			out[c] = append(out[c], d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"controller", "serve", "coredns"} {
		if len(out[c]) == 0 {
			t.Fatalf("docs/metrics.md lists no metric of %s", c)
		}
	}
	return out
}

// target is one scrape target: a pod's address and the container port
// the chart declares for the process's metrics.
type target struct {
	cluster, pod, url string
}

// targets are the scrape targets of container's port portName in the pods
// of c selected by selector, as Prometheus's pod discovery finds them
// without a ServiceMonitor: pod IP and declared container port.
func targets(t *testing.T, c *lab.NodeCluster, ns string, selector *metav1.LabelSelector, container, portName string) []target {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(selector)})
	if err != nil {
		t.Fatal(err)
	}
	var out []target
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Fatalf("%s pod %s/%s: phase %s, address %q", c.Name, ns, p.Name, p.Status.Phase, p.Status.PodIP)
		}
		port := containerPort(p, container, portName)
		if port == 0 {
			t.Fatalf("%s pod %s/%s declares no port %s on container %s", c.Name, ns, p.Name, portName, container)
		}
		out = append(out, target{c.Name, p.Name, "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))) + "/metrics"})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no pod of %s/%s", c.Name, ns, metav1.FormatLabelSelector(selector))
	}
	return out
}

func containerPort(p corev1.Pod, container, name string) int32 {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, port := range c.Ports {
			if port.Name == name {
				return port.ContainerPort
			}
		}
	}
	return 0
}

// scrape reads url's text exposition as Prometheus does.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", url, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return fams, nil
}

// labelNames are the sorted label names of one series.
func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName())
	}
	slices.Sort(out)
	return out
}

// value is the value of the series of fam whose labels include want, and
// whether there is one.
func value(fam *dto.MetricFamily, want map[string]string) (float64, bool) {
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// checkDocumented compares a scrape of one component with the docs: every
// series of a documented metric has exactly the documented labels, and
// every documented metric is there but those of optional (series that
// exist only while their objects do).
func checkDocumented(fams map[string]*dto.MetricFamily, docs []documented, optional func(documented) bool) []string {
	var bad []string
	for _, d := range docs {
		fam := fams[d.name]
		if fam == nil || len(fam.GetMetric()) == 0 {
			if !optional(d) {
				bad = append(bad, d.name+": missing")
			}
			continue
		}
		for _, m := range fam.GetMetric() {
			if got := labelNames(m); !slices.Equal(got, d.labels) {
				bad = append(bad, fmt.Sprintf("%s: a series with labels %v, docs/metrics.md says %v", d.name, got, d.labels))
				break
			}
		}
	}
	return bad
}

// hasLabel says whether d has the label name.
func (d documented) hasLabel(name string) bool { return slices.Contains(d.labels, name) }

// testMetrics scrapes every xcc-dns process of the node lab as Prometheus
// does without a ServiceMonitor: from the host's network namespace, at
// each pod's address and the container port the chart declares (the
// controller's http, serve's http, CoreDNS's dns-metrics). Each scrape
// parses as the text exposition format and holds every metric
// docs/metrics.md lists for its process with the documented labels; the
// controller's ClusterSet series only while a ClusterSet exists. The
// values say what the lab is: both workload clusters reachable and not
// cut off, serve holding records and a recent reconcile, and each DNS
// pod's CoreDNS counting the answer it gave the query sent to it.
func testMetrics(t *testing.T) {
	ctx := context.Background()
	docs := documentedMetrics(t)
	mgmt := nl.Clusters[0]

	// The controller: only the leader reads the workload clusters.
	dep, err := mgmt.Client.AppsV1().Deployments(lab.SliceNamespace).Get(ctx, lab.ReleaseName+"-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sets, err := mgmt.Dynamic.Resource(lab.ClusterSetGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noClusterSets := len(sets.Items) == 0
	ctlTargets := targets(t, mgmt, lab.SliceNamespace, dep.Spec.Selector, "controller", "http")
	poll(t, "the controller's /metrics as documented, both workload clusters reachable", opsWait, func() error {
		union := map[string]*dto.MetricFamily{}
		var leader string
		var bad []string
		for _, tg := range ctlTargets {
			fams, err := scrape(tg.url)
			if err != nil {
				return err
			}
			for name, fam := range fams {
				if union[name] == nil {
					union[name] = fam
				} else {
					union[name].Metric = append(union[name].Metric, fam.Metric...)
				}
			}
			if _, ok := value(fams["xcc_controller_workload_cluster_reachable"], nil); !ok {
				continue
			}
			leader = tg.pod
			for _, w := range []string{lab.ClusterA, lab.ClusterB} {
				key := map[string]string{"workload_cluster": lab.ClusterNamespace + "/" + w}
				if v, ok := value(fams["xcc_controller_workload_cluster_reachable"], key); !ok || v != 1 {
					bad = append(bad, fmt.Sprintf("%s: xcc_controller_workload_cluster_reachable of %s %v (present %t), want 1", tg.pod, w, v, ok))
				}
				if v, ok := value(fams["xcc_controller_workload_cluster_cut_off"], key); !ok || v != 0 {
					bad = append(bad, fmt.Sprintf("%s: xcc_controller_workload_cluster_cut_off of %s %v (present %t), want 0", tg.pod, w, v, ok))
				}
			}
			if v, _ := value(fams["xcc_controller_workload_clusters_watched"], nil); v != 2 {
				bad = append(bad, fmt.Sprintf("%s: xcc_controller_workload_clusters_watched %v, want 2", tg.pod, v))
			}
			if v, _ := value(fams["xcc_controller_targets_behind"], nil); v != 0 {
				bad = append(bad, fmt.Sprintf("%s: xcc_controller_targets_behind %v, want 0", tg.pod, v))
			}
		}
		if leader == "" {
			return fmt.Errorf("no controller pod of %d exports the workload clusters' series", len(ctlTargets))
		}
		bad = append(bad, checkDocumented(union, docs["controller"], func(d documented) bool { return noClusterSets && d.hasLabel("clusterset") })...)
		if noClusterSets {
			for _, d := range docs["controller"] {
				if fam := union[d.name]; d.hasLabel("clusterset") && fam != nil && len(fam.GetMetric()) > 0 {
					bad = append(bad, d.name+": series of a ClusterSet, and none exists")
				}
			}
		}
		if len(bad) > 0 {
			return errors.New(strings.Join(bad, "\n"))
		}
		t.Logf("controller %s (of %d pods): every documented metric, both workload clusters reachable and not cut off", leader, len(ctlTargets))
		return nil
	})

	// serve and CoreDNS of every DNS pod of each workload cluster.
	gw := lab.GatewayHost("kuard", lab.ClusterA)
	for _, w := range nl.Clusters[1:] {
		sts, err := w.Client.AppsV1().StatefulSets(lab.SliceNamespace).Get(ctx, lab.ReleaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets(t, w, lab.SliceNamespace, sts.Spec.Selector, "xcc-syncer", "http") {
			fams, err := scrape(tg.url)
			if err != nil {
				t.Fatal(err)
			}
			bad := checkDocumented(fams, docs["serve"], func(documented) bool { return false })
			records, _ := value(fams["xcc_serve_records"], nil)
			if records < 1 {
				bad = append(bad, fmt.Sprintf("xcc_serve_records %v, want the walkthrough's", records))
			}
			last, _ := value(fams["xcc_serve_last_reconcile_timestamp_seconds"], nil)
			if age := time.Since(time.Unix(int64(last), 0)); last <= 0 || age > reconcileStale {
				bad = append(bad, fmt.Sprintf("xcc_serve_last_reconcile_timestamp_seconds %v: %s ago, want within %s", last, age.Round(time.Second), reconcileStale))
			}
			if len(bad) > 0 {
				t.Errorf("serve of %s %s (%s):\n%s", tg.cluster, tg.pod, tg.url, strings.Join(bad, "\n"))
				continue
			}
			t.Logf("serve of %s %s (%s): every documented metric, %v records", tg.cluster, tg.pod, tg.url, records)
		}
		pods, err := w.Client.CoreV1().Pods(lab.SliceNamespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(sts.Spec.Selector)})
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets(t, w, lab.SliceNamespace, sts.Spec.Selector, "coredns", "dns-metrics") {
			// Ask this pod's CoreDNS itself, so that its answer counters
			// have a series for the zone whichever replica the tests' pods
			// reached.
			i := slices.IndexFunc(pods.Items, func(p corev1.Pod) bool { return p.Name == tg.pod })
			if i < 0 {
				t.Fatalf("%s: pod %s gone", tg.cluster, tg.pod)
			}
			server := net.JoinHostPort(pods.Items[i].Status.PodIP, strconv.Itoa(int(containerPort(pods.Items[i], "coredns", "dns"))))
			want := []string{nl.Cluster(lab.ClusterA).GatewayAddress()}
			// CoreDNS counts a response after it has written it, so the
			// client can read the answer before the counter moves: ask and
			// scrape until both are seen.
			var bad []string
			poll(t, "A "+gw+" @"+server+" ("+tg.cluster+" "+tg.pod+") and its counter", opsWait, func() error {
				r, err := lab.Query(server, gw, dns.TypeA)
				if err == nil && (r.Rcode != dns.RcodeSuccess || !slices.Equal(lab.Values(r, dns.TypeA), want)) {
					err = fmt.Errorf("%s, want %v", lab.Summary(r), want)
				}
				if err != nil {
					return err
				}
				fams, err := scrape(tg.url)
				if err != nil {
					return err
				}
				bad = checkDocumented(fams, docs["coredns"], func(documented) bool { return false })
				zone := map[string]string{"zone": dns.Fqdn(lab.Zone), "rcode": "NOERROR"}
				if v, ok := value(fams["coredns_dns_responses_total"], zone); !ok || v < 1 {
					return fmt.Errorf("coredns_dns_responses_total of zone %s NOERROR %v (present %t), want at least the one asked", lab.Zone, v, ok)
				}
				return nil
			})
			if len(bad) > 0 {
				t.Errorf("CoreDNS of %s %s (%s):\n%s", tg.cluster, tg.pod, tg.url, strings.Join(bad, "\n"))
				continue
			}
			t.Logf("CoreDNS of %s %s (%s): every documented metric", tg.cluster, tg.pod, tg.url)
		}
	}
}
