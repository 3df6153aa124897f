// Command dnsbench measures the DNS server's throughput against a baseline
// in one run on one machine, and what an uncached query costs etcd.
//
// For each number of names it writes the records serve would write for that
// many gateways into a real embedded etcd, and the equivalent zone file, then
// drives three CoreDNS servers (bin/coredns) in turn with dnsperf, with the
// same query list (hits and about 10% NXDOMAIN):
//
//	a  the shipped Corefile (cache, the guard's rewrites and templates, etcd)
//	b  the same without cache
//	c  stock `file` + the same `cache`, one wildcard record per gateway
//
// and prints queries per second, average and p99 latency, and the ratios
// a/c and b/c. It then counts the etcd Range requests that one positive and
// one NXDOMAIN answer cost with no cache, from etcd's own counter, and saves
// CPU profiles of the servers. The shipped Corefile imports the guard file,
// which dnsbench generates from the name grammar (internal/guard) as
// `xcc-syncer corefile` does in the chart.
//
// Last, with -hostile names in etcd (40,000 by default), it asks server b
// (-hostile-server) query names the guard refuses or answers NODATA before
// the etcd plugin ('/' and other bytes, the label any, names too deep or
// shallow, SRV where no SRV lives, upper case), one name per dnsperf run,
// round by round beside an NXDOMAIN for a valid-shaped name, and prints
// each one's q/s against that NXDOMAIN's and the etcd Range requests per
// query.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
)

// Defaults of the flags.
const (
	defaultNames    = "10,1000,10000"
	defaultSeconds  = 10
	defaultClients  = 4
	defaultRounds   = 7
	defaultNXShare  = 0.1
	defaultCoreDNS  = "bin/coredns"
	defaultCorefile = "charts/xcc-dns-workload/files/Corefile"
	defaultHostile  = 40000
	// Server b has no cache: every query of a name asked over and over
	// pays the guard, as a query for a name no cache holds does.
	defaultHostileServer = "b"
)

func main() {
	var (
		o     options
		names string
	)
	flag.StringVar(&names, "names", defaultNames, "comma-separated numbers of names (gateways) to serve")
	flag.IntVar(&o.seconds, "seconds", defaultSeconds, "seconds of each measured dnsperf run")
	flag.IntVar(&o.clients, "clients", defaultClients, "dnsperf clients (-c)")
	flag.IntVar(&o.rounds, "rounds", defaultRounds, "measured runs of each server at each size; the median is reported")
	flag.Float64Var(&o.nxShare, "nx", defaultNXShare, "share of queries for names that do not exist")
	flag.StringVar(&o.coredns, "coredns", defaultCoreDNS, "CoreDNS binary built from cmd/coredns")
	flag.StringVar(&o.corefile, "corefile", defaultCorefile, "the shipped Corefile")
	flag.IntVar(&o.hostile, "hostile", defaultHostile, "names (gateways) in etcd while the hostile query names are measured; 0 skips them")
	flag.StringVar(&o.hostileServer, "hostile-server", defaultHostileServer, "server the hostile query names are asked of (a, b or c)")
	flag.StringVar(&o.out, "out", "bin/bench", "directory for the report, query files and profiles")
	flag.Parse()

	sizes, err := parseSizes(names)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dnsbench:", err)
		os.Exit(2)
	}
	o.sizes = sizes
	if o.hostile < 0 {
		fmt.Fprintln(os.Stderr, "dnsbench: -hostile must not be negative")
		os.Exit(2)
	}
	if o.rounds < 1 || o.seconds < 1 {
		fmt.Fprintln(os.Stderr, "dnsbench: -rounds and -seconds must be at least 1")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dnsbench:", err)
		os.Exit(1)
	}
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-names %q: %q is not a positive number", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}
