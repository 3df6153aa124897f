package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Lab benchmarks run only when XCC_BENCH is set (make bench-lab); they
// measure, and fail only when a change never arrives. XCC_BENCH_OUT, when
// set, names a file their tables are appended to.
const (
	benchEnv    = "XCC_BENCH"
	benchOutEnv = "XCC_BENCH_OUT"

	// propagationChanges is how many load-balancer IP changes are made,
	// propagationEvery apart: far enough apart that each one reaches etcd
	// on its own (about 0.2 s), close enough that the run takes minutes,
	// not the hours that waiting out the TTL after each would.
	propagationChanges = 200
	propagationEvery   = 500 * time.Millisecond
	// dnsPollEvery is how often cluster-b's cluster DNS is asked; it is
	// the resolution of the end-to-end figure.
	dnsPollEvery = 50 * time.Millisecond
)

// requireBench skips unless benchmarks were asked for, and otherwise
// applies the walkthrough (idempotent) and waits until cluster-b's cluster
// DNS answers cluster-a's gateway.
func requireBench(t *testing.T) *lab.WorkloadDNS {
	t.Helper()
	if os.Getenv(benchEnv) == "" {
		t.Skipf("a benchmark: set %s=1 (make bench-lab)", benchEnv)
	}
	b := requireDNS(t)
	if err := theLab.ApplyWalkthrough(ctxFor(t)); err != nil {
		t.Fatalf("apply the walkthrough: %v", err)
	}
	expect(t, b.ClusterDNSAddr, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess,
		lab.DefaultGateways()[lab.ClusterA].IPs...)
	return b
}

// report prints a benchmark's table and appends it to $XCC_BENCH_OUT.
func report(t *testing.T, table string) {
	t.Helper()
	t.Log("\n" + table)
	path := os.Getenv(benchOutEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(table + "\n"); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// observation is when an address was first seen somewhere.
type observation struct {
	at    time.Time
	index int // which change the address belongs to
}

// TestBenchPropagation moves cluster-a's load balancer through
// propagationChanges addresses and measures, for each change, how long
// until cluster-b's serve has written it (or a newer one) into its etcd,
// and until cluster-b's cluster DNS answers it (or a newer one): the
// staleness a pod in cluster-b sees, with the shipped caches and TTL.
// "Or a newer one" because a cache that refreshes after two changes skips
// the first; what matters is how long an old address was served.
func TestBenchPropagation(t *testing.T) {
	b := requireBench(t)
	ctx := ctxFor(t)
	a := theLab.Workload(lab.ClusterA)
	name := "kuard.gateway." + lab.ClusterA + "." + lab.ClusterNamespace + ".clusters.xcc.test."
	t.Cleanup(func() {
		_ = lab.SetGateway(context.Background(), a, lab.DefaultGateways()[lab.ClusterA])
	})

	addrs := make([]string, propagationChanges)
	index := map[string]int{}
	for i := range addrs {
		// 198.18.0.0/15 is for benchmarks (RFC 2544).
		addrs[i] = fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)
		index[addrs[i]] = i
	}

	// etcd: every value written under cluster-a's gateway key, as it comes.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{b.EtcdClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var mu sync.Mutex
	var inEtcd, inDNS []observation
	watch := cli.Watch(watchCtx, lab.GatewayKeyPrefix(lab.ClusterA), clientv3.WithPrefix())
	go func() {
		for resp := range watch {
			now := time.Now()
			for _, ev := range resp.Events {
				if ev.Type != clientv3.EventTypePut {
					continue
				}
				for addr, i := range index {
					if strings.Contains(string(ev.Kv.Value), `"`+addr+`"`) {
						mu.Lock()
						inEtcd = append(inEtcd, observation{now, i})
						mu.Unlock()
					}
				}
			}
		}
	}()

	// DNS: cluster-b's cluster DNS, asked every dnsPollEvery.
	go func() {
		for watchCtx.Err() == nil {
			r, err := lab.Query(b.ClusterDNSAddr, name, dns.TypeA)
			now := time.Now()
			if err == nil {
				for _, v := range lab.Values(r, dns.TypeA) {
					if i, ok := index[v]; ok {
						mu.Lock()
						inDNS = append(inDNS, observation{now, i})
						mu.Unlock()
					}
				}
			}
			time.Sleep(dnsPollEvery)
		}
	}()

	changed := make([]time.Time, propagationChanges)
	for i, addr := range addrs {
		changed[i] = time.Now()
		if err := lab.SetGateway(ctx, a, lab.Gateway{IPs: []string{addr}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(propagationEvery)
	}
	last := addrs[len(addrs)-1]
	if _, err := lab.WaitEtcdContains(ctx, b.EtcdClientURL, lab.GatewayKeyPrefix(lab.ClusterA), last, answerTimeout); err != nil {
		t.Fatal(err)
	}
	expect(t, b.ClusterDNSAddr, name, dns.TypeA, dns.RcodeSuccess, last)
	time.Sleep(2 * dnsPollEvery)
	stopWatch()

	mu.Lock()
	defer mu.Unlock()
	toEtcd, err := delays(changed, inEtcd)
	if err != nil {
		t.Fatalf("serve's etcd: %v", err)
	}
	toDNS, err := delays(changed, inDNS)
	if err != nil {
		t.Fatalf("cluster-b's cluster DNS: %v", err)
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "propagation: %d load-balancer IP changes on cluster-a, %s apart; record TTL 30 s, shipped caches\n",
		propagationChanges, propagationEvery)
	fmt.Fprintf(&tb, "%-44s %8s %8s %8s\n", "until", "p50", "p99", "max")
	for _, row := range []struct {
		what string
		d    []time.Duration
	}{
		{"cluster-b's serve wrote it to etcd", toEtcd},
		{"cluster-b's cluster DNS answered it", toDNS},
	} {
		fmt.Fprintf(&tb, "%-44s %8s %8s %8s\n", row.what, percentile(row.d, 50), percentile(row.d, 99), percentile(row.d, 100))
	}
	fmt.Fprintf(&tb, "(DNS asked every %s; a change counts as arrived when its address or a newer one is seen)\n", dnsPollEvery)
	report(t, tb.String())
}

// delays returns, for each change i made at changed[i], the time until the
// first observation at or after it of change i or a later one.
func delays(changed []time.Time, seen []observation) ([]time.Duration, error) {
	sorted := slices.Clone(seen)
	slices.SortFunc(sorted, func(a, b observation) int { return a.at.Compare(b.at) })
	out := make([]time.Duration, len(changed))
	for i, at := range changed {
		found := false
		for _, o := range sorted {
			if !o.at.Before(at) && o.index >= i {
				out[i], found = o.at.Sub(at), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("change %d (made %s) never arrived", i, at.Format(time.TimeOnly))
		}
	}
	return out, nil
}

// percentile returns the p-th percentile (nearest rank) of d, rounded to
// milliseconds.
func percentile(d []time.Duration, p int) string {
	s := slices.Clone(d)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	rank = min(max(rank, 1), len(s))
	return s[rank-1].Round(time.Millisecond).String()
}
