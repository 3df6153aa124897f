package charts_test

import (
	stdjson "encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corednsvars "github.com/coredns/coredns/plugin/metrics/vars"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/xcc-dns/xcc-dns/internal/controller"
	"github.com/xcc-dns/xcc-dns/internal/serve"
)

// The files the charts ship that query metrics.
var (
	alertFiles    = []string{filepath.Join(managementChart, "files", "alerts.yaml"), filepath.Join(workloadChart, "files", "alerts.yaml")}
	dashboardFile = filepath.Join(managementChart, "files", "dashboard.json")
)

// recorder is a Registerer that registers on a real registry and keeps
// the collectors, whose descriptions name every metric they may export
// (a vector without children gathers nothing).
type recorder struct {
	reg        *prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *recorder) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// names returns the metric names the collectors describe.
func names(t *testing.T, cs []prometheus.Collector) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, c := range cs {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no fqName in %s", d)
			}
			out[m[1]] = true
		}
	}
	return out
}

// registeredNames are the metrics the controller and serve register, and
// the CoreDNS metrics the charts rely on (its prometheus plugin, which the
// workload Corefile and the guard's server blocks enable).
func registeredNames(t *testing.T) map[string]bool {
	t.Helper()
	r := &recorder{reg: prometheus.NewRegistry()}
	controller.NewMetrics(r)
	serve.NewMetrics(r)
	r.collectors = append(r.collectors, corednsvars.RequestCount, corednsvars.RequestDuration, corednsvars.ResponseRcode)
	return names(t, r.collectors)
}

// exprs returns the PromQL expressions of the charts' alert rules and
// dashboard, each with where it is.
func exprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range alertFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rules struct {
			Groups []struct {
				Rules []struct {
					Alert, Record, Expr string
				}
			}
		}
		if err := yaml.Unmarshal(b, &rules); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				out[f+": "+r.Alert+r.Record] = r.Expr
			}
		}
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := stdjson.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	for _, p := range dash.Panels {
		for i, q := range p.Targets {
			out[fmt.Sprintf("%s: panel %q query %d", dashboardFile, p.Title, i)] = q.Expr
		}
	}
	if len(out) == 0 {
		t.Fatal("no expressions found")
	}
	return out
}

// TestMetricNamesRegistered: every metric the alert rules and the
// dashboard query is one the code registers (or CoreDNS's, named in
// registeredNames); a renamed metric would leave an alert that never
// fires and a panel that shows nothing.
func TestMetricNamesRegistered(t *testing.T) {
	known := registeredNames(t)
	for where, expr := range exprs(t) {
		used := metricNames(expr)
		if len(used) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, name := range used {
			if !knownName(known, name) {
				t.Errorf("%s: metric %s is not registered by the controller, serve or CoreDNS", where, name)
			}
		}
	}
}

// knownName: name is registered, or is a histogram's series of one.
func knownName(known map[string]bool, name string) bool {
	if known[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && known[base] {
			return true
		}
	}
	return false
}

// PromQL's words that are not metric names, and the Grafana variables a
// dashboard query may hold.
var (
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "atan2": true}
	grafanaVariable = regexp.MustCompile(`\$\{?[A-Za-z_]+\}?`)
	promqlStrings   = regexp.MustCompile(`"(\\.|[^"\\])*"|'(\\.|[^'\\])*'|` + "`[^`]*`")
	promqlMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promqlRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlToken     = regexp.MustCompile(`[0-9][0-9.]*([eE][-+]?[0-9]+)?[a-zA-Z]*|[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// metricNames returns the metric names an expression selects: the words
// left once strings, label matchers, ranges and grouping labels are
// taken out that are neither numbers, keywords nor calls.
func metricNames(expr string) []string {
	s := grafanaVariable.ReplaceAllString(expr, "5m")
	s = promqlStrings.ReplaceAllString(s, `""`)
	s = promqlMatchers.ReplaceAllString(s, "{}")
	s = promqlRanges.ReplaceAllString(s, "[]")
	s = promqlGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promqlToken.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		if word[0] >= '0' && word[0] <= '9' || promqlKeywords[strings.ToLower(word)] {
			continue
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		if !slices.Contains(out, word) {
			out = append(out, word)
		}
	}
	return out
}

// TestMetricNamesOfExpr: the names metricNames finds in the shapes of
// query the charts use.
func TestMetricNamesOfExpr(t *testing.T) {
	for expr, want := range map[string]string{
		`xcc_controller_workload_cluster_reachable == 0`:                                                              "xcc_controller_workload_cluster_reachable",
		`max_over_time(xcc_controller_workload_cluster_cut_off[10m]) == 1`:                                            "xcc_controller_workload_cluster_cut_off",
		`time() - xcc_serve_last_reconcile_timestamp_seconds > 900`:                                                   "xcc_serve_last_reconcile_timestamp_seconds",
		`sum by (zone, rcode) (rate(coredns_dns_responses_total{job="x", rcode=~"SERV.*"}[$__rate_interval]))`:        "coredns_dns_responses_total",
		`histogram_quantile(0.99, sum by (writer, le) (rate(a_seconds_bucket[5m]))) / on (writer) group_left b_total`: "a_seconds_bucket b_total",
		`count(up == 0) or vector(0)`:                                            "up",
		`topk(10, sum without (pod) (rate(c_total{a="b{c}"}[1h:5m] offset 1d)))`: "c_total",
		`x > 1e3 and y unless z`:                                                 "x y z",
		`sum(rate(q[5m])) by (le)`:                                               "q",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// metricsArgs are the values that turn on every monitoring object of a
// chart (the dashboard only in the management chart).
func metricsArgs(values string, dashboard bool) []string {
	args := []string{"-f", values, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true",
		"--set", "metrics.serviceMonitor.labels.release=prometheus"}
	if dashboard {
		args = append(args, "--set", "metrics.dashboard.enabled=true")
	}
	return args
}

// TestMetricsObjects: off by default, no monitoring object is rendered.
// On, each chart's ServiceMonitor selects only its metrics Service, whose
// ports are named ports of the pod serving /metrics, and gives the job
// the alert rules select by; the PrometheusRule holds files/alerts.yaml
// as it is; the dashboard ConfigMap holds files/dashboard.json.
func TestMetricsObjects(t *testing.T) {
	for _, c := range []struct {
		chart, values, workload string
		ports                   []string
		dashboard               bool
	}{
		{managementChart, "testdata/management-values.yaml", "Deployment", []string{"http"}, true},
		{workloadChart, "testdata/workload-values.yaml", "StatefulSet", []string{"http", "dns-metrics"}, false},
	} {
		t.Run(c.chart, func(t *testing.T) {
			for _, o := range objects(t, render(t, renderCase{chart: c.chart, args: []string{"-f", c.values}})) {
				if k := o["kind"]; k == "ServiceMonitor" || k == "PrometheusRule" || get(o, "metadata", "labels", "app.kubernetes.io/component") == "metrics" ||
					(k == "ConfigMap" && strings.HasSuffix(fmt.Sprint(get(o, "metadata", "name")), "-dashboard")) {
					t.Errorf("rendered by default: %s %v", k, get(o, "metadata", "name"))
				}
			}
			objs := objects(t, render(t, renderCase{chart: c.chart, args: metricsArgs(c.values, c.dashboard)}))
			byKind := map[string][]map[string]any{}
			for _, o := range objs {
				byKind[fmt.Sprint(o["kind"])] = append(byKind[fmt.Sprint(o["kind"])], o)
			}
			if len(byKind["ServiceMonitor"]) != 1 || len(byKind["PrometheusRule"]) != 1 {
				t.Fatalf("%d ServiceMonitors, %d PrometheusRules; want one of each", len(byKind["ServiceMonitor"]), len(byKind["PrometheusRule"]))
			}
			sm := byKind["ServiceMonitor"][0]
			if get(sm, "apiVersion") != "monitoring.coreos.com/v1" || get(sm, "metadata", "labels", "release") != "prometheus" {
				t.Errorf("ServiceMonitor apiVersion %v, labels %v", get(sm, "apiVersion"), get(sm, "metadata", "labels"))
			}
			selector, _ := get(sm, "spec", "selector", "matchLabels").(map[string]any)
			var selected []map[string]any
			for _, svc := range byKind["Service"] {
				labels, _ := get(svc, "metadata", "labels").(map[string]any)
				if matches(selector, labels) {
					selected = append(selected, svc)
				}
			}
			if len(selected) != 1 {
				t.Fatalf("ServiceMonitor selector %v selects %d Services, want the metrics Service alone", selector, len(selected))
			}
			svc := selected[0]
			if job := get(svc, "metadata", "labels", fmt.Sprint(get(sm, "spec", "jobLabel"))); job != c.chart {
				t.Errorf("job label %v, want %s: the alert rules and the dashboard select by it", job, c.chart)
			}
			pod := get(byKind[c.workload][0], "spec", "template")
			if !matches(get(svc, "spec", "selector").(map[string]any), get(pod, "metadata", "labels").(map[string]any)) {
				t.Errorf("metrics Service selector %v does not select the %s's pods", get(svc, "spec", "selector"), c.workload)
			}
			podPorts := map[string]bool{}
			containers, _ := get(pod, "spec", "containers").([]any)
			for i := range containers {
				ports, _ := get(containers[i], "ports").([]any)
				for _, p := range ports {
					podPorts[fmt.Sprint(get(p, "name"))] = true
				}
			}
			svcPorts := map[string]string{}
			list, _ := get(svc, "spec", "ports").([]any)
			for _, p := range list {
				svcPorts[fmt.Sprint(get(p, "name"))] = fmt.Sprint(get(p, "targetPort"))
			}
			endpoints, _ := get(sm, "spec", "endpoints").([]any)
			var scraped []string
			for _, e := range endpoints {
				port := fmt.Sprint(get(e, "port"))
				scraped = append(scraped, port)
				if target, ok := svcPorts[port]; !ok || !podPorts[target] || get(e, "path") != "/metrics" {
					t.Errorf("endpoint %v: Service port %q targets %q, pod ports %v", e, port, target, podPorts)
				}
			}
			if !slices.Equal(scraped, c.ports) {
				t.Errorf("ServiceMonitor scrapes %v, want %v", scraped, c.ports)
			}

			file, err := os.ReadFile(filepath.Join(c.chart, "files", "alerts.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := yaml.Unmarshal(file, &want); err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(t, get(byKind["PrometheusRule"][0], "spec")); got != mustJSON(t, want) {
				t.Errorf("PrometheusRule spec differs from files/alerts.yaml:\n%s", lineDiff(mustJSON(t, want), got))
			}

			var dashboards []map[string]any
			for _, cm := range byKind["ConfigMap"] {
				if strings.HasSuffix(fmt.Sprint(get(cm, "metadata", "name")), "-dashboard") {
					dashboards = append(dashboards, cm)
				}
			}
			if !c.dashboard {
				if len(dashboards) != 0 {
					t.Errorf("dashboard ConfigMap in %s", c.chart)
				}
				return
			}
			if len(dashboards) != 1 {
				t.Fatalf("%d dashboard ConfigMaps, want 1", len(dashboards))
			}
			wantJSON, err := os.ReadFile(dashboardFile)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(get(dashboards[0], "data", "xcc-dns.json")); strings.TrimSpace(got) != strings.TrimSpace(string(wantJSON)) {
				t.Errorf("dashboard ConfigMap differs from %s:\n%s", dashboardFile, lineDiff(string(wantJSON), got))
			}
			if get(dashboards[0], "metadata", "labels", "grafana_dashboard") != "1" {
				t.Errorf("dashboard labels %v, want grafana_dashboard=1 by default", get(dashboards[0], "metadata", "labels"))
			}
		})
	}
}

// matches reports whether labels has every key and value of selector.
func matches(selector, labels map[string]any) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
