// Package charts_test checks the Helm charts: `helm lint` passes, and `helm template`
// renders exactly the golden files in testdata/ (run `make charts-golden`
// after an intended change and review the diff).
//
// The helm tests need a helm binary in $HELM (`make charts-test` builds the
// pinned one and sets it); without it they are skipped.
package charts_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from helm template")

const (
	workloadChart   = "xcc-dns-workload"
	managementChart = "xcc-dns-management"
	releaseName     = "xcc-dns"
	releaseNS       = "xcc-dns"
	helmEnv         = "HELM"
)

// TestOneAppVersion: make images and make push tag both images with one
// version, the charts' appVersion, which each chart pulls by default.
func TestOneAppVersion(t *testing.T) {
	if m, w := appVersion(t, managementChart), appVersion(t, workloadChart); m != w {
		t.Errorf("appVersions differ: %s %s, %s %s; both images are tagged with one", managementChart, m, workloadChart, w)
	}
}

func appVersion(t *testing.T, chart string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s/Chart.yaml: %v", chart, err)
	}
	if c.AppVersion == "" {
		t.Fatalf("%s/Chart.yaml has no appVersion", chart)
	}
	return c.AppVersion
}

func helmBin(t *testing.T) string {
	t.Helper()
	h := os.Getenv(helmEnv)
	if h == "" {
		t.Skipf("$%s not set: run make charts-test", helmEnv)
	}
	return h
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// renderCase is one `helm template` run and its golden file.
type renderCase struct {
	golden string
	chart  string
	args   []string
}

var renderCases = []renderCase{
	{golden: "workload.yaml", chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml"}},
	{golden: "workload-emptydir-nopatch.yaml", chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml",
		"--set", "persistence.enabled=false", "--set", "patchCorefile.enabled=false", "--set", "service.clusterIP=10.96.0.53"}},
	{golden: "management.yaml", chart: managementChart, args: []string{"-f", "testdata/management-values.yaml"}},
	{golden: "management-metrics.yaml", chart: managementChart, args: metricsArgs("testdata/management-values.yaml", true)},
	{golden: "workload-metrics.yaml", chart: workloadChart, args: metricsArgs("testdata/workload-values.yaml", false)},
	{golden: "management-standby.yaml", chart: managementChart, args: []string{"-f", "testdata/management-values.yaml", "--set", "replicas=2"}},
	{golden: "workload-grants.yaml", chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml",
		"--set", "nameGrants[0].namespace=shop,nameGrants[0].suffix=shop.eu.xcc.test,nameGrants[1].namespace=dev-team,nameGrants[1].suffix=dev.xcc.test"}},
	{golden: "management-grants.yaml", chart: managementChart, args: []string{"-f", "testdata/management-values.yaml",
		"--set", "nameGrants[0].namespace=shop,nameGrants[0].suffix=shop.eu.xcc.test"}},
	{golden: "workload-reverse.yaml", chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml", "--set", "reverseCIDRs={192.0.2.0/25,2001:db8::/32}"}},
	{golden: "workload-clusterset-coredns.yaml", chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml", "--set", "mcs.dnsServer=coredns"}},
}

func render(t *testing.T, c renderCase) string {
	t.Helper()
	args := append([]string{"template", releaseName, c.chart, "--namespace", releaseNS}, c.args...)
	out, err := helm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLint(t *testing.T) {
	for _, c := range []struct{ chart, values string }{
		{workloadChart, "testdata/workload-values.yaml"},
		{managementChart, "testdata/management-values.yaml"},
	} {
		if out, err := helm(t, "lint", "--strict", c.chart, "-f", c.values); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

func TestGolden(t *testing.T) {
	for _, c := range renderCases {
		t.Run(c.golden, func(t *testing.T) {
			got := render(t, c)
			path := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run make charts-golden)", err)
			}
			if got != string(want) {
				t.Errorf("helm template %s differs from %s: review the change, then run make charts-golden\n%s", c.chart, path, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  golden: %q\n  now:    %q", i+1, wl, gl)
		}
	}
	return ""
}

// objects splits rendered YAML into objects.
func objects(t *testing.T, rendered string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

// get walks obj along keys (map keys, or int indexes into lists).
func get(obj any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := obj.(map[string]any)
			obj = m[k]
		case int:
			l, _ := obj.([]any)
			if k >= len(l) {
				return nil
			}
			obj = l[k]
		}
	}
	return obj
}

func find(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		if o["kind"] == kind && get(o, "metadata", "name") == name {
			return o
		}
	}
	return nil
}

// TestRenderedWorkload checks properties the golden file alone would let
// slip in a regeneration: the ConfigMap carries the shipped Corefile byte for
// byte, every container is restricted, and the DNS pod's Role reads only
// EndpointSlices.
func TestRenderedWorkload(t *testing.T) {
	objs := objects(t, render(t, renderCases[0]))
	cm := find(objs, "ConfigMap", releaseName+"-corefile")
	copied, err := os.ReadFile(filepath.Join(workloadChart, "files", "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	if got := get(cm, "data", "Corefile"); got != string(copied) {
		t.Errorf("rendered Corefile differs from files/Corefile:\n%s", lineDiff(string(copied), fmt.Sprint(got)))
	}

	role := find(objs, "Role", releaseName)
	rules, _ := json(t, get(role, "rules"))
	if want := `[{"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":["get","list","watch"]}]`; rules != want {
		t.Errorf("DNS pod Role rules = %s, want %s", rules, want)
	}
	hookRole := find(objs, "Role", releaseName+"-patch-corefile")
	if ns := get(hookRole, "metadata", "namespace"); ns != "kube-system" {
		t.Errorf("hook Role namespace = %v, want kube-system", ns)
	}
	rules, _ = json(t, get(hookRole, "rules"))
	if want := `[{"apiGroups":[""],"resourceNames":["coredns"],"resources":["configmaps"],"verbs":["get","update"]}]`; rules != want {
		t.Errorf("hook Role rules = %s, want %s", rules, want)
	}

	svc := find(objs, "Service", releaseName)
	ports, _ := json(t, get(svc, "spec", "ports"))
	if want := `[{"name":"dns","port":53,"protocol":"UDP","targetPort":"dns"},{"name":"dns-tcp","port":53,"protocol":"TCP","targetPort":"dns-tcp"}]`; ports != want {
		t.Errorf("Service ports = %s, want %s", ports, want)
	}

	checked := 0
	for _, o := range objs {
		var spec any
		switch o["kind"] {
		case "Deployment", "StatefulSet", "Job":
			spec = get(o, "spec", "template", "spec")
		default:
			continue
		}
		checkRestricted(t, fmt.Sprint(o["kind"], "/", get(o, "metadata", "name")), spec)
		checked++
	}
	if checked != 3 {
		t.Errorf("checked %d pod templates, want 3 (the DNS StatefulSet and two hook Jobs)", checked)
	}
}

func TestRenderedManagement(t *testing.T) {
	objs := objects(t, render(t, renderCases[0+2]))
	dep := find(objs, "Deployment", releaseName+"-controller")
	checkRestricted(t, "controller Deployment", get(dep, "spec", "template", "spec"))
	args, _ := json(t, get(dep, "spec", "template", "spec", "containers", 0, "args"))
	for _, want := range []string{`"controller"`, `"--slice-namespace=xcc-dns"`, `"--leader-elect=true"`, `"--leader-election-namespace=xcc-dns"`, `"--http-address=:8080"`} {
		if !strings.Contains(args, want) {
			t.Errorf("controller args %s lack %s", args, want)
		}
	}
	cr := find(objs, "ClusterRole", releaseName+"-controller")
	rules, _ := json(t, get(cr, "rules"))
	for _, forbidden := range []string{`"*"`, `"delete"`, `"create","patch"]},{"apiGroups":[""],"resources":["secrets"]`} {
		if strings.Contains(rules, forbidden) {
			t.Errorf("controller ClusterRole grants %s: %s", forbidden, rules)
		}
	}
	// ClusterSets are read, their finalizer patched and status written;
	// never deleted.
	for _, want := range []string{
		`{"apiGroups":["xcc-dns.io"],"resources":["clustersets"],"verbs":["get","list","watch","update","patch"]}`,
		`{"apiGroups":["xcc-dns.io"],"resources":["clustersets/status"],"verbs":["update","patch"]}`,
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("controller ClusterRole lacks %s: %s", want, rules)
		}
	}
	if n := strings.Count(rules, `"xcc-dns.io"`); n != 2 {
		t.Errorf("controller ClusterRole has %d rules on xcc-dns.io, want the 2 above: %s", n, rules)
	}
	// The state: ConfigMaps of the release namespace alone, listed to
	// find the ClusterSets deleted while no controller ran.
	state := find(objs, "Role", releaseName+"-state")
	if ns := get(state, "metadata", "namespace"); ns != releaseNS {
		t.Errorf("state Role namespace = %v, want the release namespace", ns)
	}
	stateRules, _ := json(t, get(state, "rules"))
	if want := `[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","create","update","delete"]}]`; stateRules != want {
		t.Errorf("state Role rules = %s, want %s", stateRules, want)
	}
}

// The operator's allowed CIDRs reach the controller as one flag, and only
// when set: empty means any address, as before the value existed.
func TestManagementAllowedCIDRs(t *testing.T) {
	flagOf := func(args ...string) string {
		objs := objects(t, render(t, renderCase{chart: managementChart, args: append([]string{"-f", "testdata/management-values.yaml"}, args...)}))
		got, _ := json(t, get(find(objs, "Deployment", releaseName+"-controller"), "spec", "template", "spec", "containers", 0, "args"))
		return got
	}
	if args := flagOf(); strings.Contains(args, "--allowed-cidrs") {
		t.Errorf("controller args %s: --allowed-cidrs without allowedCIDRs", args)
	}
	if args, want := flagOf("--set", "allowedCIDRs={192.0.2.0/24,2001:db8::/32}"), `"--allowed-cidrs=192.0.2.0/24,2001:db8::/32"`; !strings.Contains(args, want) {
		t.Errorf("controller args %s lack %s", args, want)
	}
}

// Each limit reaches the controller as its flag only when set: unset, the
// controller's default holds (one place for the defaults).
func TestManagementLimits(t *testing.T) {
	flagOf := func(args ...string) string {
		objs := objects(t, render(t, renderCase{chart: managementChart, args: append([]string{"-f", "testdata/management-values.yaml"}, args...)}))
		got, _ := json(t, get(find(objs, "Deployment", releaseName+"-controller"), "spec", "template", "spec", "containers", 0, "args"))
		return got
	}
	if args := flagOf(); strings.Contains(args, "--max-") || strings.Contains(args, "--workload-") {
		t.Errorf("controller args %s: a limit flag without limits", args)
	}
	for value, want := range map[string]string{
		"limits.namesPerCluster=7":                  `"--max-names-per-cluster=7"`,
		"limits.namesPerGatewayDNS=8":               `"--max-names-per-gatewaydns=8"`,
		"limits.headlessEndpointsPerCluster=9":      `"--max-headless-endpoints-per-cluster=9"`,
		"limits.headlessEndpointsPerGatewayDNS=10":  `"--max-headless-endpoints-per-gatewaydns=10"`,
		"limits.workloadListPageSize=11":            `"--workload-list-page-size=11"`,
		"limits.workloadMaxResponseBytes=67108864":  `"--workload-max-response-bytes=67108864"`,
		"limits.workloadMaxListBytes=1048576":       `"--workload-max-list-bytes=1048576"`,
		"limits.workloadMaxBytesPerCluster=2097152": `"--workload-max-bytes-per-cluster=2097152"`,
		"limits.workloadMaxObjects=100000":          `"--workload-max-objects=100000"`,
		"limits.workloadListTimeout=1m":             `"--workload-list-timeout=1m"`,
		"limits.workloadWatchTimeout=5m":            `"--workload-watch-timeout=5m"`,
		"limits.workloadCutOffRetry=2m":             `"--workload-cut-off-retry=2m"`,
		"limits.exportsPerMember=12":                `"--max-exports-per-member=12"`,
		"limits.endpointsPerMember=13":              `"--max-endpoints-per-member=13"`,
		"limits.slicesPerMember=14":                 `"--max-slices-per-member=14"`,
	} {
		if args := flagOf("--set", value); !strings.Contains(args, want) {
			t.Errorf("%s: controller args %s lack %s", value, args, want)
		}
	}
}

// zoneFlags returns the flags serve gets, the flags the init container
// that writes the guard gets, and the DNS container's environment, as
// JSON text.
func zoneFlags(t *testing.T, objs []map[string]any) (serve, guard, env string) {
	t.Helper()
	spec := get(find(objs, "StatefulSet", releaseName), "spec", "template", "spec")
	serve, _ = json(t, get(spec, "containers", 0, "args"))
	guard, _ = json(t, get(spec, "initContainers", 0, "args"))
	env, _ = json(t, get(spec, "containers", 1, "env"))
	return serve, guard, env
}

// The Corefile is files/Corefile whatever the zone, grants and reverse
// CIDRs: the guard file the init container writes from the same flags as
// serve's holds them. Every zone renders.
func TestWorkloadZoneFlags(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		flags []string
	}{
		{"reverse CIDRs", renderCases[len(renderCases)-2].args, []string{`"--reverse-cidrs=192.0.2.0/25,2001:db8::/32"`}},
		{"grants", renderCases[len(renderCases)-4].args, []string{`"--name-grants=shop=shop.eu.xcc.test;dev-team=dev.xcc.test"`}},
		{"another zone", []string{"-f", "testdata/workload-values.yaml", "--set", "domain=mesh.example.org"}, []string{`"--domain=mesh.example.org"`}},
		{"clusterset zone", []string{"-f", "testdata/workload-values.yaml"}, []string{`"--clusterset-zone=clusterset.local"`}},
		{"no clusterset zone", []string{"-f", "testdata/workload-values.yaml", "--set", "mcs.dnsZone="}, []string{`"--clusterset-zone="`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := objects(t, render(t, renderCase{chart: workloadChart, args: c.args}))
			shipped, err := os.ReadFile(filepath.Join(workloadChart, "files", "Corefile"))
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(get(find(objs, "ConfigMap", releaseName+"-corefile"), "data", "Corefile")); got != string(shipped) {
				t.Errorf("rendered Corefile:\n%s", lineDiff(string(shipped), got))
			}
			serve, guard, env := zoneFlags(t, objs)
			if !strings.HasPrefix(guard, `["corefile","--out=/etc/xcc-dns/guard.conf",`) {
				t.Errorf("init container args %s: want xcc-syncer corefile --out=/etc/xcc-dns/guard.conf", guard)
			}
			for _, flag := range c.flags {
				if !strings.Contains(serve, flag) || !strings.Contains(guard, flag) {
					t.Errorf("serve args %s and guard args %s: want both %s", serve, guard, flag)
				}
			}
			if !strings.Contains(env, `{"name":"XCC_GUARD","value":"/etc/xcc-dns/guard.conf"}`) {
				t.Errorf("DNS container env %s lacks XCC_GUARD", env)
			}
		})
	}
	hookArgs, _ := json(t, get(find(objects(t, render(t, renderCases[len(renderCases)-2])), "Job", releaseName+"-patch-corefile-add"), "spec", "template", "spec", "containers", 0, "args"))
	for _, want := range []string{`"--reverse-cidrs=192.0.2.0/25,2001:db8::/32"`, `"--clusterset-zone=clusterset.local"`} {
		if !strings.Contains(hookArgs, want) {
			t.Errorf("patch-corefile hook args %s lack %s", hookArgs, want)
		}
	}
}

// extraServerBlocks are appended to the Corefile; a Corefile of one's own
// that does not import the guard is refused (TestRenderRefusals).
func TestWorkloadExtraServerBlocks(t *testing.T) {
	const block = "corp.example:5353 {\n    forward . 192.0.2.53\n}\n"
	objs := objects(t, render(t, renderCase{chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml", "--set-string", "extraServerBlocks=" + block}}))
	got := fmt.Sprint(get(find(objs, "ConfigMap", releaseName+"-corefile"), "data", "Corefile"))
	if !strings.HasSuffix(strings.TrimSpace(got), strings.TrimSpace(block)) || !strings.Contains(got, "import xcc-zone") {
		t.Errorf("rendered Corefile does not end with the extra block:\n%s", got)
	}
}

// TestRenderedTypes decodes every rendered object strictly into its
// Kubernetes API type: a misspelt or misplaced field fails here rather than
// being dropped by the API server at install time.
func TestRenderedTypes(t *testing.T) {
	for _, c := range renderCases {
		for _, o := range objects(t, render(t, c)) {
			kind, name := fmt.Sprint(o["kind"]), get(o, "metadata", "name")
			var typed any
			switch kind {
			case "ServiceAccount":
				typed = &corev1.ServiceAccount{}
			case "ConfigMap":
				typed = &corev1.ConfigMap{}
			case "Service":
				typed = &corev1.Service{}
			case "PersistentVolumeClaim":
				typed = &corev1.PersistentVolumeClaim{}
			case "Deployment":
				typed = &appsv1.Deployment{}
			case "StatefulSet":
				typed = &appsv1.StatefulSet{}
			case "PodDisruptionBudget":
				typed = &policyv1.PodDisruptionBudget{}
			case "Job":
				typed = &batchv1.Job{}
			case "Role":
				typed = &rbacv1.Role{}
			case "RoleBinding":
				typed = &rbacv1.RoleBinding{}
			case "ClusterRole":
				typed = &rbacv1.ClusterRole{}
			case "ClusterRoleBinding":
				typed = &rbacv1.ClusterRoleBinding{}
			case "NetworkPolicy":
				typed = &networkingv1.NetworkPolicy{}
			case "ServiceMonitor", "PrometheusRule":
				// The Prometheus Operator's types are not a dependency:
				// TestMetricsObjects checks these.
				continue
			case "CustomResourceDefinition":
				// The MCS CRDs are upstream's (files/mcs), checked against
				// them by TestWorkloadMCSCRDs rather than decoded here.
				if _, ok := mcsCRDFiles(t)[fmt.Sprint(name)]; !ok {
					t.Errorf("%s: CRD %v is not one of files/mcs", c.golden, name)
				}
				continue
			default:
				t.Errorf("%s: %s %v: kind not checked; add it to this test", c.golden, kind, name)
				continue
			}
			raw, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(raw, typed); err != nil {
				t.Errorf("%s: %s %v: %v", c.golden, kind, name, err)
			}
		}
	}
}

// TestImageValues: image.registry alone names every image, tagged with the
// chart's appVersion (the tag make push uses); the per-image repository and
// tag values still override it.
func TestImageValues(t *testing.T) {
	const registry = "registry.example.com/xcc-dns"
	tag := appVersion(t, workloadChart)
	for _, c := range []struct {
		name  string
		chart string
		args  []string
		want  map[string]string // container name -> image, in every Deployment and Job
	}{
		{"management, registry", managementChart, []string{"--set", "image.registry=" + registry},
			map[string]string{"controller": registry + "/xcc-syncer:" + tag}},
		{"management, tag", managementChart, []string{"--set", "image.registry=" + registry, "--set", "image.tag=0.2.0-rc.1"},
			map[string]string{"controller": registry + "/xcc-syncer:0.2.0-rc.1"}},
		{"management, repository override", managementChart, []string{"--set", "image.registry=" + registry, "--set", "image.repository=mirror.example.com/syncer"},
			map[string]string{"controller": "mirror.example.com/syncer:" + tag}},
		{"workload, registry", workloadChart, []string{"--set", "image.registry=" + registry},
			map[string]string{"xcc-syncer": registry + "/xcc-syncer:" + tag, "coredns": registry + "/coredns:" + tag, "patch-corefile": registry + "/xcc-syncer:" + tag}},
		{"workload, tag of both", workloadChart, []string{"--set", "image.registry=" + registry, "--set", "image.tag=dev"},
			map[string]string{"xcc-syncer": registry + "/xcc-syncer:dev", "coredns": registry + "/coredns:dev", "patch-corefile": registry + "/xcc-syncer:dev"}},
		{"workload, upstream CoreDNS", workloadChart, []string{"--set", "image.registry=" + registry,
			"--set", "coredns.image.repository=registry.k8s.io/coredns/coredns", "--set", "coredns.image.tag=v1.15.0"},
			map[string]string{"xcc-syncer": registry + "/xcc-syncer:" + tag, "coredns": "registry.k8s.io/coredns/coredns:v1.15.0", "patch-corefile": registry + "/xcc-syncer:" + tag}},
		{"workload, both repositories and no registry", workloadChart, []string{
			"--set", "syncer.image.repository=mirror.example.com/syncer", "--set", "syncer.image.tag=v1",
			"--set", "coredns.image.repository=mirror.example.com/coredns"},
			map[string]string{"xcc-syncer": "mirror.example.com/syncer:v1", "coredns": "mirror.example.com/coredns:" + tag, "patch-corefile": "mirror.example.com/syncer:v1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, o := range objects(t, render(t, renderCase{chart: c.chart, args: c.args})) {
				if o["kind"] != "Deployment" && o["kind"] != "StatefulSet" && o["kind"] != "Job" {
					continue
				}
				containers, _ := get(o, "spec", "template", "spec", "containers").([]any)
				for _, ct := range containers {
					name, _ := get(ct, "name").(string)
					image, _ := get(ct, "image").(string)
					if prev, ok := got[name]; ok && prev != image {
						t.Errorf("container %s has images %s and %s", name, prev, image)
					}
					got[name] = image
				}
			}
			for name, want := range c.want {
				if got[name] != want {
					t.Errorf("container %s: image %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

// TestRenderRefusals: values that would give a broken install fail at render.
func TestRenderRefusals(t *testing.T) {
	for _, c := range []struct {
		name, chart, want string
		args              []string
	}{
		{"workload without a registry", workloadChart, "image.registry is required", nil},
		{"management without a registry", managementChart, "image.registry is required", nil},
		{"workload with one repository and no registry", workloadChart, "(or set coredns.image.repository)", []string{"--set", "syncer.image.repository=registry.example.com/other/syncer"}},
		{"registry with a scheme", workloadChart, "does not match pattern", []string{"--set", "image.registry=https://registry.example.com/xcc-dns"}},
		{"registry with a trailing slash", managementChart, "does not match pattern", []string{"--set", "image.registry=registry.example.com/xcc-dns/"}},
		{"a Corefile without the guard", workloadChart, "corefile must `import {$XCC_GUARD}`", []string{"-f", "testdata/workload-values.yaml", "--set-string", "corefile=xcc.test:5353 { etcd }"}},
		{"workload with an unknown value", workloadChart, "additional properties", []string{"-f", "testdata/workload-values.yaml", "--set", "persistance.enabled=false"}},
		{"three controllers", managementChart, "maximum", []string{"-f", "testdata/management-values.yaml", "--set", "replicas=3"}},
		{"an allowed CIDR that is not one", managementChart, "allowedCIDRs", []string{"-f", "testdata/management-values.yaml", "--set", "allowedCIDRs={192.0.2.0}"}},
		{"a reverse CIDR CoreDNS refuses as a server block key", workloadChart, "reverseCIDRs", []string{"-f", "testdata/workload-values.yaml", "--set", "reverseCIDRs={::/0}"}},
		{"a reverse CIDR that is not one", workloadChart, "reverseCIDRs", []string{"-f", "testdata/workload-values.yaml", "--set", "reverseCIDRs={10.0.0.1}"}},
		{"two controllers without leader election", managementChart, "needs leaderElection", []string{"-f", "testdata/management-values.yaml", "--set", "replicas=2", "--set", "leaderElection.enabled=false"}},
		{"an exec allow entry that is a list", managementChart, "does not match pattern", []string{"-f", "testdata/management-values.yaml", "--set", `allowKubeconfigExec={aws\,sh}`}},
		// The embedded etcd has no authentication: off loopback anyone could
		// write records or join it.
		{"etcd client URL on the pod IP", workloadChart, `etcd.clientURL "http://0.0.0.0:2379" is not on loopback`, []string{"-f", "testdata/workload-values.yaml", "--set", "etcd.clientURL=http://0.0.0.0:2379"}},
		{"etcd client URL behind a loopback userinfo", workloadChart, "is not on loopback", []string{"-f", "testdata/workload-values.yaml", "--set", "etcd.clientURL=http://127.0.0.1@10.0.0.5:2379"}},
		{"etcd client URL on a name starting 127.", workloadChart, "is not on loopback", []string{"-f", "testdata/workload-values.yaml", "--set", "etcd.clientURL=http://127.0.0.1.example.com:2379"}},
		{"etcd peer URL on a node address", workloadChart, `etcd.peerURL "http://10.0.0.5:2380" is not on loopback`, []string{"-f", "testdata/workload-values.yaml", "--set", "etcd.peerURL=http://10.0.0.5:2380"}},
		{"etcd client URL in extraArgs", workloadChart, "set etcd.clientURL or etcd.peerURL instead", []string{"-f", "testdata/workload-values.yaml", "--set", "syncer.extraArgs={--etcd-client-url,http://10.0.0.5:2379}"}},
		{"an unknown clusterset server", workloadChart, "mcs.dnsServer", []string{"-f", "testdata/workload-values.yaml", "--set", "mcs.dnsServer=etcd"}},
		{"the cluster DNS answering no clusterset zone", workloadChart, "mcs.dnsServer coredns needs mcs.dnsZone", []string{"-f", "testdata/workload-values.yaml", "--set", "mcs.dnsServer=coredns", "--set", "mcs.dnsZone="}},
		{"network policy admitting every pod in the cluster DNS namespace", workloadChart, "minProperties", []string{"-f", "testdata/workload-values.yaml", "--set", "networkPolicy.clusterDNS.podLabels.k8s-app=null"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"template", releaseName, c.chart, "--namespace", releaseNS}, c.args...)
			_, err := helm(t, args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("helm template: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestLoopbackEtcdURLs: every loopback form renders, into serve's flags and
// CoreDNS's ETCD_ENDPOINT alike.
func TestLoopbackEtcdURLs(t *testing.T) {
	for _, url := range []string{"http://127.0.0.1:2379", "http://127.3.2.1:2379", "http://[::1]:2379", "http://localhost:2379"} {
		objs := objects(t, render(t, renderCase{chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml", "--set", "etcd.clientURL=" + url}}))
		spec := get(find(objs, "StatefulSet", releaseName), "spec", "template", "spec")
		args, _ := json(t, get(container(t, spec, "xcc-syncer"), "args"))
		env, _ := json(t, get(container(t, spec, "coredns"), "env"))
		if !strings.Contains(args, `"--etcd-client-url=`+url+`"`) || !strings.Contains(env, `{"name":"ETCD_ENDPOINT","value":"`+url+`"}`) {
			t.Errorf("%s: serve args %s, CoreDNS env %s", url, args, env)
		}
	}
}

// serviceAccountDir is where client-go's in-cluster config reads the token,
// the CA and the namespace.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// TestServiceAccountToken: the DNS pod does not automount its token; only
// xcc-syncer mounts it, from a projected volume holding what client-go's
// in-cluster config reads. CoreDNS has no token. The hook Jobs keep the
// automounted token of their own ServiceAccount.
func TestServiceAccountToken(t *testing.T) {
	objs := objects(t, render(t, renderCases[0]))
	spec := get(find(objs, "StatefulSet", releaseName), "spec", "template", "spec")
	if got := get(spec, "automountServiceAccountToken"); got != false {
		t.Errorf("DNS pod automountServiceAccountToken = %v, want false", got)
	}
	if got := get(find(objs, "ServiceAccount", releaseName), "automountServiceAccountToken"); got != false {
		t.Errorf("DNS pod ServiceAccount automountServiceAccountToken = %v, want false", got)
	}

	tokenVolumes := map[string]bool{}
	volumes, _ := get(spec, "volumes").([]any)
	for i := range volumes {
		if get(volumes[i], "projected") == nil {
			continue
		}
		if sources, _ := json(t, get(volumes[i], "projected", "sources")); strings.Contains(sources, `"serviceAccountToken"`) {
			tokenVolumes[fmt.Sprint(get(volumes[i], "name"))] = true
			want := `[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},` +
				`{"configMap":{"items":[{"key":"ca.crt","path":"ca.crt"}],"name":"kube-root-ca.crt"}},` +
				`{"downwardAPI":{"items":[{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"},"path":"namespace"}]}}]`
			if sources != want {
				t.Errorf("token volume sources = %s, want %s", sources, want)
			}
		}
	}
	mountsToken := func(name string) bool {
		mounts, _ := get(container(t, spec, name), "volumeMounts").([]any)
		for i := range mounts {
			if tokenVolumes[fmt.Sprint(get(mounts[i], "name"))] || strings.HasPrefix(fmt.Sprint(get(mounts[i], "mountPath")), "/var/run/secrets") {
				return get(mounts[i], "mountPath") == serviceAccountDir && get(mounts[i], "readOnly") == true
			}
		}
		return false
	}
	if !mountsToken("xcc-syncer") {
		t.Errorf("xcc-syncer does not mount the token read-only at %s", serviceAccountDir)
	}
	mounts, _ := json(t, get(container(t, spec, "coredns"), "volumeMounts"))
	for name := range tokenVolumes {
		if strings.Contains(mounts, `"name":"`+name+`"`) || strings.Contains(mounts, "/var/run/secrets") {
			t.Errorf("coredns mounts a token: %s", mounts)
		}
	}

	for _, phase := range []string{"add", "remove"} {
		job := find(objs, "Job", releaseName+"-patch-corefile-"+phase)
		if job == nil {
			t.Fatalf("no hook Job %s", phase)
		}
		if got := get(job, "spec", "template", "spec", "automountServiceAccountToken"); got == false {
			t.Errorf("hook Job %s: its one container needs the token, but automount is off", phase)
		}
	}
	if got := get(find(objs, "ServiceAccount", releaseName+"-patch-corefile"), "automountServiceAccountToken"); got == false {
		t.Error("hook ServiceAccount: automount is off, the hook Jobs would have no token")
	}
}

// TestNetworkPolicy: by default only the cluster DNS pods reach the DNS
// port, and every source the HTTP ports; the values narrow or remove it.
func TestNetworkPolicy(t *testing.T) {
	const (
		dnsRule = `{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"kube-system"}},"podSelector":{"matchLabels":{"k8s-app":"kube-dns"}}}],` +
			`"ports":[{"port":5353,"protocol":"UDP"},{"port":5353,"protocol":"TCP"}]}`
		httpPorts  = `"ports":[{"port":8080,"protocol":"TCP"},{"port":8081,"protocol":"TCP"},{"port":8181,"protocol":"TCP"},{"port":9153,"protocol":"TCP"}]`
		monitoring = `[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`
	)
	for _, c := range []struct {
		name    string
		args    []string
		ingress string // "": no NetworkPolicy
	}{
		{"default", nil, `[` + dnsRule + `,{` + httpPorts + `}]`},
		{"HTTP from monitoring only", []string{"--set", "networkPolicy.http.allowAll=false", "--set-json", "networkPolicy.http.from=" + monitoring},
			`[` + dnsRule + `,{"from":` + monitoring + `,` + httpPorts + `}]`},
		{"HTTP closed", []string{"--set", "networkPolicy.http.allowAll=false"}, `[` + dnsRule + `]`},
		{"disabled", []string{"--set", "networkPolicy.enabled=false"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := objects(t, render(t, renderCase{chart: workloadChart, args: append([]string{"-f", "testdata/workload-values.yaml"}, c.args...)}))
			np := find(objs, "NetworkPolicy", releaseName)
			if c.ingress == "" {
				if np != nil {
					t.Fatalf("NetworkPolicy rendered: %v", np)
				}
				return
			}
			if np == nil {
				t.Fatal("no NetworkPolicy")
			}
			selector, _ := json(t, get(np, "spec", "podSelector"))
			pod, _ := json(t, map[string]any{"matchLabels": get(find(objs, "StatefulSet", releaseName), "spec", "selector", "matchLabels")})
			if selector != pod {
				t.Errorf("podSelector %s, want the DNS pod's %s", selector, pod)
			}
			if types, _ := json(t, get(np, "spec", "policyTypes")); types != `["Ingress"]` {
				t.Errorf("policyTypes %s", types)
			}
			if ingress, _ := json(t, get(np, "spec", "ingress")); ingress != c.ingress {
				t.Errorf("ingress\n got %s\nwant %s", ingress, c.ingress)
			}
		})
	}
}

func container(t *testing.T, spec any, name string) any {
	t.Helper()
	containers, _ := get(spec, "containers").([]any)
	for i := range containers {
		if get(containers[i], "name") == name {
			return containers[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

// checkRestricted fails unless the pod spec meets the restricted Pod
// Security Standard the charts promise.
func checkRestricted(t *testing.T, what string, spec any) {
	t.Helper()
	if get(spec, "securityContext", "runAsNonRoot") != true || get(spec, "securityContext", "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("%s: pod securityContext not restricted: %v", what, get(spec, "securityContext"))
	}
	containers, _ := get(spec, "containers").([]any)
	if len(containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	for _, list := range []string{"initContainers", "containers"} {
		containers, _ := get(spec, list).([]any)
		for i := range containers {
			sc := get(spec, list, i, "securityContext")
			drop, _ := json(t, get(sc, "capabilities", "drop"))
			if get(sc, "runAsNonRoot") != true || get(sc, "readOnlyRootFilesystem") != true ||
				get(sc, "allowPrivilegeEscalation") != false || drop != `["ALL"]` ||
				get(sc, "seccompProfile", "type") != "RuntimeDefault" {
				t.Errorf("%s container %v: securityContext not restricted: %v", what, get(spec, list, i, "name"), sc)
			}
			if get(spec, list, i, "resources") == nil {
				t.Errorf("%s container %v: no resources", what, get(spec, list, i, "name"))
			}
		}
	}
}

func json(t *testing.T, v any) (string, error) {
	t.Helper()
	if v == nil {
		t.Error("missing value")
		return "", errors.New("missing")
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(j), nil
}

// TestWorkloadReplicas: two DNS replicas by default, each with its own
// volume, replaced one at a time, evicted one at a time, spread over nodes,
// and stopping only after CoreDNS's drain (serve outlives it).
func TestWorkloadReplicas(t *testing.T) {
	objs := objects(t, render(t, renderCases[0]))
	sts := find(objs, "StatefulSet", releaseName)
	for _, c := range []struct {
		path []any
		want string
	}{
		{[]any{"spec", "replicas"}, "2"},
		{[]any{"spec", "podManagementPolicy"}, `"Parallel"`},
		{[]any{"spec", "updateStrategy"}, `{"type":"RollingUpdate"}`},
		{[]any{"spec", "volumeClaimTemplates", 0, "metadata", "name"}, `"etcd-data"`},
		{[]any{"spec", "template", "spec", "topologySpreadConstraints", 0, "topologyKey"}, `"kubernetes.io/hostname"`},
		{[]any{"spec", "template", "spec", "topologySpreadConstraints", 0, "labelSelector", "matchLabels"}, mustJSON(t, get(sts, "spec", "selector", "matchLabels"))},
	} {
		if got := mustJSON(t, get(sts, c.path...)); got != c.want {
			t.Errorf("StatefulSet %v = %s, want %s", c.path, got, c.want)
		}
	}
	if find(objs, "PersistentVolumeClaim", releaseName+"-etcd") != nil {
		t.Error("a PersistentVolumeClaim shared by the replicas is rendered; each needs its own")
	}
	pdb := find(objs, "PodDisruptionBudget", releaseName)
	if got := mustJSON(t, get(pdb, "spec")); got != `{"maxUnavailable":1,"selector":{"matchLabels":`+mustJSON(t, get(sts, "spec", "selector", "matchLabels"))+`}}` {
		t.Errorf("PodDisruptionBudget spec = %s", got)
	}
	podSpec := get(sts, "spec", "template", "spec")
	args := mustJSON(t, get(container(t, podSpec, "xcc-syncer"), "args"))
	for _, want := range []string{`"--cluster-dns-configmap=kube-system/coredns"`, `"--cluster-dns-service=xcc-dns/xcc-dns"`} {
		if !strings.Contains(args, want) {
			t.Errorf("serve args %s lack %s", args, want)
		}
	}
	// A stopping replica answers through CoreDNS's drain, and serve (its
	// etcd) outlives it; lameduck would run after the etcd plugin closed.
	drain := durationArg(t, get(container(t, podSpec, "coredns"), "args"), "-drain")
	delay := durationArg(t, get(container(t, podSpec, "xcc-syncer"), "args"), "--shutdown-delay")
	if drain <= 0 || delay <= drain {
		t.Errorf("CoreDNS -drain %s, serve --shutdown-delay %s: want a drain, and serve stopping after it", drain, delay)
	}
	// The endpoint must stop serving (serve's readiness fails) well
	// inside the drain, for kube-proxy to unpin flows before CoreDNS exits.
	probe := get(container(t, podSpec, "xcc-syncer"), "readinessProbe")
	period, _ := get(probe, "periodSeconds").(float64)
	failures, _ := get(probe, "failureThreshold").(float64)
	if notReady := time.Duration(period*failures) * time.Second; notReady == 0 || 2*notReady > drain {
		t.Errorf("serve's readiness probe marks a stopping pod unready after up to %s; want at most half of the %s drain", notReady, drain)
	}
	corefile := mustJSON(t, get(find(objs, "ConfigMap", releaseName+"-corefile"), "data", "Corefile"))
	if regexp.MustCompile(`\\n\s*lameduck\s`).MatchString(corefile) {
		t.Error("the Corefile has a lameduck: its queries would fail, the etcd plugin closes before it")
	}
	if got := mustJSON(t, get(find(objs, "Service", releaseName), "metadata", "finalizers")); got != `["xcc-dns.io/cluster-dns-forward"]` {
		t.Errorf("Service finalizers = %s, want the forward block's", got)
	}

	// Without persistence: an emptyDir per pod, no claim templates; without
	// the patch hooks: no finalizer and no Corefile flags.
	objs = objects(t, render(t, renderCases[1]))
	sts = find(objs, "StatefulSet", releaseName)
	if v := get(sts, "spec", "volumeClaimTemplates"); v != nil {
		t.Errorf("volumeClaimTemplates without persistence: %v", v)
	}
	if v := get(find(objs, "Service", releaseName), "metadata", "finalizers"); v != nil {
		t.Errorf("Service finalizers without patchCorefile: %v", v)
	}
	if args := mustJSON(t, get(container(t, get(sts, "spec", "template", "spec"), "xcc-syncer"), "args")); strings.Contains(args, "--cluster-dns") {
		t.Errorf("serve keeps the forward block without patchCorefile: %s", args)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	s, err := json(t, v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// durationArg is the duration given to the flag name in args (["flag", "5s"] or
// ["flag=5s"]), 0 when it is absent.
func durationArg(t *testing.T, args any, name string) time.Duration {
	t.Helper()
	list, _ := args.([]any)
	for i, a := range list {
		arg, _ := a.(string)
		value, found := strings.CutPrefix(arg, name+"=")
		if !found && arg == name && i+1 < len(list) {
			value, _ = list[i+1].(string)
			found = true
		}
		if found {
			d, err := time.ParseDuration(value)
			if err != nil {
				t.Fatalf("%s %q: %v", name, value, err)
			}
			return d
		}
	}
	return 0
}

// mcsCRDFiles returns the CRDs of the workload chart's files/mcs by name.
func mcsCRDFiles(t *testing.T) map[string]map[string]any {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(workloadChart, "files", "mcs", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds := map[string]map[string]any{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		crds[fmt.Sprint(get(crd, "metadata", "name"))] = crd
	}
	return crds
}

// TestWorkloadMCSCRDs: by default the chart installs the ServiceExport and
// ServiceImport CRDs exactly as files/mcs has them (v1beta1 stored,
// v1alpha1 served), kept on uninstall; with mcs.crds=false none, for a
// cluster where another MCS implementation owns them.
func TestWorkloadMCSCRDs(t *testing.T) {
	files := mcsCRDFiles(t)
	want := []string{"serviceexports.multicluster.x-k8s.io", "serviceimports.multicluster.x-k8s.io"}
	if len(files) != len(want) {
		t.Fatalf("files/mcs holds %d CRDs, want %v (run make generate)", len(files), want)
	}
	crdsOf := func(args ...string) map[string]map[string]any {
		objs := objects(t, render(t, renderCase{chart: workloadChart, args: append([]string{"-f", "testdata/workload-values.yaml"}, args...)}))
		out := map[string]map[string]any{}
		for _, o := range objs {
			if o["kind"] == "CustomResourceDefinition" {
				out[fmt.Sprint(get(o, "metadata", "name"))] = o
			}
		}
		return out
	}

	for _, args := range [][]string{nil, {"--set", "mcs.crds=true"}} {
		got := crdsOf(args...)
		if len(got) != len(want) {
			t.Errorf("%v: rendered %d CRDs, want %v", args, len(got), want)
		}
		for _, name := range want {
			crd, file := got[name], files[name]
			if crd == nil || file == nil {
				t.Errorf("%v: CRD %s rendered %t, in files/mcs %t", args, name, crd != nil, file != nil)
				continue
			}
			if a := get(crd, "metadata", "annotations", "helm.sh/resource-policy"); a != "keep" {
				t.Errorf("%s: helm.sh/resource-policy %v, want keep: an uninstall would delete every object of the kind", name, a)
			}
			if l := get(crd, "metadata", "labels", "multicluster.x-k8s.io/release-version"); l != get(file, "metadata", "labels", "multicluster.x-k8s.io/release-version") {
				t.Errorf("%s: release-version label %v, files/mcs has %v", name, l, get(file, "metadata", "labels", "multicluster.x-k8s.io/release-version"))
			}
			if g, w := mustJSON(t, crd["spec"]), mustJSON(t, file["spec"]); g != w {
				t.Errorf("%s: rendered spec differs from files/mcs:\n%s", name, lineDiff(w, g))
			}
			versions := map[string]string{}
			list, _ := get(crd, "spec", "versions").([]any)
			for _, v := range list {
				versions[fmt.Sprint(get(v, "name"))] = fmt.Sprintf("served=%v storage=%v", get(v, "served"), get(v, "storage"))
			}
			if w := map[string]string{"v1alpha1": "served=true storage=false", "v1beta1": "served=true storage=true"}; fmt.Sprint(versions) != fmt.Sprint(w) {
				t.Errorf("%s: versions %v, want %v", name, versions, w)
			}
		}
	}
	if got := crdsOf("--set", "mcs.crds=false"); len(got) != 0 {
		t.Errorf("mcs.crds=false: rendered CRDs %v", got)
	}
}

// TestWorkloadClusterSetServer: mcs.dnsServer reaches serve, the guard
// and the patch-corefile hook alike; with coredns the cluster DNS's
// ServiceAccount may get, list and watch ServiceImports (and list and
// watch EndpointSlices) and nothing more, and with serve no such grant
// is rendered.
func TestWorkloadClusterSetServer(t *testing.T) {
	const role = releaseNS + "-" + releaseName + "-clusterset"
	for _, server := range []string{"serve", "coredns"} {
		t.Run(server, func(t *testing.T) {
			objs := objects(t, render(t, renderCase{chart: workloadChart, args: []string{"-f", "testdata/workload-values.yaml", "--set", "mcs.dnsServer=" + server}}))
			flag := `"--clusterset-server=` + server + `"`
			serve, guard, _ := zoneFlags(t, objs)
			hook, _ := json(t, get(find(objs, "Job", releaseName+"-patch-corefile-add"), "spec", "template", "spec", "containers", 0, "args"))
			for what, args := range map[string]string{"serve": serve, "guard": guard, "patch-corefile hook": hook} {
				if !strings.Contains(args, flag) || !strings.Contains(args, `"--clusterset-zone=clusterset.local"`) {
					t.Errorf("%s args %s: want %s and the clusterset zone", what, args, flag)
				}
			}
			cr, crb := find(objs, "ClusterRole", role), find(objs, "ClusterRoleBinding", role)
			if server == "serve" {
				if cr != nil || crb != nil {
					t.Errorf("serve renders a grant for the cluster DNS: %v %v", cr, crb)
				}
				return
			}
			var r rbacv1.ClusterRole
			var b rbacv1.ClusterRoleBinding
			if err := yaml.UnmarshalStrict([]byte(mustJSON(t, cr)), &r); err != nil {
				t.Fatalf("ClusterRole %s: %v", role, err)
			}
			if err := yaml.UnmarshalStrict([]byte(mustJSON(t, crb)), &b); err != nil {
				t.Fatalf("ClusterRoleBinding %s: %v", role, err)
			}
			want := []rbacv1.PolicyRule{
				{APIGroups: []string{"multicluster.x-k8s.io"}, Resources: []string{"serviceimports"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			}
			if got, w := mustJSON(t, r.Rules), mustJSON(t, want); got != w {
				t.Errorf("ClusterRole rules %s, want %s", got, w)
			}
			subj := rbacv1.Subject{Kind: "ServiceAccount", Name: "coredns", Namespace: "kube-system"}
			if len(b.Subjects) != 1 || b.Subjects[0] != subj || b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != role {
				t.Errorf("ClusterRoleBinding subjects %v, roleRef %v; want %v bound to ClusterRole %s", b.Subjects, b.RoleRef, subj, role)
			}
		})
	}
}
