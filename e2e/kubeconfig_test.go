package e2e

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// reasonKubeconfigRefused is the controller's status reason for a
	// kubeconfig Secret that asks it to run, read or route something.
	reasonKubeconfigRefused = "KubeconfigRefused"
	reasonPublished         = "Published"
	// tenantSecret is what the tenant's kubeconfigs try to get sent.
	tenantSecret = "xcc-e2e-tenant-secret-51c2"
	statusPoll   = 200 * time.Millisecond
)

// testKubeconfigInstructionsRefused: a tenant creates, next to the
// walkthrough's Clusters, Clusters whose kubeconfig Secrets ask the
// controller to run a command (exec) or to send one of its files
// (tokenFile) to a server the tenant runs. The controller does neither:
// the command's file never appears, the server never hears from it, the
// status of those Clusters says KubeconfigRefused naming the field, and
// the other clusters keep publishing.
func testKubeconfigInstructionsRefused(t *testing.T) {
	server := clusterDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	kuardA := lab.GatewayHost("kuard", lab.ClusterA)

	// The walkthrough's state, should this test run on its own.
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		if err := lab.LabelCluster(ctx, mgmt, c, lab.SelectorLabel, lab.SelectorValue); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, lab.GatewayDNSYAML); err != nil {
		t.Fatal(err)
	}
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)

	// The tenant's API server: it records whatever reaches it.
	heard := &heardRequests{}
	tenantAPI := httptest.NewTLSServer(heard)
	defer tenantAPI.Close()
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	secretFile := filepath.Join(dir, "token")
	if err := os.WriteFile(secretFile, []byte(tenantSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	tenants := []struct {
		cluster, field string
		user           *clientcmdapi.AuthInfo
	}{
		{"tenant-exec", "exec", &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1",
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
			Args: []string{"-c", "touch " + marker + `; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` +
				tenantSecret + `"}}'`},
		}}},
		{"tenant-tokenfile", "tokenFile", &clientcmdapi.AuthInfo{TokenFile: secretFile}},
	}
	selected := map[string]string{lab.SelectorLabel: lab.SelectorValue}
	for _, tn := range tenants {
		kc := tenantKubeconfig(t, tenantAPI, tn.user)
		if err := lab.CreateTenantCluster(ctx, mgmt, tn.cluster, selected, kc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := lab.DeleteTenantCluster(context.Background(), mgmt, tn.cluster); err != nil {
				t.Error(err)
			}
		})
	}

	// Once status lists them as refused, the controller has read their
	// kubeconfigs, and would have run or sent what they asked.
	want := map[string]string{lab.ClusterA: reasonPublished, lab.ClusterB: reasonPublished}
	for _, tn := range tenants {
		want[tn.cluster] = reasonKubeconfigRefused
	}
	st, waitErr := waitClusterReasons(ctx, want)
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the exec plugin of a kubeconfig Secret ran in the controller: %s exists (%v)", marker, err)
	}
	if seen := heard.all(); len(seen) > 0 {
		t.Errorf("the tenant's server was reached %d time(s); first: %s", len(seen), seen[0])
	}
	if waitErr != nil {
		t.Fatal(waitErr)
	}
	for _, tn := range tenants {
		if msg := st[tn.cluster].Message; !strings.Contains(msg, "."+tn.field+" refused") {
			t.Errorf("status of %s: message %q does not name %s", tn.cluster, msg, tn.field)
		}
	}
	// The other clusters keep publishing.
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)

	// Gone again, and status with them, so the tests after this one see
	// the walkthrough's state.
	for _, tn := range tenants {
		if err := lab.DeleteTenantCluster(ctx, mgmt, tn.cluster); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := waitClusterReasons(ctx, map[string]string{lab.ClusterA: reasonPublished, lab.ClusterB: reasonPublished}); err != nil {
		t.Fatal(err)
	}
	if seen := heard.all(); len(seen) > 0 {
		t.Errorf("the tenant's server was reached %d time(s); first: %s", len(seen), seen[0])
	}
}

// tenantKubeconfig is a kubeconfig for the tenant's API server with user.
func tenantKubeconfig(t *testing.T, api *httptest.Server, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	kc := lab.KubeconfigFor("tenant", api.URL, caPEM, "")
	kc.AuthInfos["tenant"] = user
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// waitClusterReasons waits until the walkthrough's GatewayDNS lists
// exactly the clusters of want, each with its reason, and returns them.
func waitClusterReasons(ctx context.Context, want map[string]string) (map[string]lab.ClusterStatus, error) {
	var got map[string]lab.ClusterStatus
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, statusPoll, answerTimeout, true, func(ctx context.Context) (bool, error) {
		got, lastErr = lab.GatewayDNSClusters(ctx, theLab.Management, lab.ClusterNamespace, lab.GatewayDNSName)
		if lastErr != nil || len(got) != len(want) {
			return false, nil
		}
		for c, reason := range want {
			if got[c].Reason != reason {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return got, fmt.Errorf("GatewayDNS %s status: want reasons %v within %s; got %v: %w", lab.GatewayDNSName, want, answerTimeout, got, errors.Join(err, lastErr))
	}
	return got, nil
}

// heardRequests is an HTTP handler that records every request.
type heardRequests struct {
	mu   sync.Mutex
	seen []string
}

func (h *heardRequests) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen = append(h.seen, fmt.Sprintf("%s %s Authorization=%q", r.Method, r.URL, r.Header.Get("Authorization")))
	h.mu.Unlock()
	http.NotFound(w, r)
}

func (h *heardRequests) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}
