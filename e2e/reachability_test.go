package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// unreachableWithin is how soon after a workload API server dies its
// entries must stop saying Published: the controller's UnreachableAfter
// (20 s) and a sync.
const unreachableWithin = 30 * time.Second

// testWorkloadAPIServerKilled: when cluster-b's API server process dies
// (every connection refused from then on), its entry in the walkthrough's
// GatewayDNS and in a ClusterSet of the walkthrough's Clusters stops
// saying Published (Member) within unreachableWithin and says since when
// its last records are served; as a target of the GatewayDNS it makes
// cluster-a's entry TargetUnreachable too; back up, all say so again.
func testWorkloadAPIServerKilled(t *testing.T) {
	ctx := ctxFor(t)
	mgmt := theLab.Management
	const set = "reach"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
	})
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetYAML(set)); err != nil {
		t.Fatal(err)
	}
	gatewayB := func(ctx context.Context) (lab.ClusterStatus, error) {
		got, err := lab.GatewayDNSClusters(ctx, mgmt, lab.ClusterNamespace, lab.GatewayDNSName)
		return got[lab.ClusterB], err
	}
	waitStatus(t, "cluster-b Published in the GatewayDNS", answerTimeout, func(ctx context.Context) (string, bool) {
		s, err := gatewayB(ctx)
		return fmt.Sprintf("%+v %v", s, err), err == nil && s.Reason == "Published"
	})
	waitStatus(t, "the ClusterSet Ready", answerTimeout, func(ctx context.Context) (string, bool) {
		reason, msg := clusterSetReady(ctx, t, set)
		return reason + ": " + msg, reason == "Written"
	})

	apiServer := theLab.Workload(lab.ClusterB)
	apiServer.Stop()
	killed := time.Now()
	t.Log("cluster-b API server stopped")
	waitStatus(t, "cluster-b unreachable in the GatewayDNS, saying since when", unreachableWithin, func(ctx context.Context) (string, bool) {
		s, err := gatewayB(ctx)
		return fmt.Sprintf("%+v %v", s, err), err == nil && s.Reason == "ClusterUnreachable" && strings.Contains(s.Message, "since")
	})
	t.Logf("GatewayDNS entry of cluster-b ClusterUnreachable %s after its API server died", time.Since(killed).Round(100*time.Millisecond))
	waitStatus(t, "cluster-a not Published while its target cluster-b is unreachable", unreachableWithin, func(ctx context.Context) (string, bool) {
		got, err := lab.GatewayDNSClusters(ctx, mgmt, lab.ClusterNamespace, lab.GatewayDNSName)
		a := got[lab.ClusterA]
		return fmt.Sprintf("%+v %v", a, err), err == nil && a.Reason == "TargetUnreachable" && strings.Contains(a.Message, lab.ClusterB)
	})
	waitStatus(t, "the ClusterSet saying cluster-b is unreachable", unreachableWithin, func(ctx context.Context) (string, bool) {
		reason, msg := clusterSetReady(ctx, t, set)
		return reason + ": " + msg, reason == "MembersUnreachable" && strings.Contains(msg, lab.ClusterB)
	})
	t.Logf("ClusterSet says cluster-b unreachable %s after its API server died", time.Since(killed).Round(100*time.Millisecond))

	// xcc-syncer status says so too, and exits 3 to fail a rollout gate.
	out, code := runStatus(t)
	t.Logf("xcc-syncer status, exit code %d:\n%s", code, out)
	for _, want := range []string{"target cluster-b: TargetUnreachable", "cluster cluster-b: ClusterUnreachable", "ClusterSet " + lab.ClusterNamespace + "/" + set} {
		if !strings.Contains(out, want) {
			t.Errorf("xcc-syncer status lacks %q:\n%s", want, out)
		}
	}
	if code != 3 {
		t.Errorf("xcc-syncer status exited %d with cluster-b down, want 3:\n%s", code, out)
	}

	if err := theLab.RestartCluster(ctx, apiServer); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, "cluster-a and cluster-b Published again", answerTimeout, func(ctx context.Context) (string, bool) {
		got, err := lab.GatewayDNSClusters(ctx, mgmt, lab.ClusterNamespace, lab.GatewayDNSName)
		return fmt.Sprintf("%+v %v", got, err), err == nil && got[lab.ClusterA].Reason == "Published" && got[lab.ClusterB].Reason == "Published"
	})
	waitStatus(t, "the ClusterSet Ready again", answerTimeout, func(ctx context.Context) (string, bool) {
		reason, msg := clusterSetReady(ctx, t, set)
		return reason + ": " + msg, reason == "Written"
	})
}

// runStatus runs `xcc-syncer status` on the management cluster's
// namespace of the walkthrough, and returns its output and exit code.
func runStatus(t *testing.T) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctxFor(t), theLab.Bin("xcc-syncer"), "status", "--kubeconfig", theLab.Management.Kubeconfig, "-n", lab.ClusterNamespace)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("xcc-syncer status: %v\n%s", err, out)
		return "", 0
	}
}

// waitStatus polls ok until it holds or within passes, failing the test
// with what ok last saw.
func waitStatus(t *testing.T, what string, within time.Duration, ok func(context.Context) (string, bool)) {
	t.Helper()
	ctx := ctxFor(t)
	var last string
	for end := time.Now().Add(within); ; time.Sleep(statusPoll) {
		var done bool
		if last, done = ok(ctx); done {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("not within %s: %s; last seen %s", within, what, last)
		}
	}
}

// clusterSetReady is the reason and message of the ClusterSet's Ready
// condition.
func clusterSetReady(ctx context.Context, t *testing.T, name string) (string, string) {
	t.Helper()
	u, err := theLab.Management.Dynamic.Resource(lab.ClusterSetGVR).Namespace(lab.ClusterNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return reason, msg
		}
	}
	return "", "(no Ready condition)"
}
