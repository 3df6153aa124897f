package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// gatewaysTrials is how many times each cause of failover is measured
	// ($XCC_BENCH_FAILOVER_TRIALS overrides it).
	gatewaysTrials    = 50
	gatewaysTrialsEnv = "XCC_BENCH_FAILOVER_TRIALS"
	// gatewaysTTL is the multi-cluster name's TTL when the GatewayDNS sets
	// no spec.gatewaysTTL (v1alpha1.DefaultGatewaysTTL).
	gatewaysTTL = 5 * time.Second
	// gatewaysGoal: gone from every answer within the TTL the caches may
	// hold the old one for, plus a second.
	gatewaysGoal = gatewaysTTL + time.Second
	// gatewaysPoll is how often cluster-b's cluster DNS is asked.
	gatewaysPoll = 100 * time.Millisecond
)

// failoverCause makes cluster-a's gateway unhealthy, or healthy again.
type failoverCause struct {
	name string
	set  func(ctx context.Context, healthy bool) error
}

// testBenchGatewaysFailover measures how long cluster-a's gateway stays in
// cluster-b's answers for the multi-cluster name (policy All) after it
// goes unhealthy: from its envoy endpoints turning not ready, and
// separately from its Cluster's Available condition turning False, to
// cluster-b's cluster DNS no longer answering cluster-a's address. Right
// before each change the name is asked once, so both caches (cluster-b's
// cluster DNS and our CoreDNS) hold the old answer with its whole TTL:
// each figure is the longest a pod can still be given the unhealthy
// gateway, with the shipped caches and the default TTL of 5 s.
func testBenchGatewaysFailover(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	trials := gatewaysTrials
	if v := os.Getenv(gatewaysTrialsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", gatewaysTrialsEnv, v)
		}
		trials = n
	}
	mgmt := theLab.Management
	a, wb := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	name := dns.Fqdn(lab.GatewaysHost("kuard"))
	addrA := ipv4(theLab.Gateways[lab.ClusterA].IPs)[0]
	both := slices.Sorted(slices.Values(append(ipv4(theLab.Gateways[lab.ClusterA].IPs), ipv4(theLab.Gateways[lab.ClusterB].IPs)...)))

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, w := range []*lab.Cluster{a, wb} {
			if err := lab.DeleteGatewayEndpoints(ctx, w); err != nil {
				t.Error(err)
			}
		}
		if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, ""); err != nil {
			t.Error(err)
		}
	})
	if err := setLocality(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*lab.Cluster{a, wb} {
		if err := lab.SetGatewayEndpoints(ctx, w, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, "True"); err != nil {
		t.Fatal(err)
	}
	causes := []failoverCause{
		{"envoy endpoints of cluster-a not ready", func(ctx context.Context, healthy bool) error {
			return lab.SetGatewayEndpoints(ctx, a, healthy)
		}},
		{"Cluster cluster-a Available=False", func(ctx context.Context, healthy bool) error {
			status := "False"
			if healthy {
				status = "True"
			}
			return lab.SetClusterAvailable(ctx, mgmt, lab.ClusterNamespace, lab.ClusterA, status)
		}},
	}
	gone := make([][]time.Duration, len(causes))
	pastTTL := make([][]time.Duration, len(causes))
	began := time.Now()
	for i := range trials {
		for ci, cause := range causes {
			// Healthy (every cause undoes itself), and answered by
			// cluster-b's cluster DNS.
			primed, err := waitAnswerSet(ctx, b.ClusterDNSAddr, name, both, time.Now().Add(changeTimeout))
			if err != nil {
				t.Fatalf("trial %d, %s: back to both gateways: %v", i, cause.name, err)
			}
			primedAt := time.Now()
			primeTTL := time.Duration(primed.Answer[0].Header().Ttl) * time.Second
			made := time.Now()
			if err := cause.set(ctx, false); err != nil {
				t.Fatal(err)
			}
			at, err := waitWithout(ctx, b.ClusterDNSAddr, name, addrA, made.Add(changeTimeout))
			if err != nil {
				t.Fatalf("trial %d, %s: %v", i, cause.name, err)
			}
			gone[ci] = append(gone[ci], at.Sub(made))
			pastTTL[ci] = append(pastTTL[ci], at.Sub(primedAt.Add(primeTTL)))
			// Healthy again before the other cause is measured.
			if err := cause.set(ctx, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "gateways failover: %d trials per cause, in %s; name %s, policy All, TTL %s (default), shipped caches\n",
		trials, time.Since(began).Round(time.Second), name, gatewaysTTL)
	fmt.Fprintf(&tb, "until cluster-b's cluster DNS no longer answers cluster-a's %s, from\n", addrA)
	fmt.Fprintf(&tb, "%-46s %9s %9s %9s  %s\n", "", "p50", "p99", "max", "goal")
	for ci, cause := range causes {
		fmt.Fprintf(&tb, "%-46s %9s %9s %9s  %s\n", cause.name,
			fmtDuration(percentile(gone[ci], 50)), fmtDuration(percentile(gone[ci], 99)), fmtDuration(percentile(gone[ci], 100)),
			goalText("p99", percentile(gone[ci], 99), gatewaysGoal, "<="))
		fmt.Fprintf(&tb, "%-46s %9s %9s %9s\n", "  of which after the cached answer's TTL ended",
			fmtDuration(percentile(pastTTL[ci], 50)), fmtDuration(percentile(pastTTL[ci], 99)), fmtDuration(percentile(pastTTL[ci], 100)))
	}
	fmt.Fprintf(&tb, "(timed from just before the write that makes the gateway unhealthy; the name is asked once just before it and\n")
	fmt.Fprintf(&tb, " then every %s; TTLs are whole seconds, so the TTL rows can read up to 1 s high)\n", gatewaysPoll)
	report(t, tb.String())
}

// waitAnswerSet asks server for host (A) until it answers exactly want
// (sorted), and returns that answer.
func waitAnswerSet(ctx context.Context, server, host string, want []string, deadline time.Time) (*dns.Msg, error) {
	r, _, err := pollA(ctx, server, host, gatewaysPoll, deadline, func(got []string) (bool, error) {
		return slices.Equal(got, want), nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %v: %w", want, err)
	}
	return r, nil
}

// waitWithout asks server for host (A) until an answer with addresses
// lacks addr, and returns when that answer came.
func waitWithout(ctx context.Context, server, host, addr string, deadline time.Time) (time.Time, error) {
	_, at, err := pollA(ctx, server, host, gatewaysPoll, deadline, func(got []string) (bool, error) {
		return len(got) > 0 && !slices.Contains(got, addr), nil
	})
	if err != nil {
		return at, fmt.Errorf("waiting for an answer without %s: %w", addr, err)
	}
	return at, nil
}
