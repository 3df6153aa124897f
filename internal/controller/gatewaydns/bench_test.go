package gatewaydns

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// benchClusters is n selected clusters, each with a gateway address and an
// API host, as one GatewayDNS of the walkthrough sees them.
func benchClusters(n int, gatewayOf func(i int) string) []desired.Input {
	out := make([]desired.Input, n)
	for i := range out {
		c := good(fmt.Sprintf("cluster-%05d", i), gatewayOf(i))
		c.APIHost = fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
		out[i] = c
	}
	return out
}

func gatewayAddr(i int) string { return fmt.Sprintf("10.0.%d.%d", i/250, i%250+1) }

// BenchmarkSyncCompute is the controller's own work per GatewayDNS sync
// when one cluster's load balancer moved: desired slices, the delta from
// the last generation, and status. It reports the size of the status it
// writes, which the API server stores in one object.
func BenchmarkSyncCompute(b *testing.B) {
	gd := testfixture.GatewayDNS("gw")
	for _, n := range []int{100, 1000, 10000} {
		before := benchClusters(n, gatewayAddr)
		after := benchClusters(n, func(i int) string {
			if i == n/2 {
				return "10.9.9.9"
			}
			return gatewayAddr(i)
		})
		prev := publish.NewGeneration(desired.Compute(gd, "xcc.test", nil, before))
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			var st v1alpha1.GatewayDNSStatus
			for b.Loop() {
				d := desired.Compute(gd, "xcc.test", nil, after)
				dl := publish.ComputeDelta(prev, publish.NewGeneration(d))
				// The cluster's gateway slice and its part of the
				// multi-cluster name both carry the moved address.
				if len(dl.Update) != 2 {
					b.Fatalf("delta updates %d slices, want 2", len(dl.Update))
				}
				st, _ = buildStatus(gd, d, writes{})
			}
			raw, err := json.Marshal(st)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(raw)), "status-bytes")
		})
	}
}
