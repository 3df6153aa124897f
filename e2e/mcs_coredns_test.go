package e2e

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testMCSByCoreDNS: with the workload chart's mcs.dnsServer coredns,
// stock CoreDNS answers the clusterset zone itself. patch-corefile
// --clusterset-server coredns rewrites cluster-b's kube-system/coredns,
// the chart grants the cluster DNS's ServiceAccount its ServiceImports,
// and stock CoreDNS run on that Corefile, with that account's token
// beside kubeadm's grants only, answers the specification's names and
// NXDOMAIN for the names that must not exist. Back to serve, the
// Corefile is what it was byte for byte, and the grant is gone.
func testMCSByCoreDNS(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	b := theLab.Workload(lab.ClusterB)
	d := theLab.DNS[lab.ClusterB]
	run := &peersRun{t: t, ctx: ctx}
	const set, role = "coredns-mcs", lab.SliceNamespace + "-" + lab.ReleaseName + "-clusterset"
	exportSpecServices(t, set)

	before, err := lab.ClusterCorefile(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	patch := func(extra ...string) string {
		t.Helper()
		args := append([]string{"patch-corefile", "--kubeconfig", b.Kubeconfig, "--forward-to", d.XCCDNSAddr, "--reverse-cidrs", lab.ReverseCIDRs}, extra...)
		if out, err := exec.CommandContext(ctx, theLab.Bin("xcc-syncer"), args...).CombinedOutput(); err != nil {
			t.Fatalf("xcc-syncer %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		got, err := lab.ClusterCorefile(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		patch("--clusterset-server=serve")
		if err := theLab.UpgradeWorkloadChart(ctx, b, "mcs.dnsServer="+lab.ClusterSetServe); err != nil {
			t.Error(err)
		}
	})

	if err := theLab.UpgradeWorkloadChart(ctx, b, "mcs.dnsServer="+lab.ClusterSetCoreDNS); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := theLab.KubeadmClusterDNSKubeconfig(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	patched := patch("--clusterset-server=coredns")
	if !strings.Contains(patched, "multicluster "+lab.ClusterSetZone+"\n") || strings.Contains(patched, lab.ClusterSetZone+":53") {
		t.Fatalf("patched Corefile has no multicluster option, or forwards the zone still:\n%s", patched)
	}
	stock, err := theLab.StartStockClusterDNS(ctx, b, "stock-cluster-dns-"+b.Name, patched, kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	defer stock.Stop()

	checks := run.specChecks()
	// The stock server says its own version of the specification.
	checks = slices.DeleteFunc(checks, func(c peerCheck) bool { return strings.HasPrefix(c.name, "dns-version.") })
	for _, c := range checks {
		waitRight(t, stock.Addr, c)
	}
	// The zone of xcc-dns still reaches serve through the forward block,
	// with cluster-a's gateway as the lab has it now (GatewayIPChange
	// moves it).
	waitRight(t, stock.Addr, peerCheck{what: "xcc-dns's zone", name: lab.GatewayHost("web", lab.ClusterA), qtype: dns.TypeA,
		rcode: dns.RcodeSuccess, want: theLab.Gateways[lab.ClusterA].IPs})
	t.Logf("mcs by coredns: stock CoreDNS %s answered %d checks right on the patched Corefile", lab.StockCoreDNSVersion, len(checks)+1)

	if back := patch("--clusterset-server=serve"); back != before {
		t.Errorf("back to serve, the Corefile:\n%s\nwant what it was:\n%s", back, before)
	}
	if err := theLab.UpgradeWorkloadChart(ctx, b, "mcs.dnsServer="+lab.ClusterSetServe); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s after the switch back to serve: %v, want NotFound", role, err)
	}
}

// waitRight polls addr until it answers c right.
func waitRight(t *testing.T, addr string, c peerCheck) {
	t.Helper()
	deadline := time.Now().Add(answerTimeout)
	for {
		right, got := judge(addr, c)
		if right {
			t.Logf("%s: %s %s -> %s", c.what, dns.TypeToString[c.qtype], c.name, got)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s %s -> %s; want %s %v", c.what, dns.TypeToString[c.qtype], c.name, got, dns.RcodeToString[c.rcode], c.want)
		}
		time.Sleep(pollInterval)
	}
}

// exportSpecServices exports the specification's services
// (peersSpecServices) from cluster-a into the ClusterSet set of every
// workload cluster, and waits until cluster-b holds both imports; all
// of it goes again at the test's end.
func exportSpecServices(t *testing.T, set string) {
	t.Helper()
	ctx := ctxFor(t)
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	services := peersSpecServices()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, theLab.Management, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		for _, s := range services {
			if err := lab.DeleteExportedService(ctx, a, s.Namespace, s.Name); err != nil {
				t.Error(err)
			}
		}
	})
	if err := theLab.ApplyWalkthrough(ctx); err != nil { // labels the Clusters
		t.Fatal(err)
	}
	// Namespace sameness: a member holds imports of its own namespaces.
	if err := lab.EnsureNamespace(ctx, b, peersNamespace); err != nil {
		t.Fatal(err)
	}
	for _, s := range services {
		if err := lab.CreateExportedService(ctx, a, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, theLab.Management, lab.ClusterSetGVR, lab.ClusterSetYAML(set)); err != nil {
		t.Fatal(err)
	}
	for _, s := range services {
		waitImport(t, b, s.Namespace, s.Name, func(i *lab.Import) bool { return i.Type == "Headless" || len(i.IPs) > 0 })
	}
}
