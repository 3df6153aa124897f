package controller

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// sample is the value of the series name{labels} in what reg gathers,
// and whether there is one: the gauge or counter value, or a histogram's
// sample count.
func sample(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// eventuallySample waits until name{labels} has a value for which ok
// holds ("absent" when there is none).
func eventuallySample(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string, what string, ok func(v float64, present bool) bool) {
	t.Helper()
	testfixture.Eventually(t, name+" "+what, func() bool {
		v, present := sample(t, reg, name, labels)
		return ok(v, present)
	})
}

func equals(want float64) func(float64, bool) bool {
	return func(v float64, present bool) bool { return present && v == want }
}

func absent(_ float64, present bool) bool { return !present }

func withRegistry(reg *prometheus.Registry) func(*Config) {
	return func(c *Config) { c.Metrics = NewMetrics(reg) }
}

// A target that stops answering reads 0 in the reachability gauge and
// counts as a target behind, for as long as it has been; back up, 1 and
// none behind. The writes are timed (targets of one destination are
// written through one of them).
func TestMetricsUnreachableTarget(t *testing.T) {
	reg := prometheus.NewRegistry()
	target := fakeWorkload(false, "")
	d := testfixture.NewDownable(target)
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-t", "cluster-t")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-t", map[string]string{"other": "yes"}, ""),
			gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-t": target}, nil,
		withRegistry(reg), func(c *Config) { c.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool { return s.ReadyClusters == 1 && len(s.Targets) == 0 })
	clusterT := map[string]string{"workload_cluster": "dev-team/cluster-t"}
	eventuallySample(t, reg, "xcc_controller_workload_cluster_reachable", clusterT, "1", equals(1))
	eventuallySample(t, reg, "xcc_controller_workload_cluster_cut_off", clusterT, "0", equals(0))
	eventuallySample(t, reg, "xcc_controller_targets_behind", nil, "0", equals(0))
	eventuallySample(t, reg, "xcc_controller_target_write_duration_seconds", map[string]string{"writer": "gatewaydns"}, "observed",
		func(v float64, present bool) bool { return present && v > 0 })
	eventuallySample(t, reg, "xcc_controller_target_last_write_duration_seconds", map[string]string{"writer": "gatewaydns"},
		"present", func(_ float64, present bool) bool { return present })

	d.Down()
	eventuallySample(t, reg, "xcc_controller_workload_cluster_reachable", clusterT, "0", equals(0))
	eventuallySample(t, reg, "xcc_controller_targets_behind", nil, "1", equals(1))
	time.Sleep(1100 * time.Millisecond)
	e.mgr.gatewayDNS.EnqueueIn("dev-team")
	eventuallySample(t, reg, "xcc_controller_targets_behind_max_seconds", nil, "at least 1", func(v float64, present bool) bool { return present && v >= 1 })
	if v, _ := sample(t, reg, "xcc_controller_workload_cluster_reachable", map[string]string{"workload_cluster": "dev-team/cluster-a"}); v != 1 {
		t.Errorf("cluster-a reachable = %v, want 1", v)
	}

	d.Up()
	eventuallySample(t, reg, "xcc_controller_workload_cluster_reachable", clusterT, "1 again", equals(1))
	eventuallySample(t, reg, "xcc_controller_targets_behind", nil, "0 again", equals(0))
	eventuallySample(t, reg, "xcc_controller_targets_behind_max_seconds", nil, "0 again", equals(0))
}

// A workload cluster whose API server answers hostile lists reads 1 in
// the cut-off gauge; the others 0.
func TestMetricsCutOffCluster(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv := testfixture.NewHostileAPIServer(t, testfixture.EndlessPages)
	reads := workload.ReadLimits{ListPageSize: 100, MaxResponseBytes: 1 << 20, MaxObjectsPerCluster: 500, CutOffRetry: time.Hour}
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "cluster-a"), testfixture.KubeconfigSecret("cluster-h", string(srv.Kubeconfig))},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", contour, ""), testfixture.CAPICluster("cluster-h", contour, ""), gatewayDNSObject(t, testfixture.GatewayDNS("gw"))},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1")}, nil,
		withRegistry(reg),
		func(cfg *Config) {
			cfg.ReadLimits = reads
			fakes := cfg.NewClient
			cfg.NewClient = func(raw []byte) (workload.Client, error) {
				if bytes.Equal(raw, srv.Kubeconfig) {
					return workload.NewClientFromKubeconfig(raw, kubeconfig.Policy{}, reads.MaxResponseBytes, workload.Requests{})
				}
				return fakes(raw)
			}
		})
	_ = e
	eventuallySample(t, reg, "xcc_controller_workload_cluster_cut_off", map[string]string{"workload_cluster": "dev-team/cluster-h"}, "1", equals(1))
	eventuallySample(t, reg, "xcc_controller_workload_cluster_cut_off", map[string]string{"workload_cluster": "dev-team/cluster-a"}, "0", equals(0))
}

// After each sync the ClusterSet gauges say what its status says: Ready,
// its members by state, its imports and its exports by condition; a
// member away turns Ready to 0 and counts as unreachable. A deleted
// ClusterSet leaves no series.
func TestMetricsClusterSet(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	d := testfixture.DownableMember(a)
	sel := map[string]string{"set": "prod"}
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", sel, ""), testfixture.CAPICluster("cluster-b", sel, ""), testfixture.ClusterSetObject("prod")},
		nil, map[string]workload.Client{"ka": a, "kb": b},
		withRegistry(reg), func(c *Config) { c.ClusterSets = true; c.ReadLimits.UnreachableAfter = 300 * time.Millisecond })
	set := map[string]string{"clusterset": "dev-team/prod"}
	with := func(k, v string, more ...string) map[string]string {
		out := map[string]string{"clusterset": "dev-team/prod", k: v}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	eventuallySample(t, reg, "xcc_controller_clusterset_ready", set, "1", equals(1))
	eventuallySample(t, reg, "xcc_controller_clusterset_members", with("state", "ok"), "2", equals(2))
	eventuallySample(t, reg, "xcc_controller_clusterset_imports", set, "1", equals(1))
	eventuallySample(t, reg, "xcc_controller_clusterset_exports", with("condition", "Valid", "status", "True"), "1", equals(1))
	eventuallySample(t, reg, "xcc_controller_clusterset_exports", with("condition", "Conflict", "status", "False"), "1", equals(1))
	eventuallySample(t, reg, "xcc_controller_target_write_duration_seconds", map[string]string{"writer": "clusterset"}, "observed",
		func(v float64, present bool) bool { return present && v > 0 })
	// The export there at the first sync is not timed; one made later is,
	// once its import is in both members.
	if v, _ := sample(t, reg, "xcc_controller_export_to_import_written_seconds", nil); v != 0 {
		t.Errorf("export latency observed %v times before any new export", v)
	}
	if _, err := b.CoreV1().Services("shop").Create(e.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.11",
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MCS.MulticlusterV1beta1().ServiceExports("shop").Create(e.ctx, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "web", CreationTimestamp: metav1.Now()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallySample(t, reg, "xcc_controller_export_to_import_written_seconds", nil, "one new export timed", equals(1))

	d.Down()
	eventuallySample(t, reg, "xcc_controller_clusterset_ready", set, "0 with a member away", equals(0))
	eventuallySample(t, reg, "xcc_controller_clusterset_members", with("state", "unreachable"), "1", equals(1))
	eventuallySample(t, reg, "xcc_controller_clusterset_members", with("state", "ok"), "1", equals(1))
	d.Up()
	eventuallySample(t, reg, "xcc_controller_clusterset_ready", set, "1 again", equals(1))

	if err := e.dyn.Resource(xccv1alpha1.ClusterSetResource).Namespace("dev-team").Delete(e.ctx, "prod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallySample(t, reg, "xcc_controller_clusterset_ready", set, "absent once deleted", absent)
	eventuallySample(t, reg, "xcc_controller_clusterset_members", set, "absent once deleted", absent)
}
