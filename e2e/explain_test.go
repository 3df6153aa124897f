package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testExplain: `xcc-syncer explain` against the lab's management cluster
// says the walkthrough's name is Published by the walkthrough's
// GatewayDNS, with its etcd key; with --from cluster-a it finds the slice
// that makes the name in cluster-a; a name with a label "any" is refused
// by the grammar, read from no cluster.
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
	out := runExplain(ctx, t, name, "--from", lab.ClusterA)
	if !strings.Contains(out, "\nslices in "+lab.ClusterA+": ") || strings.Contains(out, "slices in "+lab.ClusterA+": 0") || strings.Contains(out, "unread:") {
		t.Errorf("--from %s: want the slices that make the name, all read:\n%s", lab.ClusterA, out)
	}
	refused := "kuard.gateway.any." + lab.ClusterNamespace + ".clusters." + lab.Zone
	out = runExplain(ctx, t, refused)
	if !strings.Contains(out, "\nanswer:  NXDOMAIN\n") || !strings.Contains(out, "\nreason:  Refused: name refused: a label \"any\"") {
		t.Errorf("explain %s: want refused for its label any:\n%s", refused, out)
	}
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
