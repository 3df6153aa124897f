package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Settings of testBenchPeers.
const (
	peersNamespace = "bench-peers"
	peersSet       = "bench-peers"
	// peersExportsEnv sets how many imports are served (default
	// peersExports).
	peersExportsEnv = "XCC_BENCH_PEERS_EXPORTS"
	peersExports    = 1000
	// peersSpecCount are the specification's services among them.
	peersSpecCount = 2
	// peersMaxExports bounds the imports: peersFillAddress's addresses
	// hold 10,000 and more. Past 1,958 cluster-a, which holds the
	// specification's and the timed exports besides half the fill,
	// passes the controller's default of 1,000 exports per member, and
	// the controller runs with its per-member limits raised (past 7,246
	// also what its informers of a member may hold: memberLimitFlags).
	peersMaxExports = 10000
	// peersServingOnlyEnv, set to 1, keeps the run to what the serving
	// rows need (the answers, dnsperf, memory, export to answer): no API
	// server down and no gateways table, for the large sizes.
	peersServingOnlyEnv = "XCC_BENCH_PEERS_SERVING_ONLY"
	// peersNXEvery: one query in this many in the dnsperf list is for a
	// name that does not exist.
	peersNXEvery = 10
	// dnsperf: seconds a run, clients, rounds per server (the median by
	// q/s is reported).
	peersPerfSeconds = 8
	peersPerfClients = 4
	peersPerfRounds  = 5
	// peersLatencyRounds exports are timed one at a time, each server
	// asked every peersPoll from the export on.
	peersLatencyRounds = 20
	peersPoll          = 10 * time.Millisecond
	// peersFillTimeout bounds the fill of peersExports and
	// peersFillPerThousand each 1,000 more (1,000 took 65-81 s on a
	// 2-core VM); peersRestTimeout bounds the rest of the run besides
	// the API server's time down.
	peersFillTimeout     = 20 * time.Minute
	peersFillPerThousand = 4 * time.Minute
	peersRestTimeout     = 40 * time.Minute
	peersCleanupTimeout  = 10 * time.Minute
	// peersAnswerWait is how long a server may take to answer after a
	// restart or the API server's return before what it answers is
	// recorded.
	peersAnswerWait = 30 * time.Second
	// peersDownSettle is how long the API server is down before the
	// servers are first asked.
	peersDownSettle = 3 * time.Second
	// peersDownFor is how long cluster-b's API server stays down before
	// the DNS servers are restarted (and asked again, it still down): a
	// member's control plane out for an upgrade or an incident.
	// peersDownEnv sets it (a Go duration, such as 30s) for short runs.
	peersDownFor = 10 * time.Minute
	peersDownEnv = "XCC_BENCH_PEERS_DOWN"
)

// peerServer is one DNS server of the comparison.
type peerServer struct {
	name, addr string
	// procs are the processes whose CPU and memory are its cost.
	procs func() map[string]int
}

// peersRun is the state of one testBenchPeers run.
type peersRun struct {
	t      *testing.T
	ctx    context.Context
	d      *lab.WorkloadDNS
	aC, bC benchClients
	n      int
	// servingOnly: peersServingOnlyEnv is set.
	servingOnly bool
	// downFor: how long the API server is down before the restarts.
	downFor time.Duration
	checks  []peerCheck
	// xcc and stock, cached (what a user runs) and uncached (the data
	// path alone).
	xccC, xccU, stockC, stockU peerServer
	stockCached, stockPlain    *lab.StockMCSDNS
	xccPlain                   *lab.UncachedXCCDNS
	rows                       [][3]string
	notes, detail              []string
}

// testBenchPeers serves the same Multi-Cluster Services objects with
// xcc-dns (cluster-b's serve and our CoreDNS) and with stock CoreDNS
// 1.14.2, whose kubernetes plugin's `multicluster` option reads the
// ServiceImports and imported EndpointSlices the controller writes into
// cluster-b, and compares: the answers to the names of the MCS DNS
// specification and hostile names, q/s and latency with dnsperf cached
// and uncached, resident memory, export-to-answer time, and the answers
// with cluster-b's API server down, before and after each server's
// restart. Then gateways puts the names of the same LoadBalancer
// Services beside ExternalDNS's (a table of its own). It fails only when
// a measurement cannot be made.
func testBenchPeers(t *testing.T) {
	requireBench(t)
	n := peersExportCount(t)
	servingOnly := os.Getenv(peersServingOnlyEnv) == "1"
	var downFor time.Duration
	if !servingOnly {
		downFor = peersDownDuration(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), peersFillBound(n)+peersRestTimeout+downFor)
	defer cancel()
	r := &peersRun{t: t, ctx: ctx, d: theLab.DNS[lab.ClusterB], n: n, servingOnly: servingOnly, downFor: downFor}
	if flags := memberLimitFlags(peersClusterAExports(n), n+peersLatencyRounds); len(flags) > 0 {
		// Before the fill, and back to the defaults after the cleanup
		// (cleanups run last registered first).
		withController(t, flags...)
		r.notes = append(r.notes, fmt.Sprintf("the controller ran with %s", strings.Join(flags, " ")))
	}
	var err error
	if r.aC, err = newBenchClients(theLab.Workload(lab.ClusterA)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cleanup)
	// The servers run through the fill, as they would in a cluster, and
	// everything is measured once each answers every name.
	r.startServers()
	r.catchUp(r.fill())
	r.checks = r.specChecks()
	r.correctness("answers right (MCS DNS specification and hostile names)", r.xccC, r.stockC, true)
	r.perf()
	r.memory()
	r.latency()
	if r.servingOnly {
		r.notes = append(r.notes, fmt.Sprintf("%s=1: no API server down rows, no gateways table", peersServingOnlyEnv))
		report(t, r.table())
		return
	}
	r.apiServerDown()
	report(t, r.table())
	report(t, r.gateways())
}

// peersClusterAExports is how many Services cluster-a exports at n
// imports, the most of one member: the specification's, the timed
// ones, and the even half of the fill.
func peersClusterAExports(n int) int {
	return peersSpecCount + peersLatencyRounds + (n-peersSpecCount+1)/2
}

// peersFillBound is how long the fill of n imports may take.
func peersFillBound(n int) time.Duration {
	more := max(n-peersExports, 0)
	return peersFillTimeout + time.Duration(more)*peersFillPerThousand/1000
}

// peersScaled is d, a bound set for peersExports imports, at n: in
// proportion, never less than d.
func peersScaled(d time.Duration, n int) time.Duration {
	return max(d, d*time.Duration(n)/peersExports)
}

// peersDownDuration is peersDownEnv's duration, or peersDownFor.
func peersDownDuration(t *testing.T) time.Duration {
	s := os.Getenv(peersDownEnv)
	if s == "" {
		return peersDownFor
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < peersDownSettle {
		t.Fatalf("%s=%q: want a duration of %s or more, such as 30s or 10m", peersDownEnv, s, peersDownSettle)
	}
	return d
}

func peersExportCount(t *testing.T) int {
	s := os.Getenv(peersExportsEnv)
	if s == "" {
		return peersExports
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= peersSpecCount || n > peersMaxExports {
		t.Fatalf("%s=%q: want a number from %d to %d", peersExportsEnv, s, peersSpecCount+1, peersMaxExports)
	}
	return n
}

func (r *peersRun) row(what, xcc, stock string) { r.rows = append(r.rows, [3]string{what, xcc, stock}) }

// fill exports r.n Services in all: the specification's two (web,
// ClusterSetIP; db, headless with named pods) from cluster-a and r.n-2
// more (one in ten headless) from cluster-a and cluster-b in turn (to
// 1,958 imports neither passes the controller's default limit of
// exports per member); then waits until cluster-b holds every import.
// It returns when it wrote last (the ClusterSet, after the exports).
func (r *peersRun) fill() time.Time {
	t, ctx := r.t, r.ctx
	bC, err := newBenchClients(theLab.Workload(lab.ClusterB))
	if err != nil {
		t.Fatal(err)
	}
	r.bC = bC
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		if err := lab.EnsureNamespace(ctx, theLab.Workload(c), peersNamespace); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	err = inParallel(r.n-peersSpecCount, func(i int) error {
		m := r.fillMember(i)
		s := peersFillService(i)
		if err := m.createService(ctx, s); err != nil {
			return err
		}
		return m.export(ctx, peersNamespace, s.Name)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range peersSpecServices() {
		if err := r.aC.createService(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := r.aC.export(ctx, peersNamespace, s.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, theLab.Management, lab.ClusterSetGVR, lab.ClusterSetYAML(peersSet)); err != nil {
		t.Fatal(err)
	}
	lastWrite := time.Now()
	if err := r.waitImports(r.n); err != nil {
		t.Fatal(err)
	}
	r.notes = append(r.notes, fmt.Sprintf("%d imports, one in ten headless, exported from cluster-a and cluster-b, written in %s, all held by cluster-b %s after the first export",
		r.n, lastWrite.Sub(began).Round(time.Second), time.Since(began).Round(time.Second)))
	return lastWrite
}

// fillMember is the member fill export i is made in.
func (r *peersRun) fillMember(i int) benchClients {
	if i%2 == 0 {
		return r.aC
	}
	return r.bC
}

func fillName(i int) string { return fmt.Sprintf("f-%05d", i) }

// peersFillService is fill export i: benchService's shape, one in
// mcsHeadlessEvery headless, with its two addresses from
// peersFillAddress, since benchService's run out before 10,000.
func peersFillService(i int) lab.ExportedService {
	s := benchService(peersNamespace, fillName(i), i%mcsHeadlessEvery == 0, i)
	for p := range s.Pods {
		s.Pods[p].Address = peersFillAddress(i, p)
	}
	return s
}

// peersFillAddress is address p of fill export i: 120 exports of two
// addresses per /24 from 198.19.0.0 (RFC 2544), 198.19.0.0 to
// 198.19.83.255 at 10,000, below the specification's (198.19.250.0/24)
// and the timed exports' (198.19.255.0/24).
func peersFillAddress(i, p int) string {
	return fmt.Sprintf("198.19.%d.%d", i/120, (i%120)*2+p+1)
}

// waitImports waits until cluster-b holds want ServiceImports in the
// namespace, each ClusterSetIP one with its address.
func (r *peersRun) waitImports(want int) error {
	b := theLab.Workload(lab.ClusterB)
	bound := peersFillBound(want)
	deadline := time.Now().Add(bound)
	for {
		l, err := b.Dynamic.Resource(lab.ServiceImportGVR).Namespace(peersNamespace).List(r.ctx, metav1.ListOptions{})
		held := 0
		if err == nil {
			for _, u := range l.Items {
				if importHeld(u) {
					held++
				}
			}
		}
		if held >= want {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("cluster-b holds %d of %d imports after %s: %w", held, want, bound, err)
			}
			return fmt.Errorf("cluster-b holds %d of %d imports after %s", held, want, bound)
		}
		time.Sleep(2 * time.Second)
	}
}

func importHeld(u unstructured.Unstructured) bool {
	typ, _, _ := unstructured.NestedString(u.Object, "spec", "type")
	ips, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "ips")
	return typ == "Headless" || len(ips) > 0
}

// startServers starts stock CoreDNS twice (with kubeadm's cache 30 and
// without) and our CoreDNS once more without cache, beside cluster-b's
// serve and our cached CoreDNS.
func (r *peersRun) startServers() {
	t, ctx, b := r.t, r.ctx, theLab.Workload(lab.ClusterB)
	var err error
	if r.stockCached, err = theLab.StartStockMCSDNS(ctx, b, "stock-coredns-cached-"+b.Name, true); err != nil {
		t.Fatal(err)
	}
	if r.stockPlain, err = theLab.StartStockMCSDNS(ctx, b, "stock-coredns-nocache-"+b.Name, false); err != nil {
		t.Fatal(err)
	}
	if r.xccPlain, err = r.d.StartUncachedXCCDNS(ctx); err != nil {
		t.Fatal(err)
	}
	d := r.d
	r.xccC = peerServer{"xcc-dns", d.XCCDNSAddr, func() map[string]int {
		return map[string]int{"serve": d.Serve.Pid(), "CoreDNS": d.XCCDNS.Pid()}
	}}
	r.xccU = peerServer{"xcc-dns, no cache", r.xccPlain.Addr, func() map[string]int {
		return map[string]int{"serve": d.Serve.Pid(), "CoreDNS": r.xccPlain.Proc.Pid()}
	}}
	r.stockC = peerServer{"stock CoreDNS", r.stockCached.Addr, func() map[string]int {
		return map[string]int{"CoreDNS": r.stockCached.Proc.Pid()}
	}}
	r.stockU = peerServer{"stock CoreDNS, no cache", r.stockPlain.Addr, func() map[string]int {
		return map[string]int{"CoreDNS": r.stockPlain.Proc.Pid()}
	}}
	if v := os.Getenv(lab.StockTTLEnv); v != "" {
		r.notes = append(r.notes, fmt.Sprintf("stock CoreDNS answers with ttl %s (%s), not kubeadm's 30", v, lab.StockTTLEnv))
	}
}

func (r *peersRun) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), peersScaled(peersCleanupTimeout, r.n))
	defer cancel()
	for _, s := range []*lab.StockMCSDNS{r.stockCached, r.stockPlain} {
		if s != nil {
			s.Stop()
		}
	}
	if r.xccPlain != nil {
		r.xccPlain.Stop()
	}
	if err := lab.DeleteClusterSet(ctx, theLab.Management, lab.ClusterNamespace, peersSet); err != nil {
		r.t.Error(err)
	}
	namesA := []string{"web", "db"}
	var namesB []string
	for i := range r.n - peersSpecCount {
		if i%2 == 0 {
			namesA = append(namesA, fillName(i))
		} else {
			namesB = append(namesB, fillName(i))
		}
	}
	for i := range peersLatencyRounds {
		namesA = append(namesA, latencyName(i))
	}
	if err := deleteBenchExports(ctx, r.aC, peersNamespace, namesA); err != nil {
		r.t.Error(err)
	}
	if r.bC.kube != nil {
		if err := deleteBenchExports(ctx, r.bC, peersNamespace, namesB); err != nil {
			r.t.Error(err)
		}
	}
}

// perf drives each server with dnsperf: every import's A name and one
// name in peersNXEvery that does not exist, in a fixed shuffled order;
// cached servers warmed with one pass first. Rounds alternate servers.
func (r *peersRun) perf() {
	t := r.t
	file := filepath.Join(theLab.Dir, "peers-queries.txt")
	if err := os.WriteFile(file, []byte(peersQueries(r.n-peersSpecCount)), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := []peerServer{r.xccC, r.stockC, r.xccU, r.stockU} // pairs: cached, uncached
	for _, s := range []peerServer{r.xccC, r.stockC} {
		if _, err := lab.Dnsperf(r.ctx, s.addr, file, 0, peersPerfClients); err != nil {
			t.Fatal(err)
		}
	}
	results := make([][]lab.PerfResult, len(servers))
	cpu := make([][]float64, len(servers)) // µs of CPU per answer
	for range peersPerfRounds {
		for i, s := range servers {
			before := r.cpuOf(s)
			res, err := lab.Dnsperf(r.ctx, s.addr, file, peersPerfSeconds, peersPerfClients)
			if err != nil {
				t.Fatal(err)
			}
			results[i] = append(results[i], res)
			cpu[i] = append(cpu[i], float64((r.cpuOf(s)-before).Microseconds())/float64(answers(res)))
		}
	}
	perfCell := func(i int) string {
		p := medianQPS(results[i])
		slices.Sort(cpu[i])
		return fmt.Sprintf("%s q/s, p50 %s, p99 %s ms, CPU %.0f µs/answer (NXDOMAIN %s)",
			thousands(p.QPS), msF(p.P50), msF(p.P99), cpu[i][len(cpu[i])/2], share(p, "NXDOMAIN"))
	}
	for k, what := range []string{"cached (cache 30 for stock)", "no cache"} {
		r.row(fmt.Sprintf("dnsperf, %s, median of %d x %d s; xcc-dns / stock q/s, median of paired rounds (range)", what, peersPerfRounds, peersPerfSeconds),
			perfCell(2*k)+", "+pairedRatio(results[2*k], results[2*k+1]), perfCell(2*k+1))
	}
}

// cpuOf is the CPU time the server's processes have used so far.
func (r *peersRun) cpuOf(s peerServer) time.Duration {
	var total time.Duration
	for _, pid := range s.procs() {
		d, err := procCPU(pid)
		if err != nil {
			r.t.Fatal(err)
		}
		total += d
	}
	return total
}

func answers(p lab.PerfResult) int {
	n := 0
	for _, c := range p.Rcodes {
		n += c
	}
	return max(n, 1)
}

// medianQPS is the run of median q/s.
func medianQPS(runs []lab.PerfResult) lab.PerfResult {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b lab.PerfResult) int { return cmp.Compare(a.QPS, b.QPS) })
	return sorted[len(sorted)/2]
}

// pairedRatio is the median of x's q/s over y's in the same round, with
// the lowest and highest: the machine's speed drifts between rounds more
// than between two servers of one round.
func pairedRatio(x, y []lab.PerfResult) string {
	ratios := make([]float64, len(x))
	for i := range x {
		ratios[i] = x[i].QPS / y[i].QPS
	}
	slices.Sort(ratios)
	return fmt.Sprintf("x%.2f (%.2f-%.2f)", ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
}

// peersQueries is the dnsperf query list of n imports.
func peersQueries(n int) string {
	var lines []string
	for i := range n {
		lines = append(lines, lab.ClusterSetHost(peersNamespace, fillName(i))+" A")
		if i%peersNXEvery == 0 {
			lines = append(lines, lab.ClusterSetHost(peersNamespace, fmt.Sprintf("nx-%05d", i))+" A")
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return strings.Join(lines, "\n") + "\n"
}

func thousands(f float64) string {
	s := strconv.Itoa(int(f + 0.5))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func msF(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64)
}

func share(p lab.PerfResult, rcode string) string {
	total := 0
	for _, n := range p.Rcodes {
		total += n
	}
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(p.Rcodes[rcode])/float64(total))
}

// memory reads the resident memory of each server's processes.
func (r *peersRun) memory() {
	cell := func(s peerServer) string {
		var parts []string
		var total int64
		names := make([]string, 0)
		pids := s.procs()
		for n := range pids {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range slices.Backward(names) { // serve first
			rss, err := procRSS(pids[n])
			if err != nil {
				r.t.Fatal(err)
			}
			total += rss
			parts = append(parts, fmt.Sprintf("%s %.0f", n, mib(rss)))
		}
		if len(parts) == 1 {
			return fmt.Sprintf("%.0f MiB", mib(total))
		}
		return fmt.Sprintf("%.0f MiB (%s)", mib(total), strings.Join(parts, " + "))
	}
	r.row("resident memory after dnsperf, cached", cell(r.xccC), cell(r.stockC))
	r.row("resident memory after dnsperf, no cache", cell(r.xccU), cell(r.stockU))
}
