package e2e

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Settings of the catch-up wait: every name the dnsperf list expects to
// answer is asked of every server until each answers, before any
// measurement.
const (
	// peersCatchUpWorkers ask one server at once: a pass over 10,000
	// names in seconds, without taking both cores from the servers.
	peersCatchUpWorkers = 8
	// peersCatchUpPause is the least wait between two passes over the
	// names still missing; a pass is followed by a wait as long as
	// itself, so that asking takes at most half the time of the
	// servers that are still writing.
	peersCatchUpPause = time.Second
	// peersCatchUpTimeout bounds the catch-up from the fill's last
	// write, at peersExports and in proportion above.
	peersCatchUpTimeout = 5 * time.Minute
	// peersCatchUpLogEvery is how often the wait logs its progress.
	peersCatchUpLogEvery = 15 * time.Second
)

// peersAnswerNames are the names that must answer A once the fill is
// served: every fill import (the dnsperf list's names that exist) and
// the specification's two.
func peersAnswerNames(n int) []string {
	names := make([]string, 0, n)
	for i := range n - peersSpecCount {
		names = append(names, lab.ClusterSetHost(peersNamespace, fillName(i)))
	}
	for _, s := range peersSpecServices() {
		names = append(names, lab.ClusterSetHost(peersNamespace, s.Name))
	}
	return names
}

// catchUp waits until every server answers every name of
// peersAnswerNames, all servers asked at once, and adds a row of how
// long each took from lastWrite, the fill's last write. It fails the
// benchmark when one has not caught up within the bound: what dnsperf
// and the checks measure must be each server with every record.
func (r *peersRun) catchUp(lastWrite time.Time) {
	names := peersAnswerNames(r.n)
	bound := peersScaled(peersCatchUpTimeout, r.n)
	servers := []peerServer{r.xccU, r.stockU, r.xccC, r.stockC}
	asked := time.Since(lastWrite)
	took := make([]time.Duration, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { took[i], errs[i] = r.answerAll(s, names, lastWrite, bound) })
	}
	asking := make(chan struct{})
	var sliced sync.WaitGroup
	sliced.Go(func() { r.logContractSlices(lastWrite, asking) })
	wg.Wait()
	close(asking)
	sliced.Wait()
	if err := errors.Join(errs...); err != nil {
		r.t.Fatal(err)
	}
	cell := func(uncached, cached time.Duration) string {
		return fmt.Sprintf("%s no cache, %s cached", uncached.Round(100*time.Millisecond), cached.Round(100*time.Millisecond))
	}
	r.row(fmt.Sprintf("catch-up: the fill's last write to all %s names answering", thousands(float64(len(names)))),
		cell(took[0], took[2]), cell(took[1], took[3]))
	r.notes = append(r.notes, fmt.Sprintf("catch-up: the servers were asked from %s after the fill's last write on, when cluster-b held every import; "+
		"a catch-up within one pass of that says only that the server had caught up by then", asked.Round(100*time.Millisecond)))
}

// peersContractSelector selects the clusterset contract slices the
// controller writes into a member's slice namespace, which serve reads.
const peersContractSelector = "endpointslice.kubernetes.io/managed-by=xcc-dns-controller,xcc-dns.io/record=clusterset"

// logContractSlices logs, every peersCatchUpLogEvery until asking is
// closed, how many clusterset contract slices cluster-b holds: a serve
// behind them lags, a controller that has not written them is late.
func (r *peersRun) logContractSlices(since time.Time, asking <-chan struct{}) {
	b := theLab.Workload(lab.ClusterB)
	for {
		l, err := b.Client.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(r.ctx, metav1.ListOptions{LabelSelector: peersContractSelector})
		if err == nil {
			r.t.Logf("catch-up: cluster-b holds %d clusterset contract slices, %s after the fill's last write",
				len(l.Items), time.Since(since).Round(time.Second))
		}
		select {
		case <-asking:
			return
		case <-time.After(peersCatchUpLogEvery):
		}
	}
}

// answerAll asks s every name of names, and again the ones it did not
// answer, until none is left: how long from since that took, or an
// error naming what is missing once bound has passed.
func (r *peersRun) answerAll(s peerServer, names []string, since time.Time, bound time.Duration) (time.Duration, error) {
	missing := names
	logged := time.Now()
	for {
		began := time.Now()
		var first string
		missing, first = unanswered(s.addr, missing)
		if len(missing) == 0 {
			return time.Since(since), nil
		}
		if time.Since(since) > bound {
			return 0, fmt.Errorf("%s has not caught up: %d of %d names unanswered %s after the fill's last write (e.g. %s: %s)",
				s.name, len(missing), len(names), bound, missing[0], first)
		}
		if time.Since(logged) >= peersCatchUpLogEvery {
			r.t.Logf("catch-up, %s: %d of %d names answer, %s after the fill's last write",
				s.name, len(names)-len(missing), len(names), time.Since(since).Round(time.Second))
			logged = time.Now()
		}
		time.Sleep(max(peersCatchUpPause, time.Since(began)))
	}
}

// unanswered asks addr the A record of each name once, on
// peersCatchUpWorkers at once: the names without an address in the
// answer, in their order, and what the first of them got.
func unanswered(addr string, names []string) ([]string, string) {
	got := make([]string, len(names))
	_ = inParallelOn(peersCatchUpWorkers, len(names), func(i int) error {
		m, err := lab.Query(addr, names[i], dns.TypeA)
		switch {
		case err != nil:
			got[i] = err.Error()
		case m.Rcode != dns.RcodeSuccess || len(lab.Values(m, dns.TypeA)) == 0:
			got[i] = lab.Summary(m)
		}
		return nil // a miss is asked again in the next pass
	})
	var missing []string
	var first string
	for i, g := range got {
		if g == "" {
			continue
		}
		if missing == nil {
			first = g
		}
		missing = append(missing, names[i])
	}
	return missing, first
}
