package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/guard"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

// BenchmarkGuardedQuery asks, with 1,000 gateways in etcd, names whose
// random first label passes every cache: names the guard refuses (a '/',
// an `any` label, a shape too deep), an unknown name of a valid shape
// (NXDOMAIN from etcd) and a name below a gateway. The time is the whole
// round trip to CoreDNS and etcd in this process; ranges/op counts etcd
// reads per query.
func BenchmarkGuardedQuery(b *testing.B) {
	const gateways = 1000
	var published []*discoveryv1.EndpointSlice
	for i := range gateways {
		published = append(published, testfixture.IPv4Slice(fmt.Sprintf("gw-%d", i), fmt.Sprintf("*.gateway.c%d.dev-team.clusters.xcc.test", i),
			fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)))
	}
	w := startZone(b, world{zone: dnsworld.Zone, directives: coredns.Directives}, published)
	for _, c := range []struct {
		what  string
		name  func(i int) string
		rcode int
	}{
		{"refused-slash", func(i int) string { return fmt.Sprintf("r%d/x.dev-team.clusters.xcc.test.", i) }, dns.RcodeNameError},
		{"refused-any", func(i int) string { return fmt.Sprintf("r%d.x.any.clusters.xcc.test.", i) }, dns.RcodeNameError},
		{"refused-depth", func(i int) string { return fmt.Sprintf("r%d.api.c1.dev-team.clusters.xcc.test.", i) }, dns.RcodeNameError},
		{"nxdomain", func(i int) string { return fmt.Sprintf("r%d.gateway.nosuch%d.dev-team.clusters.xcc.test.", i, i) }, dns.RcodeNameError},
		{"gateway-miss", func(i int) string { return fmt.Sprintf("r%d.gateway.c%d.dev-team.clusters.xcc.test.", i, i%gateways) }, dns.RcodeSuccess},
	} {
		// i goes on from one run to the next (-count), so no name is asked
		// twice and none is answered from the cache.
		i := 0
		b.Run(c.what, func(b *testing.B) {
			before, start := rangeRequests(b), i
			for b.Loop() {
				i++
				if r := w.Ask(b, "udp", c.name(i), dns.TypeA, 0); r.Rcode != c.rcode {
					b.Fatalf("rcode %s, want %s\n%s", dns.RcodeToString[r.Rcode], dns.RcodeToString[c.rcode], r)
				}
			}
			b.ReportMetric((rangeRequests(b)-before)/float64(i-start), "ranges/op")
		})
	}
}

// cacheBlock opens a cache block of the shipped Corefile or the guard
// file; guardImport is the Corefile's import of the guard file.
const (
	cacheBlock  = "cache {\n"
	guardImport = "import {$XCC_GUARD}\n"
)

// BenchmarkLargeHeadlessQueries times one cache miss of each question
// about the large headless names of TestLargeHeadlessReads, a round trip
// over TCP to CoreDNS and etcd in this process, and reports it as a
// multiple of an NXDOMAIN in the clusterset zone timed in the same run
// (x-nxdomain): the ratio, not the time, is what compares across
// machines. ranges/op counts etcd reads per question. Figures:
// docs/benchmarks.md, section "Large headless names".
func BenchmarkLargeHeadlessQueries(b *testing.B) {
	// The large names are fixed, and the cache's key is the lowercased
	// name, the type and the DO and CD bits, so fresh names cannot make
	// their queries miss. The cache is told to store nothing instead
	// (disable success, disable denial): each query still passes the
	// cache, which looks it up and misses, then the guard and etcd, as a
	// real miss does; only the store of the answer is left out. Without
	// the cache in the Corefile its lookup would be left out too.
	w := startLargeHeadless(b, uncachedCorefile(b), false)
	const (
		cs = largeClusterSetName
		hx = largeExportName
	)
	// baseline is the time of an NXDOMAIN in this run, in nanoseconds,
	// timed first in a run of its own like each question: asked in turn
	// with a large question, it would be charged the collection of the
	// large answer's garbage.
	var baseline float64
	for _, q := range []struct {
		what  string
		name  string
		qtype uint16
		rcode int
		// answers is the least number of answer records.
		answers int
	}{
		{"nxdomain", "nosuch.cluster-a." + cs, dns.TypeA, dns.RcodeNameError, 0},
		{"a-1000-endpoints", cs, dns.TypeA, dns.RcodeSuccess, largeEndpoints},
		{"srv-clusterset-import", "_pg._tcp." + cs, dns.TypeSRV, dns.RcodeSuccess, 500},
		{"srv-headless-export", "_pg._tcp." + hx, dns.TypeSRV, dns.RcodeSuccess, 500},
		{"a-pod", "db-7.cluster-a." + cs, dns.TypeA, dns.RcodeSuccess, 1},
	} {
		b.Run(q.what, func(b *testing.B) {
			c := &dns.Client{Net: "tcp", Timeout: waitFor}
			conn, err := c.Dial(w.DNS.TCP)
			if err != nil {
				b.Fatalf("dial CoreDNS: %v", err)
			}
			defer func() { _ = conn.Close() }()
			m := missQuestion(q.name, q.qtype)
			ask := func() {
				r, _, err := c.ExchangeWithConn(m, conn)
				if err != nil {
					b.Fatalf("%s %s: %v", q.name, dns.TypeToString[q.qtype], err)
				}
				if r.Rcode != q.rcode || len(r.Answer) < q.answers {
					b.Fatalf("%s %s: %s with %d answers, want %s with at least %d", q.name, dns.TypeToString[q.qtype],
						dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[q.rcode], q.answers)
				}
			}
			// One question untimed, so no row times a warm-up, and no
			// timing before serve has worked through its start (it syncs
			// every slice again after its first reconcile) and the last
			// row's work is done.
			ask()
			waitIdle(b)
			before := rangeRequests(b)
			for b.Loop() {
				ask()
			}
			reads := (rangeRequests(b) - before) / float64(b.N)
			if reads < 1 {
				b.Fatalf("%.2f etcd reads per question: the cache answered", reads)
			}
			b.ReportMetric(reads, "ranges/op")
			perQuestion := float64(b.Elapsed()) / float64(b.N)
			if q.what == "nxdomain" {
				baseline = perQuestion
			}
			// Without the baseline (-bench chose other questions) there
			// is no ratio to report.
			if baseline > 0 {
				b.ReportMetric(perQuestion/baseline, "x-nxdomain")
			}
		})
	}
}

// uncachedCorefile is the shipped Corefile with the guard file of the
// large headless world written into it in place of its import, and
// every cache, the zone's and those of the guard file's server blocks
// of the clusterset zone, told to store no answer, positive or negative.
func uncachedCorefile(t testing.TB) string {
	t.Helper()
	var guardFile strings.Builder
	if err := guard.Write(&guardFile, guard.Config{Zone: dnsworld.Zone, ClusterSetZone: csZone}); err != nil {
		t.Fatalf("write the guard file: %v", err)
	}
	text := testfixture.ShippedCorefile(t)
	if n := strings.Count(text, guardImport); n != 1 {
		t.Fatalf("shipped Corefile imports the guard file %d times, want 1", n)
	}
	text = strings.Replace(text, guardImport, guardFile.String(), 1)
	// The benchmark's reads per query show that none was left out.
	if n := strings.Count(text, cacheBlock); n < 2 {
		t.Fatalf("Corefile with the guard file has %d cache blocks, want one of each zone at least", n)
	}
	return strings.ReplaceAll(text, cacheBlock, cacheBlock+"        disable success\n        disable denial\n")
}

// The process counts as idle once it uses less than idleCPU of CPU time
// in one idleWindow.
const (
	idleWindow = 100 * time.Millisecond
	idleCPU    = 5 * time.Millisecond
)

// waitIdle waits until this process, etcd, serve and CoreDNS in it, is
// idle: CPU time used by others on the machine does not count.
func waitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	last := cpuTime(t)
	for {
		time.Sleep(idleWindow)
		now := cpuTime(t)
		if now-last < idleCPU {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process not idle within %s: %s of CPU in the last %s", waitFor, now-last, idleWindow)
		}
		last = now
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
