package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xcc-dns/xcc-dns/internal/etcdserver"
	"github.com/xcc-dns/xcc-dns/internal/guard"
	"github.com/xcc-dns/xcc-dns/internal/store"
)

const (
	// costQueries is how many queries of each kind the etcd cost is
	// averaged over.
	costQueries = 200
	// rangeMetric is etcd's count of Range requests it served.
	rangeMetric = "etcd_mvcc_range_total"
)

type options struct {
	sizes            []int
	seconds, clients int
	rounds           int
	nxShare          float64
	coredns          string
	corefile         string
	out              string
	// hostile is the number of names of the hostile query rows (0: none);
	// hostileServer the server they are asked of.
	hostile       int
	hostileServer string
	// guardFile is the guard the shipped Corefile imports, written by run
	// as `xcc-syncer corefile` writes it.
	guardFile string
}

// row is one measured server at one size.
type row struct {
	names  int
	config config
	result
	// vsC is the median over the rounds of this server's q/s over c's in
	// the same round; low and high are the lowest and highest of them.
	vsC, low, high float64
}

func run(ctx context.Context, o options, w io.Writer) error {
	shipped, err := os.ReadFile(o.corefile)
	if err != nil {
		return fmt.Errorf("read the shipped Corefile: %w", err)
	}
	cfgs, err := configs(string(shipped))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", o.out, err)
	}
	dir, err := os.MkdirTemp("", "dnsbench-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	// The guard the shipped Corefile imports, generated from the name
	// grammar for the zone as `xcc-syncer corefile --domain` writes it.
	o.guardFile = filepath.Join(dir, "guard.conf")
	var g bytes.Buffer
	if err := guard.Write(&g, guard.Config{Zone: zone}); err != nil {
		return fmt.Errorf("guard file: %w", err)
	}
	if err := writeFile(o.guardFile, g.String()); err != nil {
		return err
	}

	etcd, cli, err := startEtcd(ctx, filepath.Join(dir, "etcd"))
	if err != nil {
		return err
	}
	defer etcd.Close()
	defer cli.Close()
	st := store.New(cli, zone)

	fmt.Fprintf(w, "dnsbench: %s; dnsperf -c %d, %d s per run after one warm-up pass over the names; %.0f%% NXDOMAIN names\n",
		machine(), o.clients, o.seconds, o.nxShare*100)
	var rows []row
	var cost etcdCost
	for i, n := range o.sizes {
		d := newDataset(n, o.nxShare)
		set, err := d.records()
		if err != nil {
			return err
		}
		start := time.Now()
		res, err := st.Reconcile(ctx, set)
		if err != nil {
			return fmt.Errorf("write %d names: %w", n, err)
		}
		fmt.Fprintf(w, "\n%d names: %d records written to etcd in %s (%d puts, %d deletes)\n",
			n, len(set), time.Since(start).Round(time.Millisecond), res.Puts, res.Deletes)
		zoneFile := filepath.Join(dir, fmt.Sprintf("zone-%d.db", n))
		if err := writeFile(zoneFile, d.zoneFile()); err != nil {
			return err
		}
		queries := filepath.Join(o.out, fmt.Sprintf("queries-%d.txt", n))
		if err := writeFile(queries, d.queryFile()); err != nil {
			return err
		}
		last := i == len(o.sizes)-1
		// Rounds go a, b, c, a, b, c, ... so a slow spell of a shared
		// machine falls on every server alike. Each server's median round
		// is reported, and its ratio to c is the median of its ratios to
		// c in the same round: a shared machine's speed drifts more from
		// round to round than from one server to the next.
		runs := map[string][]result{}
		for round := range o.rounds {
			for _, c := range cfgs {
				profile := last && round == o.rounds-1
				r, err := measure(ctx, o, dir, c, d, etcd.Endpoints()[0], zoneFile, queries, profile)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "  round %d  %s %-52s %8.0f q/s  avg %6.3f ms  p99 %6.3f ms  CPU µs/query: CoreDNS %5.1f etcd %5.1f\n",
					round+1, c.id, c.what, r.qps, ms(r.avg), ms(r.p99), r.corednsCPU, r.etcdCPU)
				runs[c.id] = append(runs[c.id], r)
			}
		}
		for _, c := range cfgs {
			r := row{names: n, config: c, result: median(runs[c.id])}
			r.vsC, r.low, r.high = pairedRatio(runs[c.id], runs["c"])
			rows = append(rows, r)
		}
		if last {
			if cost, err = measureCost(ctx, o, dir, cfgs[1], d, etcd.Endpoints()[0], zoneFile); err != nil {
				return err
			}
		}
	}
	report := table(rows) + "\n" + cost.String()
	if o.hostile > 0 {
		hostile, err := runHostile(ctx, o, dir, cfgs, st, etcd.Endpoints()[0], w)
		if err != nil {
			return err
		}
		report += "\n" + hostile
	}
	fmt.Fprintf(w, "\n%s", report)
	path := filepath.Join(o.out, "dnsbench.txt")
	header := fmt.Sprintf("%s\n%s\n\n", machine(), versions(o.coredns))
	return writeFile(path, header+report)
}

// runHostile writes o.hostile gateways into etcd and measures the hostile
// query names on server o.hostileServer; it returns their table.
func runHostile(ctx context.Context, o options, dir string, cfgs []config, st *store.Store, etcdURL string, w io.Writer) (string, error) {
	i := slices.IndexFunc(cfgs, func(c config) bool { return c.id == o.hostileServer })
	if i < 0 {
		return "", fmt.Errorf("-hostile-server %q: no such server", o.hostileServer)
	}
	d := newDataset(o.hostile, o.nxShare)
	set, err := d.records()
	if err != nil {
		return "", err
	}
	start := time.Now()
	res, err := st.Reconcile(ctx, set)
	if err != nil {
		return "", fmt.Errorf("write %d names: %w", o.hostile, err)
	}
	fmt.Fprintf(w, "\nhostile query names, server %s, %d names: %d records written to etcd in %s (%d puts, %d deletes)\n",
		cfgs[i].id, o.hostile, len(set), time.Since(start).Round(time.Millisecond), res.Puts, res.Deletes)
	zoneFile := filepath.Join(dir, fmt.Sprintf("zone-%d.db", o.hostile))
	if err := writeFile(zoneFile, d.zoneFile()); err != nil {
		return "", err
	}
	rows, err := measureHostile(ctx, o, dir, cfgs[i], d, etcdURL, zoneFile, w)
	if err != nil {
		return "", err
	}
	return hostileTable(rows, o.hostile, len(set), cfgs[i]), nil
}

// measure starts the server for c, checks its answers, warms it up and
// runs dnsperf; profile also saves a CPU profile of the measured run.
func measure(ctx context.Context, o options, dir string, c config, d dataset, etcdURL, zoneFile, queries string, profile bool) (result, error) {
	s, err := startServer(ctx, o, dir, c, etcdURL, zoneFile)
	if err != nil {
		return result{}, err
	}
	defer s.stop()
	if err := s.check(d); err != nil {
		return result{}, fmt.Errorf("server %s, %d names: %w", c.id, d.names, err)
	}
	// Warm up with one pass through the queries: every name is then in
	// the cache of a server that has one.
	if _, err := dnsperf(ctx, s.addr, queries, 0, o.clients); err != nil {
		return result{}, err
	}
	hits0, misses0, err := s.cacheCounts()
	if err != nil {
		return result{}, err
	}
	cpu0, err := s.cpu()
	if err != nil {
		return result{}, err
	}
	etcd0 := selfCPU()
	var saved chan error
	if profile {
		saved = make(chan error, 1)
		path := filepath.Join(o.out, fmt.Sprintf("profile-%s-%d.pb.gz", c.id, d.names))
		go func() { saved <- saveProfile(s.pprofAddr, max(1, o.seconds-2), path) }()
	}
	r, err := dnsperf(ctx, s.addr, queries, o.seconds, o.clients)
	if err != nil {
		return result{}, err
	}
	if saved != nil {
		if err := <-saved; err != nil {
			return result{}, err
		}
	}
	cpu1, err := s.cpu()
	if err != nil {
		return result{}, err
	}
	if r.completed > 0 {
		per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(r.completed) }
		r.corednsCPU, r.etcdCPU = per(cpu1-cpu0), per(selfCPU()-etcd0)
	}
	if r.peakRSS, err = s.peakRSS(); err != nil {
		return result{}, err
	}
	hits, misses, err := s.cacheCounts()
	if err != nil {
		return result{}, err
	}
	if n := (hits - hits0) + (misses - misses0); n > 0 {
		r.cacheHit = (hits - hits0) / n
	}
	if r.lost > r.completed/100 {
		return result{}, fmt.Errorf("server %s, %d names: %d of %d queries lost", c.id, d.names, r.lost, r.completed+r.lost)
	}
	if got, want := r.share("NXDOMAIN"), float64(len(d.misses))/float64(len(d.hits)+len(d.misses)); got < want/2 || got > want*2 {
		return result{}, fmt.Errorf("server %s, %d names: %.1f%% NXDOMAIN answers, want about %.1f%% (%v)", c.id, d.names, got*100, want*100, r.rcodes)
	}
	return r, nil
}

func saveProfile(addr string, seconds int, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds)
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	return os.WriteFile(path, b, 0o644)
}

// etcdCost is the etcd Range requests per uncached answer.
type etcdCost struct {
	names              int
	positive, nxdomain float64
}

func (c etcdCost) String() string {
	if c.names == 0 {
		return ""
	}
	return fmt.Sprintf("etcd Range requests per uncached answer (server b, %d names, %s over %d queries each): positive %.2f, NXDOMAIN %.2f\n",
		c.names, rangeMetric, costQueries, c.positive, c.nxdomain)
}

// measureCost asks server c (without cache) costQueries hits and then
// costQueries misses, one at a time, and reads how many Range requests
// etcd served for each kind from its own counter.
func measureCost(ctx context.Context, o options, dir string, c config, d dataset, etcdURL, zoneFile string) (etcdCost, error) {
	s, err := startServer(ctx, o, dir, c, etcdURL, zoneFile)
	if err != nil {
		return etcdCost{}, err
	}
	defer s.stop()
	per := func(names []string) (float64, error) {
		before, err := counter(rangeMetric)
		if err != nil {
			return 0, err
		}
		for i := range costQueries {
			if _, err := ask(s.addr, names[i%len(names)]); err != nil {
				return 0, err
			}
		}
		after, err := counter(rangeMetric)
		if err != nil {
			return 0, err
		}
		return (after - before) / costQueries, nil
	}
	cost := etcdCost{names: d.names}
	if cost.positive, err = per(d.hits); err != nil {
		return etcdCost{}, err
	}
	if cost.nxdomain, err = per(d.misses); err != nil {
		return etcdCost{}, err
	}
	return cost, nil
}

// counter reads a counter of the embedded etcd, which registers its
// metrics with the process's default Prometheus registry.
func counter(name string) (float64, error) {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return 0, fmt.Errorf("gather metrics: %w", err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("etcd metric %s not found", name)
}

func startEtcd(ctx context.Context, dir string) (*etcdserver.Server, *clientv3.Client, error) {
	srv, err := etcdserver.Start(ctx, etcdserver.Config{
		DataDir:   dir,
		ClientURL: "http://127.0.0.1:0",
		PeerURL:   "http://127.0.0.1:0",
		LogLevel:  "fatal", // etcd logs errors for connections it closes at exit
	})
	if err != nil {
		return nil, nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		srv.Close()
		return nil, nil, fmt.Errorf("etcd client: %w", err)
	}
	return srv, cli, nil
}

// median returns the run with the median rate.
func median(runs []result) result {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b result) int { return cmp.Compare(a.qps, b.qps) })
	return sorted[len(sorted)/2]
}

// pairedRatio returns the median, lowest and highest of x's q/s over
// base's, round by round.
func pairedRatio(x, base []result) (med, low, high float64) {
	ratios := make([]float64, len(x))
	for i := range x {
		ratios[i] = x[i].qps / base[i].qps
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1]
}

// selfCPU is the CPU time this process has used: almost all of it the
// embedded etcd's, which is what the etcd plugin's reads cost.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// table lays out the rows with the ratio of each server to the baseline c
// at the same size.
func table(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s  %-6s  %9s  %8s  %8s  %8s  %9s  %7s  %6s  %8s  %6s  %11s\n", "names", "server", "q/s", "avg ms", "p99 ms", "NXDOMAIN", "cache hit", "CoreDNS", "etcd", "peak MiB", "vs c", "rounds")
	for _, r := range rows {
		fmt.Fprintf(&b, "%7d  %-6s  %9.0f  %8.3f  %8.3f  %7.1f%%  %8.1f%%  %7.1f  %6.1f  %8.1f  %6.2f  %5.2f-%4.2f\n",
			r.names, r.config.id, r.qps, ms(r.avg), ms(r.p99), r.share("NXDOMAIN")*100, r.cacheHit*100, r.corednsCPU, r.etcdCPU, float64(r.peakRSS)/(1<<20), r.vsC, r.low, r.high)
	}
	b.WriteString("a: shipped Corefile; b: shipped Corefile without cache; c: file + the same cache, one wildcard record per gateway\n")
	b.WriteString("q/s to peak MiB: the median round by q/s; CoreDNS, etcd: their CPU µs per answered query; peak MiB: CoreDNS's;\n")
	b.WriteString("vs c: median over the rounds of q/s over c's q/s in the same round; rounds: the lowest and highest of those ratios\n")
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// machine describes where the figures were measured.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs (%s/%s), %s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
}

func versions(coredns string) string {
	out := []string{runtime.Version()}
	if b, err := exec.Command(coredns, "-version").Output(); err == nil {
		out = append(out, strings.Fields(string(b))[0])
	}
	if b, err := exec.Command(dnsperfBin, "-h").CombinedOutput(); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Version") {
				out = append(out, "dnsperf "+strings.TrimSpace(strings.TrimPrefix(l, "Version")))
			}
		}
	}
	return strings.Join(out, ", ")
}
