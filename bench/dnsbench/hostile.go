package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// hostileQuery is one row of the hostile names: a query name, its type
// and the answer the guard gives it.
type hostileQuery struct {
	id    string // file name part
	what  string
	name  string // presentation format, as in dnsperf's query file
	qtype uint16
	rcode int // NXDOMAIN, or NOERROR for NODATA
}

// hostileBaseline is what every hostile row is measured against: a name
// of a valid shape that does not exist, which the etcd plugin answers
// NXDOMAIN after reading etcd.
var hostileBaseline = hostileQuery{
	id: "nxdomain", what: "valid shape, unknown gateway (NXDOMAIN from etcd)",
	name: "kuard.gateway.nosuch.dev-team.clusters." + zone + ".", qtype: dns.TypeA, rcode: dns.RcodeNameError,
}

// hostileQueries are names the guard refuses (NXDOMAIN) or answers NODATA
// before the etcd plugin: each would otherwise make the plugin read a
// part of the tree, a key nobody publishes, or list the keys below a
// name. An empty label is not among them: a zero-length label ends a name
// on the wire, so no query can hold one (dnsperf refuses such a line).
var hostileQueries = []hostileQuery{
	{"slash-apex", "'/' as the label below the apex (\\047.xcc.test on the wire)", `/.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"slash-gateways", "'/' as a label inside gateways.", `x./.dev-team.gateways.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"slash-in-cluster", "'/' (written \\047) inside a cluster's label", `kuard.gateway.c1\047x.dev-team.clusters.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"slash-below-gateway", "'/' ending the label below a gateway", `kuard/.gateway.c1.dev-team.clusters.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"slash-subtree", "'/' ending the subtree's label", `c1.dev-team.clusters/.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"deeper-api", "a label deeper than api.<cluster>", `x.api.c1.dev-team.clusters.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"deeper-name", "a label deeper than a claimed name", `x.shop.dev-team.names.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"shallower-srv", "an SRV name a label shallower", `_pg._tcp.dev-team.services.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"leaf-key", "a record leaf's key name (_<hash>) below a gateway", `_0a1b2c3d.gateway.c1.dev-team.clusters.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"any-label", "the etcd plugin's wildcard label any", `x.any.clusters.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"star-label", "a label *", `*.dev-team.names.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"utf8", "UTF-8 bytes (café)", `caf\195\169.dev-team.names.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"nul", "a NUL byte in a cluster's label", `c\0001.dev-team.clusters.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"escaped-dot", "an escaped dot in a label", `a\.b.dev-team.names.xcc.test.`, dns.TypeA, dns.RcodeNameError},
	{"srv-gateway", "SRV of a gateway's name (NODATA)", `kuard.gateway.c1.dev-team.clusters.xcc.test.`, dns.TypeSRV, dns.RcodeSuccess},
	{"srv-headless", "SRV of a headless name (NODATA)", `db.dev-team.services.xcc.test.`, dns.TypeSRV, dns.RcodeSuccess},
	{"upper-slash-apex", "upper case: /.XCC.TEST", `/.XCC.TEST.`, dns.TypeA, dns.RcodeNameError},
	{"upper-slash-gateways", "upper case: X./.DEV-TEAM.GATEWAYS...", `X./.DEV-TEAM.GATEWAYS.XCC.TEST.`, dns.TypeA, dns.RcodeNameError},
	{"upper-deeper-api", "upper case: X.API.C1.DEV-TEAM.CLUSTERS...", `X.API.C1.DEV-TEAM.CLUSTERS.XCC.TEST.`, dns.TypeA, dns.RcodeNameError},
	{"upper-srv-gateway", "upper case: SRV of KUARD.GATEWAY.C1... (NODATA)", `KUARD.GATEWAY.C1.DEV-TEAM.CLUSTERS.XCC.TEST.`, dns.TypeSRV, dns.RcodeSuccess},
}

// readsEtcd is what the name grammar says of q: whether the guard lets it
// on to the etcd plugin. The baseline must, every hostile query must not.
func (q hostileQuery) readsEtcd() (bool, error) {
	// The grammar takes names as miekg/dns prints them off the wire, in
	// lower case.
	m := new(dns.Msg)
	m.SetQuestion(q.name, q.qtype)
	wire, err := m.Pack()
	if err != nil {
		return false, fmt.Errorf("%s: %w", q.name, err)
	}
	if err := m.Unpack(wire); err != nil {
		return false, fmt.Errorf("%s: %w", q.name, err)
	}
	v := contract.ClassifyQuery(strings.ToLower(m.Question[0].Name), zone, contract.Shapes(zone, contract.Grants{}))
	return v.ReadsEtcd(dns.TypeToString[q.qtype]), nil
}

func (q hostileQuery) line() string {
	return fmt.Sprintf("%s %s\n", q.name, dns.TypeToString[q.qtype])
}

// hostileRow is one hostile query's figures on the server asked.
type hostileRow struct {
	query hostileQuery
	result
	// vsNX is the median over the rounds of this row's q/s over the
	// baseline's in the same round; low and high the extremes.
	vsNX, low, high float64
	// ranges is etcd Range requests per query, asked one at a time.
	ranges float64
	// runRanges is the Range requests etcd served while this row's
	// measured dnsperf runs lasted, of answers in all: every one of
	// etcd's, its periodic compaction's too.
	runRanges, answers int
}

// measureHostile asks server c, with d's gateways in etcd, the baseline
// and every hostile query: first costQueries of each one at a time,
// counting etcd's Range requests, then dnsperf rounds over the rows in
// turn on the same server.
func measureHostile(ctx context.Context, o options, dir string, c config, d dataset, etcdURL, zoneFile string, w io.Writer) ([]hostileRow, error) {
	queries := append([]hostileQuery{hostileBaseline}, hostileQueries...)
	for i, q := range queries {
		reads, err := q.readsEtcd()
		if err != nil {
			return nil, err
		}
		if reads != (i == 0) {
			return nil, fmt.Errorf("%s %s: the name grammar says reads etcd = %t", q.name, dns.TypeToString[q.qtype], reads)
		}
	}
	s, err := startServer(ctx, o, dir, c, etcdURL, zoneFile)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if err := s.check(d); err != nil {
		return nil, fmt.Errorf("server %s, %d names: %w", c.id, d.names, err)
	}
	rows := make([]hostileRow, len(queries))
	files := make([]string, len(queries))
	for i, q := range queries {
		rows[i].query = q
		r, err := askType(s.addr, q.name, q.qtype)
		if err != nil {
			return nil, err
		}
		if r.Rcode != q.rcode || len(r.Answer) != 0 {
			return nil, fmt.Errorf("%s %s: want %s without answer, got %s %v", q.name, dns.TypeToString[q.qtype], dns.RcodeToString[q.rcode], dns.RcodeToString[r.Rcode], r.Answer)
		}
		before, err := counter(rangeMetric)
		if err != nil {
			return nil, err
		}
		for range costQueries {
			if _, err := askType(s.addr, q.name, q.qtype); err != nil {
				return nil, err
			}
		}
		after, err := counter(rangeMetric)
		if err != nil {
			return nil, err
		}
		rows[i].ranges = (after - before) / costQueries
		files[i] = filepath.Join(o.out, "hostile-"+q.id+".txt")
		if err := writeFile(files[i], q.line()); err != nil {
			return nil, err
		}
	}
	runs := make([][]result, len(queries))
	ranges := make([]float64, len(queries))
	answers := make([]int, len(queries))
	for round := range o.rounds {
		for i, q := range queries {
			r, n, err := hostileRun(ctx, o, s, files[i], q)
			if err != nil {
				return nil, fmt.Errorf("server %s, %s: %w", c.id, q.id, err)
			}
			fmt.Fprintf(w, "  round %d  %-20s %8.0f q/s  avg %6.3f ms  p99 %6.3f ms  CPU µs/query: CoreDNS %5.1f etcd %5.1f  Range %d\n",
				round+1, q.id, r.qps, ms(r.avg), ms(r.p99), r.corednsCPU, r.etcdCPU, int(n))
			runs[i] = append(runs[i], r)
			ranges[i] += n
			answers[i] += r.completed
		}
	}
	for i := range rows {
		rows[i].result = median(runs[i])
		rows[i].vsNX, rows[i].low, rows[i].high = pairedRatio(runs[i], runs[0])
		rows[i].runRanges, rows[i].answers = int(ranges[i]), answers[i]
	}
	return rows, nil
}

// hostileRun is one measured dnsperf run of one hostile query on s; it
// returns the run and the etcd Range requests served during it.
func hostileRun(ctx context.Context, o options, s *server, queries string, q hostileQuery) (result, float64, error) {
	cpu0, err := s.cpu()
	if err != nil {
		return result{}, 0, err
	}
	etcd0 := selfCPU()
	ranges0, err := counter(rangeMetric)
	if err != nil {
		return result{}, 0, err
	}
	r, err := dnsperf(ctx, s.addr, queries, o.seconds, o.clients)
	if err != nil {
		return result{}, 0, err
	}
	ranges1, err := counter(rangeMetric)
	if err != nil {
		return result{}, 0, err
	}
	cpu1, err := s.cpu()
	if err != nil {
		return result{}, 0, err
	}
	if r.completed > 0 {
		per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(r.completed) }
		r.corednsCPU, r.etcdCPU = per(cpu1-cpu0), per(selfCPU()-etcd0)
	}
	if r.lost > r.completed/100 {
		return result{}, 0, fmt.Errorf("%d of %d queries lost", r.lost, r.completed+r.lost)
	}
	if got := r.share(dns.RcodeToString[q.rcode]); got < 0.99 {
		return result{}, 0, fmt.Errorf("%.1f%% %s answers, want all (%v)", got*100, dns.RcodeToString[q.rcode], r.rcodes)
	}
	return r, ranges1 - ranges0, nil
}

// hostileTable lays out the hostile rows, the baseline first.
func hostileTable(rows []hostileRow, names, records int, c config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Hostile query names, server %s (%s), %d names (%d records) in etcd; each row asks one name over and over\n", c.id, c.what, names, records)
	fmt.Fprintf(&b, "%-22s  %-4s  %-8s  %9s  %8s  %8s  %7s  %6s  %6s  %11s  %7s  %19s  %s\n",
		"row", "type", "rcode", "q/s", "avg ms", "p99 ms", "CoreDNS", "etcd", "vs NX", "rounds", "Range/q", "run Range / answers", "query")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-22s  %-4s  %-8s  %9.0f  %8.3f  %8.3f  %7.1f  %6.1f  %6.2f  %5.2f-%4.2f  %7.2f  %19s  %s\n",
			r.query.id, dns.TypeToString[r.query.qtype], dns.RcodeToString[r.query.rcode], r.qps, ms(r.avg), ms(r.p99),
			r.corednsCPU, r.etcdCPU, r.vsNX, r.low, r.high, r.ranges, fmt.Sprintf("%d / %d", r.runRanges, r.answers), r.query.name)
	}
	b.WriteString("CoreDNS, etcd: CPU µs per answered query; vs NX: median over the rounds of q/s over the nxdomain row's in the same round;\n")
	fmt.Fprintf(&b, "rounds: the lowest and highest of those ratios; Range/q: etcd Range requests per query over %d asked one at a time;\n", costQueries)
	b.WriteString("run Range / answers: etcd Range requests served while the row's measured dnsperf runs lasted (etcd's own too:\n")
	b.WriteString("its periodic compaction counts one about every 5 minutes), and the answers of those runs\n")
	// A hostile query that reads etcd at all reads it at every ask.
	if bad := slices.IndexFunc(rows[1:], func(r hostileRow) bool { return r.ranges != 0 || r.runRanges*1000 > r.answers }); bad >= 0 {
		fmt.Fprintf(&b, "NOTE: %s read etcd\n", rows[1+bad].query.id)
	}
	return b.String()
}
