package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// The serve-kill benchmark: serve of cluster-b is killed with SIGKILL at a
// random moment of a reconcile that rewrites every one of 10,000 records,
// again and again, while a querier asks our DNS server continuously.
const (
	killsEnv = "XCC_BENCH_KILLS"
	// defaultKills is how often serve is killed mid-reconcile.
	defaultKills = 100
	// faultNames names of faultAddrs addresses each: 10,000 records, and
	// an answer (old and new addresses while a name changes) still fits
	// in a UDP message.
	faultNames = 1000
	faultAddrs = 10
	// faultNamespace is the management namespace the names claim; the
	// slices are written as the original controller would (no
	// managed-by label), so the lab's controller leaves them alone.
	faultNamespace = "faults"
	faultSample    = 50 // names the querier asks, spread over all
	faultQueryWait = time.Second
)

func faultHost(i int) string {
	return fmt.Sprintf("gateway.k%d.%s.clusters.xcc.test", i, faultNamespace)
}

// faultAddress is address j of name i in generation g (0 or 1): inside
// 100.64.0.0/10, which serve accepts.
func faultAddress(g, i, j int) string {
	k := i*faultAddrs + j
	return fmt.Sprintf("100.%d.%d.%d", 64+g, k/250, k%250+1)
}

func faultSlice(g, i int) *discoveryv1.EndpointSlice {
	addrs := make([]string, faultAddrs)
	for j := range addrs {
		addrs[j] = faultAddress(g, i, j)
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("faults-k%d", i),
			Namespace: lab.SliceNamespace,
			Annotations: map[string]string{
				"connectivity.tanzu.vmware.com/dns-hostname":    "*." + faultHost(i),
				"connectivity.tanzu.vmware.com/gateway-dns-ref": faultNamespace + "/gw",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
}

// writeGeneration makes every fault slice hold generation g.
func writeGeneration(ctx context.Context, kube kubernetes.Interface, g int) error {
	slicesAPI := kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace)
	return inParallel(faultNames, func(i int) error {
		want := faultSlice(g, i)
		cur, err := slicesAPI.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = slicesAPI.Create(ctx, want, metav1.CreateOptions{})
		case err == nil:
			cur.Endpoints = want.Endpoints
			_, err = slicesAPI.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", want.Name, err)
		}
		return nil
	})
}

// checkRecords reports how serve's etcd differs from generation g: every
// fault name must hold exactly its g addresses.
func checkRecords(ctx context.Context, cli *clientv3.Client, g int) error {
	prefix := "/skydns/test/xcc/clusters/" + faultNamespace + "/"
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("etcd get %s: %w", prefix, err)
	}
	got := map[string][]string{} // cluster label -> leaf hosts
	for _, kv := range resp.Kvs {
		parts := strings.Split(strings.TrimPrefix(string(kv.Key), prefix), "/")
		if len(parts) != 3 { // <cluster>/gateway/<leaf>; the name record is shorter
			continue
		}
		var v struct{ Host string }
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return fmt.Errorf("value of %s: %w", kv.Key, err)
		}
		got[parts[0]] = append(got[parts[0]], v.Host)
	}
	if len(got) != faultNames {
		return fmt.Errorf("%d names in etcd, want %d", len(got), faultNames)
	}
	for i := range faultNames {
		want := make([]string, faultAddrs)
		for j := range want {
			want[j] = faultAddress(g, i, j)
		}
		have := got["k"+strconv.Itoa(i)]
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(have, want) {
			return fmt.Errorf("name k%d holds %v, want generation %d %v", i, have, g, want)
		}
	}
	return nil
}

// answerTally counts the querier's answers by kind.
type answerTally struct {
	total, complete, failed, empty, partial, wrong atomic.Int64
}

// judge classifies one answer of name i: complete (holds every address of
// a generation and nothing else), partial (fewer), wrong (a foreign
// address), empty (NOERROR without addresses or NXDOMAIN), failed (no
// answer or SERVFAIL: our DNS server without its etcd).
func (a *answerTally) judge(i int, r *dns.Msg, err error) {
	a.total.Add(1)
	if err != nil || r.Rcode == dns.RcodeServerFailure {
		a.failed.Add(1)
		return
	}
	got := lab.Values(r, dns.TypeA)
	if len(got) == 0 {
		a.empty.Add(1)
		return
	}
	var have [2]int
	for _, v := range got {
		found := false
		for g := range 2 {
			for j := range faultAddrs {
				if v == faultAddress(g, i, j) {
					have[g]++
					found = true
				}
			}
		}
		if !found {
			a.wrong.Add(1)
			return
		}
	}
	if have[0] == faultAddrs || have[1] == faultAddrs {
		a.complete.Add(1)
		return
	}
	a.partial.Add(1)
}

// restartSynced starts serve again and waits until its first reconcile is
// done (its /readyz says "ok", not that it serves from disk).
func restartSynced(ctx context.Context, t *testing.T, b *lab.WorkloadDNS) time.Duration {
	t.Helper()
	began := time.Now()
	if err := b.RestartServeNoWait(); err != nil {
		t.Fatal(err)
	}
	for strings.TrimSpace(readyz(t, b)) != "ok" {
		if time.Since(began) > answerTimeout || ctx.Err() != nil {
			t.Fatalf("restarted serve not synced after %s: /readyz %q", answerTimeout, readyz(t, b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(began)
}

// testBenchServeKills kills serve with SIGKILL at random moments of
// reconciles that rewrite all 10,000 records, restarting it each time, and
// checks after every complete restart that etcd equals the slices.
func testBenchServeKills(t *testing.T) {
	b := requireBench(t)
	kills := defaultKills
	if v := os.Getenv(killsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", killsEnv, v)
		}
		kills = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	clients, err := newBenchClients(theLab.Workload(lab.ClusterB))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := range faultNames {
			_ = clients.kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace).Delete(context.Background(), faultSlice(0, i).Name, metav1.DeleteOptions{})
		}
	})
	cli := serveEtcdClient(t, b)

	gen := 0
	if err := writeGeneration(ctx, clients.kube, gen); err != nil {
		t.Fatal(err)
	}
	waitRecords := func(g int) {
		t.Helper()
		deadline := time.Now().Add(answerTimeout)
		for {
			err := checkRecords(ctx, cli, g)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve's etcd never held generation %d: %v", g, err)
			}
			time.Sleep(pollInterval)
		}
	}
	waitRecords(gen)

	var tally answerTally
	queryCtx, stopQueries := context.WithCancel(ctx)
	var querier sync.WaitGroup
	querier.Go(func() {
		c := &dns.Client{Timeout: faultQueryWait}
		for n := 0; queryCtx.Err() == nil; n++ {
			i := (n * (faultNames / faultSample)) % faultNames
			// A fresh first label every time: our DNS server's cache
			// (which runs before the wildcard rewrite) never answers it.
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(fmt.Sprintf("q%d.%s", n, faultHost(i))), dns.TypeA)
			r, _, err := c.Exchange(m, b.XCCDNSAddr)
			tally.judge(i, r, err)
		}
	})

	// How long a restart that rewrites every record takes to be ready:
	// the kills land uniformly inside it.
	var restartTook time.Duration
	var mismatches int
	for k := 0; k <= kills; k++ {
		b.KillServe()
		gen = 1 - gen
		if err := writeGeneration(ctx, clients.kube, gen); err != nil {
			t.Fatal(err)
		}
		if k == 0 || k == kills {
			// Measure (first) or finish (last): a restart left to complete.
			took := restartSynced(ctx, t, b)
			if k == 0 {
				restartTook = took
				t.Logf("a restart that rewrites %d records is synced after %s", faultNames*faultAddrs, took.Round(time.Millisecond))
			}
			waitRecords(gen)
			continue
		}
		if err := b.RestartServeNoWait(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(restartTook))))
		b.KillServe()
		// After every kill: a restart that completes holds exactly the slices.
		restartSynced(ctx, t, b)
		if err := checkRecords(ctx, cli, gen); err != nil {
			mismatches++
			t.Errorf("kill %d: after the restart: %v", k, err)
		}
	}
	stopQueries()
	querier.Wait()

	report(t, fmt.Sprintf(`serve killed with SIGKILL mid-reconcile (%d records rewritten per restart), %d kills
restart to ready, rewriting every record: %s
etcd equal to the slices after every restart: %d of %d
answers from our DNS server while it ran (random first label, no cache):
  total %d, complete %d, partial %d, wrong %d, empty %d, failed (serve and its etcd down) %d`,
		faultNames*faultAddrs, kills, restartTook.Round(time.Millisecond), kills-mismatches, kills,
		tally.total.Load(), tally.complete.Load(), tally.partial.Load(), tally.wrong.Load(), tally.empty.Load(), tally.failed.Load()))
	if n := tally.partial.Load() + tally.wrong.Load() + tally.empty.Load(); n > 0 {
		t.Errorf("%d answers were partial, wrong or empty", n)
	}
}
