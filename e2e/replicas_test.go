package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// queriers each send one query per queryEvery: several per 10 ms.
	queriers   = 4
	queryEvery = 10 * time.Millisecond
	// queryTimeout is a pod resolver's (glibc's default timeout:5).
	queryTimeout = 5 * time.Second
	// slowAfter: an answer later than this is counted as slow.
	slowAfter     = time.Second
	settleBetween = time.Second
)

// tally counts what the cluster DNS answered.
type tally struct {
	answered, failed, wrong, timedOut, slow atomic.Int64
	maxNanos                                atomic.Int64
	mu                                      sync.Mutex
	firstBad                                []string
}

func (c *tally) String() string {
	return fmt.Sprintf("%d answered (%d after more than %s, slowest %s), %d failed (SERVFAIL, REFUSED or other error), %d wrong, %d timed out (%s)",
		c.answered.Load(), c.slow.Load(), slowAfter, time.Duration(c.maxNanos.Load()).Round(time.Millisecond),
		c.failed.Load(), c.wrong.Load(), c.timedOut.Load(), queryTimeout)
}

func (c *tally) lost() int64 { return c.failed.Load() + c.wrong.Load() + c.timedOut.Load() }

func (c *tally) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.firstBad) < 5 {
		c.firstBad = append(c.firstBad, s)
	}
}

// query asks server continuously, from queriers goroutines, until ctx ends:
// each question a fresh name below cluster-a's wildcard gateway, so no
// cache answers it and every one reaches a replica's etcd.
func query(ctx context.Context, server string, want []string, c *tally) *sync.WaitGroup {
	var wg sync.WaitGroup
	var seq atomic.Int64
	for w := 0; w < queriers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &dns.Client{Timeout: queryTimeout}
			tick := time.NewTicker(queryEvery)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				name := lab.GatewayHost(fmt.Sprintf("q%d", seq.Add(1)), lab.ClusterA)
				m := new(dns.Msg)
				m.SetQuestion(dns.Fqdn(name), dns.TypeA)
				began := time.Now()
				r, _, err := cl.Exchange(m, server)
				took := time.Since(began)
				switch {
				case err != nil:
					if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
						c.timedOut.Add(1)
					} else {
						c.failed.Add(1)
					}
					c.note(fmt.Sprintf("%s: %v", name, err))
				case r.Rcode != dns.RcodeSuccess:
					c.failed.Add(1)
					c.note(fmt.Sprintf("%s: %s", name, dns.RcodeToString[r.Rcode]))
				default:
					got := lab.Values(r, dns.TypeA)
					slices.Sort(got)
					if !slices.Equal(got, want) {
						c.wrong.Add(1)
						c.note(fmt.Sprintf("%s: %v, want %v", name, got, want))
						continue
					}
					c.answered.Add(1)
					if took > slowAfter {
						c.slow.Add(1)
						c.note(fmt.Sprintf("%s: answered after %s", name, took.Round(time.Millisecond)))
					}
					for m := c.maxNanos.Load(); int64(took) > m && !c.maxNanos.CompareAndSwap(m, int64(took)); m = c.maxNanos.Load() {
					}
				}
			}
		}()
	}
	return &wg
}

// testReplicasRestart: cluster-b runs two DNS replicas (each serve with
// its own etcd, and our CoreDNS), its cluster DNS forwarding the zone to
// both. Queries go on continuously through the cluster DNS while (a) each
// replica in turn is stopped as the kubelet stops a pod (SIGTERM:
// CoreDNS's drain, serve's shutdown delay), started again and waited
// ready; (b) one replica is killed with SIGKILL and started again. The
// rolling restart must lose no query; the SIGKILL must answer nothing
// wrong, and its failures and timeouts are reported.
func testReplicasRestart(t *testing.T) {
	b := requireDNS(t)
	ctx := ctxFor(t)
	want := append([]string(nil), theLab.Gateways[lab.ClusterA].IPs...)
	slices.Sort(want)
	// The walkthrough's state, should this test run on its own (after
	// TestManagementDown the management API server is down, and the name
	// answers already).
	if r, err := lab.Query(b.ClusterDNSAddr, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA); err != nil || r.Rcode != dns.RcodeSuccess {
		for _, c := range []string{lab.ClusterA, lab.ClusterB} {
			if err := lab.LabelCluster(ctx, theLab.Management, c, lab.SelectorLabel, lab.SelectorValue); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := lab.ApplyYAML(ctx, theLab.Management, lab.GatewayDNSGVR, lab.GatewayDNSYAML); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, b.ClusterDNSAddr, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess, want...)

	r1 := b.Primary()
	r2, err := b.AddReplica(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r2.Stop(false)
		if err := b.ForwardClusterDNS(context.Background(), b.XCCDNSAddr); err != nil {
			t.Errorf("cluster DNS back to one replica: %v", err)
		}
	})
	if err := b.ForwardClusterDNS(ctx, r1.XCCDNSAddr, r2.XCCDNSAddr); err != nil {
		t.Fatal(err)
	}
	expect(t, b.ClusterDNSAddr, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess, want...)

	phase := func(name string, during func() error) *tally {
		t.Helper()
		c := &tally{}
		qctx, stop := context.WithCancel(ctx)
		wg := query(qctx, b.ClusterDNSAddr, want, c)
		began := time.Now()
		time.Sleep(settleBetween)
		err := during()
		time.Sleep(settleBetween)
		stop()
		wg.Wait()
		t.Logf("%s (%s): %s", name, time.Since(began).Round(100*time.Millisecond), c)
		for _, s := range c.firstBad {
			t.Logf("  e.g. %s", s)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return c
	}

	rolling := phase("rolling restart", func() error {
		for _, r := range []*lab.Replica{r1, r2} {
			other := r2
			if r == r2 {
				other = r1
			}
			// Deleting a pod takes it out of the Service's endpoints and
			// sends SIGTERM at the same time; CoreDNS's drain covers the moments
			// until every forwarder knows.
			if err := b.ForwardClusterDNS(ctx, other.XCCDNSAddr); err != nil {
				return err
			}
			began := time.Now()
			r.Stop(false)
			t.Logf("replica %s stopped (SIGTERM) in %s", r.Name, time.Since(began).Round(10*time.Millisecond))
			began = time.Now()
			if err := r.Start(ctx); err != nil {
				return err
			}
			t.Logf("replica %s ready again in %s", r.Name, time.Since(began).Round(10*time.Millisecond))
			// Ready: back in the endpoints.
			if err := b.ForwardClusterDNS(ctx, r1.XCCDNSAddr, r2.XCCDNSAddr); err != nil {
				return err
			}
			time.Sleep(settleBetween)
		}
		return nil
	})
	if rolling.lost() != 0 || rolling.answered.Load() == 0 {
		t.Errorf("rolling restart lost queries: %s", rolling)
	}

	// A SIGKILL (a crashed pod, an OOM kill) gives no notice: the dead
	// replica stays among the forward targets all along, as its endpoint
	// would until its readiness probe fails.
	killed := phase("SIGKILL of one replica", func() error {
		r1.Stop(true)
		time.Sleep(2 * time.Second)
		began := time.Now()
		if err := r1.Start(ctx); err != nil {
			return err
		}
		t.Logf("replica %s ready again in %s", r1.Name, time.Since(began).Round(10*time.Millisecond))
		return nil
	})
	if killed.wrong.Load() != 0 || killed.answered.Load() == 0 {
		t.Errorf("SIGKILL of one replica: %s", killed)
	}
	if killed.lost() != 0 {
		t.Logf("SIGKILL of one replica lost %d queries", killed.lost())
	}
}
