package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testChartImages checks what the README's install (one value,
// image.registry) put into the API servers: every container of the
// charts' Deployments and StatefulSets names <registry>/<image>:<appVersion>, the tag
// make push pushes.
func testChartImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()

	type check struct {
		cluster *lab.Cluster
		chart   string
		want    map[string]string // container -> image
	}
	var checks []check
	if theLab.GatewayDNSCRD {
		tag := chartAppVersion(t, lab.ManagementChart)
		checks = append(checks, check{theLab.Management, lab.ManagementChart,
			map[string]string{"controller": lab.ImageRegistry + "/xcc-syncer:" + tag}})
	}
	tag := chartAppVersion(t, lab.WorkloadChart)
	for _, w := range theLab.Workloads {
		checks = append(checks, check{w, lab.WorkloadChart, map[string]string{
			"xcc-syncer": lab.ImageRegistry + "/xcc-syncer:" + tag,
			"coredns":    lab.ImageRegistry + "/coredns:" + tag,
		}})
	}
	for _, c := range checks {
		deps, err := c.cluster.Client.AppsV1().Deployments(lab.SliceNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list Deployments in %s: %v", c.cluster.Name, lab.SliceNamespace, err)
		}
		got := map[string]string{}
		for _, d := range deps.Items {
			for _, ct := range d.Spec.Template.Spec.Containers {
				got[ct.Name] = ct.Image
			}
		}
		sets, err := c.cluster.Client.AppsV1().StatefulSets(lab.SliceNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: list StatefulSets in %s: %v", c.cluster.Name, lab.SliceNamespace, err)
		}
		for _, d := range sets.Items {
			for _, ct := range d.Spec.Template.Spec.Containers {
				got[ct.Name] = ct.Image
			}
		}
		for name, want := range c.want {
			if got[name] != want {
				t.Errorf("%s (%s): container %s runs %q, want %q", c.cluster.Name, c.chart, name, got[name], want)
			}
		}
	}
}

// chartAppVersion reads the appVersion of a chart of the repository.
func chartAppVersion(t *testing.T, chart string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(theLab.RepoRoot, chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("%s/Chart.yaml: appVersion %q, %v", chart, c.AppVersion, err)
	}
	return c.AppVersion
}
