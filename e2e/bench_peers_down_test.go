package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// apiServerDown stops cluster-b's API server and asks every server the
// checks, at once and after r.downFor; then restarts each DNS server
// (serve and our CoreDNS; stock CoreDNS) while the API server stays down
// and records when each answers again and what; then starts the API
// server again and records when stock CoreDNS answers.
func (r *peersRun) apiServerDown() {
	t, ctx := r.t, r.ctx
	b := theLab.Workload(lab.ClusterB)
	stopped := time.Now()
	b.Stop()
	down := true
	defer func() {
		if down {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := theLab.RestartCluster(ctx, b); err != nil {
				t.Error(err)
			}
		}
	}()
	time.Sleep(peersDownSettle)
	r.correctness(fmt.Sprintf("cluster-b's API server down %s: answers right, cached", peersDownSettle), r.xccC, r.stockC, false)
	r.correctness(fmt.Sprintf("cluster-b's API server down %s: answers right, no cache", peersDownSettle), r.xccU, r.stockU, false)
	t.Logf("cluster-b's API server stays down %s, to %s", r.downFor, stopped.Add(r.downFor).UTC().Format(time.TimeOnly))
	select {
	case <-time.After(time.Until(stopped.Add(r.downFor))):
	case <-ctx.Done():
		t.Fatalf("cluster-b's API server down: %v", ctx.Err())
	}
	r.correctness(fmt.Sprintf("cluster-b's API server down %s: answers right, cached", r.downFor), r.xccC, r.stockC, false)
	r.correctness(fmt.Sprintf("cluster-b's API server down %s: answers right, no cache", r.downFor), r.xccU, r.stockU, false)

	// Each server is restarted and asked on its own, all at once, each
	// timed from the start of its new process.
	restarts := []func() error{r.d.RestartXCCNoWait, r.xccPlain.Restart, r.stockCached.Restart, r.stockPlain.Restart}
	servers := []peerServer{r.xccC, r.xccU, r.stockC, r.stockU}
	first := make([]string, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			if errs[i] = restarts[i](); errs[i] == nil {
				first[i] = r.firstRight(time.Now(), peersAnswerWait, s)[0]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	r.row(fmt.Sprintf("API server down %s, DNS server restarted: first right answer of web, cached", r.downFor), first[0], first[2])
	r.row(fmt.Sprintf("API server down %s, DNS server restarted: first right answer of web, no cache", r.downFor), first[1], first[3])
	r.correctness("API server down, after the restart: answers right, cached", r.xccC, r.stockC, false)
	r.correctness("API server down, after the restart: answers right, no cache", r.xccU, r.stockU, false)

	if err := theLab.RestartCluster(ctx, b); err != nil {
		t.Fatal(err)
	}
	down = false
	back := r.firstRight(time.Now(), 2*time.Minute, r.xccC, r.stockC)
	r.row("API server back (after /readyz): first right answer of web, cached", back[0], back[1])
}

// firstRight asks each server the first check (A of web) every 100 ms
// from since on, for at most within, all at once: how long until it
// answered right, or what it last answered.
func (r *peersRun) firstRight(since time.Time, within time.Duration, servers ...peerServer) []string {
	out := make([]string, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			var got string
			for time.Since(since) < within {
				var ok bool
				if ok, got = judge(s.addr, r.checks[0]); ok {
					out[i] = fmt.Sprintf("after %s", time.Since(since).Round(100*time.Millisecond))
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			out[i] = fmt.Sprintf("none in %s (last: %s)", within, got)
		})
	}
	wg.Wait()
	return out
}

// table is the benchmark's report: one Markdown table, its notes, and a
// line per check.
func (r *peersRun) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "peers: the %s zone of cluster-b served by xcc-dns and by stock CoreDNS %s (kubernetes plugin, multicluster), %d imports\n\n",
		lab.ClusterSetZone, lab.StockCoreDNSVersion, r.n)
	fmt.Fprintf(&b, "| | xcc-dns (serve + our CoreDNS) | stock CoreDNS %s `multicluster` |\n|:--|:--|:--|\n", lab.StockCoreDNSVersion)
	for _, row := range r.rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
	b.WriteString("\n")
	for _, n := range r.notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	b.WriteString("\n")
	for _, d := range r.detail {
		b.WriteString(d + "\n")
	}
	return b.String()
}
