package charts_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const promtoolEnv = "PROMTOOL"

// promtool runs the promtool in $PROMTOOL (`make charts-test` builds the
// pinned one and sets it) in dir; without it the test is skipped.
func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin := os.Getenv(promtoolEnv)
	if bin == "" {
		t.Skipf("$%s not set: run make charts-test", promtoolEnv)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(abs, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestAlertRules: the charts' rule files pass promtool's check, and their
// unit tests (testdata/rules: each alert fires when it should and not
// before) pass.
func TestAlertRules(t *testing.T) {
	promtool(t, ".", append([]string{"check", "rules"}, alertFiles...)...)
	tests, err := filepath.Glob(filepath.Join("testdata", "rules", "*_test.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no rule tests in testdata/rules (%v)", err)
	}
	for _, f := range tests {
		out := promtool(t, filepath.Dir(f), "test", "rules", filepath.Base(f))
		if !strings.Contains(out, "SUCCESS") {
			t.Errorf("%s: %s", f, out)
		}
	}
}

// TestDashboardQueries: every query of the dashboard parses, checked by
// promtool as the expression of a recording rule, with Grafana's
// variables given values.
func TestDashboardQueries(t *testing.T) {
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for where, expr := range exprs(t) {
		if !strings.HasPrefix(where, dashboardFile) {
			continue
		}
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard_query_%d", len(rules)), Expr: grafanaVariable.ReplaceAllString(expr, "5m")})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard-rules.yaml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, dir, "check", "rules", "dashboard-rules.yaml")
}
