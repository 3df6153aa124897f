package workload

import (
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// The clients of one workload cluster share one rate limiter: the
// cluster gets at most clientQPS requests a second of every kind
// together, and a write that goes kind by kind gets all of it.
func TestClientsShareOneRateLimiter(t *testing.T) {
	c, err := NewClientFromKubeconfig(testfixture.NewHostileAPIServer(t, testfixture.HangingWatch).Kubeconfig, kubeconfig.Policy{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*typedClient)
	core := tc.core.RESTClient().GetRateLimiter()
	if core == nil || tc.discovery.RESTClient().GetRateLimiter() != core || tc.mcs.RESTClient().GetRateLimiter() != core {
		t.Error("the cluster's clients have limiters of their own")
	}
	if got := core.QPS(); got != clientQPS {
		t.Errorf("limiter at %v requests/s, want %d", got, clientQPS)
	}
}
