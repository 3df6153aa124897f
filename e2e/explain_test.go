package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testExplain: `xcc-syncer explain` against the lab's management cluster
// says the walkthrough's name is Published by the walkthrough's
// GatewayDNS, with its etcd key; with --from cluster-a it finds the slice
// that makes the name in cluster-a and the forward block of cluster-a's
// cluster DNS; a name with a label "any" is refused by the grammar, read
// from no cluster. Then a cluster whose DNS does not forward the zone,
// and a clusterset name.
func testExplain(t *testing.T) {
	ctx := ctxFor(t)
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	name := lab.GatewayHost("kuard", lab.ClusterA)
	waitStatus(t, "explain saying the walkthrough's name is Published", answerTimeout, func(ctx context.Context) (string, bool) {
		out := runExplain(ctx, t, name)
		return out, strings.Contains(out, "\nreason:  Published: "+lab.ClusterA+" is published in every target") &&
			strings.Contains(out, "GatewayDNS "+lab.ClusterNamespace+"/"+lab.GatewayDNSName) &&
			strings.Contains(out, "get --prefix /skydns/test/xcc/clusters/"+lab.ClusterNamespace+"/"+lab.ClusterA+"/gateway/")
	})
	// The workload chart's Service is there, but the lab's cluster DNS
	// forwards the zone to the serve process's CoreDNS: elsewhere.
	svc, err := theLab.Workload(lab.ClusterA).Client.CoreV1().Services(lab.SliceNamespace).Get(ctx, lab.ReleaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := runExplain(ctx, t, name, "--from", lab.ClusterA)
	if !strings.Contains(out, "\nslices in "+lab.ClusterA+": ") || strings.Contains(out, "slices in "+lab.ClusterA+": 0") {
		t.Errorf("--from %s: want the slices that make the name:\n%s", lab.ClusterA, out)
	}
	// This lab runs no pods: what only pods say (serve's live answers,
	// the cluster DNS pods' reload state; the node lab reads both) is
	// unread, and says so; everything else is read.
	for _, line := range strings.Split(out, "\n") {
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "unread:"); ok &&
			!strings.HasPrefix(strings.TrimSpace(u), "live answers of "+lab.ClusterA+": no Ready serve pod") &&
			!strings.HasPrefix(strings.TrimSpace(u), "reload state of the cluster DNS pods of "+lab.ClusterA+":") {
			t.Errorf("--from %s: %q unread, want everything but what only pods say read:\n%s", lab.ClusterA, line, out)
		}
	}
	elsewhere := regexp.MustCompile(`\nreason:  ForwardsElsewhere: the block [^ ]+ of the cluster DNS of ` + lab.ClusterA + ` \(ConfigMap kube-system/coredns\) forwards ` +
		regexp.QuoteMeta(lab.Zone) + ` to [^ ]+, not to the xcc-dns Service ` + regexp.QuoteMeta(lab.SliceNamespace+"/"+lab.ReleaseName) + ` \(` +
		regexp.QuoteMeta(svc.Spec.ClusterIP) + `:53\): .*; xcc-dns itself answers records \(Published: ` + lab.ClusterA + ` is published in every target`)
	if !elsewhere.MatchString(out) || !strings.Contains(out, "\nanswer:  unknown\n") {
		t.Errorf("--from %s: want %s:\n%s", lab.ClusterA, elsewhere, out)
	}
	if !strings.Contains(out, "\ncluster DNS of "+lab.ClusterA+" (kube-system/coredns): forwards "+lab.Zone+" to ") {
		t.Errorf("--from %s: want its cluster DNS's forward block for %s, patch-corefile's:\n%s", lab.ClusterA, lab.Zone, out)
	}
	refused := "kuard.gateway.any." + lab.ClusterNamespace + ".clusters." + lab.Zone
	out = runExplain(ctx, t, refused)
	if !strings.Contains(out, "\nanswer:  NXDOMAIN\n") || !strings.Contains(out, "\nreason:  Refused: name refused: a label \"any\"") {
		t.Errorf("explain %s: want refused for its label any:\n%s", refused, out)
	}
	t.Run("NotForwarded", testExplainNotForwarded)
	t.Run("ClusterSetName", testExplainClusterSetName)
}

// testExplainNotForwarded: asked from cluster-c once its cluster DNS's
// Corefile lacks the forward block (as before patch-corefile ran), the
// walkthrough's published name never reaches xcc-dns there, and explain
// says so first; the Corefile is put back after.
func testExplainNotForwarded(t *testing.T) {
	ctx := ctxFor(t)
	c := theLab.Workload(lab.ClusterC)
	original, err := lab.ClusterCorefile(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setCorefile(context.Background(), c.Client, original); err != nil {
			t.Errorf("restore kube-system/coredns of %s: %v", lab.ClusterC, err)
		}
	})
	if err := setCorefile(ctx, c.Client, lab.ClusterDNSCorefile); err != nil {
		t.Fatal(err)
	}
	name := lab.GatewayHost("kuard", lab.ClusterA)
	out := runExplain(ctx, t, name, "--from", lab.ClusterC)
	want := "\nreason:  NotForwarded: the cluster DNS of " + lab.ClusterC + " (ConfigMap kube-system/coredns) has no server block for " + lab.Zone + ": "
	if !strings.Contains(out, want) || !strings.Contains(out, "\ncluster DNS of "+lab.ClusterC+" (kube-system/coredns): no server block for "+lab.Zone+"\n") {
		t.Errorf("explain %s --from %s with its Corefile unpatched: want %q:\n%s", name, lab.ClusterC, want, out)
	}
}

// testExplainClusterSetName: a Service exported from cluster-a and
// cluster-b; explain of its clusterset name --from cluster-a names the
// ClusterSet, the ServiceImport there with its ClusterSetIP, and both
// exporting members. A newer export of other ports in cluster-b puts
// both in Conflict: xcc-syncer status lists them per member.
func testExplainClusterSetName(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	const set, ns, svc = "explain", "bazaar", "web"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		for _, w := range []*lab.Cluster{a, b} {
			if err := lab.DeleteExportedService(ctx, w, ns, svc); err != nil {
				t.Error(err)
			}
		}
	})
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	for w, addr := range map[*lab.Cluster]string{a: "198.51.100.151", b: "198.51.100.152"} {
		if err := lab.CreateExportedService(ctx, w, lab.ExportedService{Namespace: ns, Name: svc, Ports: httpPort,
			Pods: []lab.HeadlessPod{{Address: addr, Ready: true}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetYAML(set)); err != nil {
		t.Fatal(err)
	}
	imp := waitImport(t, a, ns, svc, func(i *lab.Import) bool { return len(i.IPs) > 0 && len(i.Clusters) == 2 })
	name := lab.ClusterSetHost(ns, svc)
	// The lab's cluster DNS forwards to the serve process, not the
	// xcc-dns Service: the Imported reason is what xcc-dns itself answers.
	want := "xcc-dns itself answers records (Imported: ServiceImport " + ns + "/" + svc + " of ClusterSet " + lab.ClusterNamespace + "/" + set + " in " + lab.ClusterA +
		": ClusterSetIP " + strings.Join(imp.IPs, ", ") + ", ports http/TCP/80, exported by " + lab.ClusterA + ", " + lab.ClusterB + "; "
	waitStatus(t, "explain naming the ClusterSet, the import and both exporting members", answerTimeout, func(ctx context.Context) (string, bool) {
		out := runExplain(ctx, t, name, "--from", lab.ClusterA)
		return out, strings.Contains(out, want) && strings.Contains(out, "\nClusterSet "+lab.ClusterNamespace+"/"+set+": ")
	})

	// A newer export of other ports in cluster-b: both in Conflict.
	if err := lab.DeleteExportedService(ctx, b, ns, svc); err != nil {
		t.Fatal(err)
	}
	other := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8000, TargetPort: intstr.FromInt32(8080)}}
	if err := lab.CreateExportedService(ctx, b, lab.ExportedService{Namespace: ns, Name: svc, Ports: other,
		Pods: []lab.HeadlessPod{{Address: "198.51.100.152", Ready: true}}}); err != nil {
		t.Fatal(err)
	}
	waitExportConditions(t, b, ns, svc, map[string]string{"Valid": "True", "Conflict": "True"})
	waitStatus(t, "xcc-syncer status listing cluster-b's export in Conflict", answerTimeout, func(context.Context) (string, bool) {
		out, _ := runStatus(t)
		return out, strings.Contains(out, "  exports of member "+lab.ClusterB+": 1 in Conflict, 0 not Valid\n") &&
			strings.Contains(out, "    "+ns+"/"+svc+": Conflict (PortConflict)") &&
			strings.Contains(out, "\nnot read: the records serve holds in "+lab.ClusterNamespace+"/"+lab.ClusterA+": no serve pod in namespace xcc-dns (--serve-namespace) with the workload chart's labels\n")
	})
	out, code := runStatus(t)
	t.Logf("xcc-syncer status, exit code %d:\n%s", code, out)
}

// testExplainClusterDown: with cluster-b's API server stopped, explain of
// cluster-b's gateway name says it is unreachable and since when its
// last records are served; the API server is started again after.
func testExplainClusterDown(t *testing.T) {
	ctx := ctxFor(t)
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	name := lab.GatewayHost("kuard", lab.ClusterB)
	waitStatus(t, "explain saying cluster-b's name is Published", answerTimeout, func(ctx context.Context) (string, bool) {
		out := runExplain(ctx, t, name)
		return out, strings.Contains(out, "\nreason:  Published: "+lab.ClusterB+" is published in every target")
	})
	apiServer := theLab.Workload(lab.ClusterB)
	apiServer.Stop()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
		defer cancel()
		if err := theLab.RestartCluster(ctx, apiServer); err != nil {
			t.Error(err)
			return
		}
		waitStatus(t, "explain saying cluster-b's name is Published again", answerTimeout, func(ctx context.Context) (string, bool) {
			out := runExplain(ctx, t, name)
			return out, strings.Contains(out, "\nreason:  Published: ")
		})
	})
	t.Log("cluster-b API server stopped")
	want := regexp.MustCompile(`\nanswer:  records\nreason:  ClusterUnreachable: ` + lab.ClusterB + `: ClusterUnreachable for [0-9hms.]+ \(since [0-9T:Z-]+\): serving last known records\n`)
	var out string
	waitStatus(t, "explain saying cluster-b is unreachable, since when, its last records served", unreachableWithin, func(ctx context.Context) (string, bool) {
		out = runExplain(ctx, t, name)
		return out, want.MatchString(out)
	})
	t.Logf("xcc-syncer explain %s:\n%s", name, out)
}

// runExplain runs xcc-syncer explain NAME against the management cluster,
// flags after the name as kubectl users type them.
func runExplain(ctx context.Context, t *testing.T, name string, flags ...string) string {
	t.Helper()
	args := append([]string{"explain", name, "--kubeconfig", theLab.Management.Kubeconfig}, flags...)
	out, err := exec.CommandContext(ctx, theLab.Bin("xcc-syncer"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("xcc-syncer explain %s: %v\n%s", name, err, out)
	}
	return string(out)
}
