package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StockCoreDNSVersion is the CoreDNS release kubeadm deploys with
// KubernetesVersion; the Makefile builds it from the Go module proxy
// (node-components) into bin/coredns-upstream-<version>.
const StockCoreDNSVersion = "v1.14.2"

// stockCache is the cache line of kubeadm's default Corefile.
const stockCache = "cache 30"

// StockMCSDNS is stock CoreDNS, unmodified, answering the clusterset zone
// as a user would run it instead of xcc-dns: the kubernetes plugin's
// `multicluster` option, which reads the ServiceImports and imported
// EndpointSlices of one cluster's API server (here the ones the
// controller writes).
type StockMCSDNS struct {
	Name string
	// Addr is its DNS address.
	Addr string
	Proc *Process

	conf, ready string
	l           *Lab
}

// StartStockMCSDNS starts stock CoreDNS for the clusterset zone of w,
// reading w's API server with w's admin kubeconfig; with cache, behind
// kubeadm's `cache 30`. It returns once CoreDNS says ready (its
// informers have synced).
func (l *Lab) StartStockMCSDNS(ctx context.Context, w *Cluster, name string, cache bool) (*StockMCSDNS, error) {
	ttl, err := stockTTLSetting()
	if err != nil {
		return nil, err
	}
	return l.startStock(ctx, w, name, 3, func(ports []int) (string, int, error) {
		text := StockMCSCorefile(StockSettings{DNS: ports[0], Ready: ports[1], Metrics: ports[2], TTL: ttl}, w.Kubeconfig, ClusterSetZone, cache)
		return text, ports[1], nil
	})
}

// StartStockClusterDNS starts stock CoreDNS on corefile, a Corefile as
// kube-system/coredns of w holds it (patched by patch-corefile, say),
// made the lab's as the cluster DNS's is: loopback, the lab's ports and
// upstream, and kubeconfig (a ServiceAccount's, so that it reads with
// that account's grants) in its kubernetes plugin.
func (l *Lab) StartStockClusterDNS(ctx context.Context, w *Cluster, name, corefile, kubeconfig string) (*StockMCSDNS, error) {
	return l.startStock(ctx, w, name, 4, func(ports []int) (string, int, error) {
		text, err := localCorefile(corefile, corefileEdit{
			DNSPort: ports[0], HealthPort: ports[1], ReadyPort: ports[2], MetricsPort: ports[3],
			Upstream: l.Upstream, Kubeconfig: kubeconfig,
		})
		if err != nil {
			return "", 0, fmt.Errorf("the Corefile of %s: %w", w.Name, err)
		}
		return text, ports[2], nil
	})
}

// startStock runs stock CoreDNS on the Corefile conf makes of n free
// ports (the first is DNS), ready when /ready on the port it names
// answers 200.
func (l *Lab) startStock(ctx context.Context, w *Cluster, name string, n int, conf func(ports []int) (text string, readyPort int, err error)) (*StockMCSDNS, error) {
	bin := l.Bin("coredns-upstream-" + StockCoreDNSVersion)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("stock CoreDNS %s not built (run make node-components): %w", StockCoreDNSVersion, err)
	}
	s := &StockMCSDNS{Name: name, conf: filepath.Join(l.Dir, w.Name, name+".Corefile"), l: l}
	err := l.startRetrying(ctx, name, n, func(ports []int) (*Process, func(context.Context) error, error) {
		text, ready, err := conf(ports)
		if err != nil {
			return nil, nil, err
		}
		s.Addr = fmt.Sprintf("%s:%d", loopback, ports[0])
		s.ready = fmt.Sprintf("http://%s:%d/ready", loopback, ready)
		if err := os.WriteFile(s.conf, []byte(text), 0o644); err != nil {
			return nil, nil, fmt.Errorf("write %s: %w", s.conf, err)
		}
		p, err := startProcess(l.LogDir, name, nil, bin, "-conf", s.conf)
		s.Proc = p
		return p, httpOK(s.ready), err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// StockMCSCorefile is the Corefile of StartStockMCSDNS: kubeadm's
// default Corefile for the plugins a clusterset query passes through
// (errors, kubernetes with its ttl, prometheus, cache 30, loadbalance),
// with the clusterset zone added to the kubernetes block and
// `multicluster` on, bound to the lab's loopback.
func StockMCSCorefile(p StockSettings, kubeconfig, zone string, cache bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster.local:%d %s:%d {\n", p.DNS, zone, p.DNS)
	fmt.Fprintf(&b, "    bind %s\n    errors\n    ready %s:%d\n", loopback, loopback, p.Ready)
	fmt.Fprintf(&b, "    kubernetes cluster.local %s {\n", zone)
	fmt.Fprintf(&b, "        kubeconfig %s\n        multicluster %s\n        ttl %d\n    }\n", kubeconfig, zone, p.TTL)
	fmt.Fprintf(&b, "    prometheus %s:%d\n", loopback, p.Metrics)
	if cache {
		fmt.Fprintf(&b, "    %s\n", stockCache)
	}
	b.WriteString("    loadbalance\n}\n")
	return b.String()
}

// StockSettings are the ports of a StockMCSDNS and its records' TTL.
type StockSettings struct{ DNS, Ready, Metrics, TTL int }

// StockTTLEnv sets the TTL of the stock server's answers (default
// kubeadm's, stockTTL); 5 is that of our clusterset records, which tells
// the TTL's share of a difference between the cached servers.
const StockTTLEnv = "XCC_BENCH_PEERS_STOCK_TTL"

// stockTTL is the kubernetes plugin's ttl in kubeadm's Corefile.
const stockTTL = 30

func stockTTLSetting() (int, error) {
	v := os.Getenv(StockTTLEnv)
	if v == "" {
		return stockTTL, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 3600 {
		return 0, fmt.Errorf("%s=%q: want seconds from 0 to 3600 (the kubernetes plugin's range)", StockTTLEnv, v)
	}
	return n, nil
}

// Restart stops the server and starts it again on the same ports, without
// waiting for its readiness (which needs its API server): the caller
// asks it what it answers.
func (s *StockMCSDNS) Restart() error {
	s.Proc.Stop()
	p, err := startProcess(s.l.LogDir, s.Name, nil, s.l.Bin("coredns-upstream-"+StockCoreDNSVersion), "-conf", s.conf)
	if err != nil {
		return err
	}
	s.l.procs.add(p)
	s.Proc = p
	return nil
}

// Stop stops the server.
func (s *StockMCSDNS) Stop() { s.Proc.Stop() }

// UncachedXCCDNS is one more CoreDNS of ours beside a workload cluster's
// serve: the chart's Corefile and guard with every `cache` block taken
// out, reading the same etcd, so that each answer is the etcd plugin's.
type UncachedXCCDNS struct {
	Addr string
	Proc *Process

	env  []string
	conf string
	d    *WorkloadDNS
}

// StartUncachedXCCDNS starts it and returns once it is ready.
func (d *WorkloadDNS) StartUncachedXCCDNS(ctx context.Context) (*UncachedXCCDNS, error) {
	l := d.l
	dir := filepath.Join(l.Dir, d.Cluster.Name)
	u := &UncachedXCCDNS{conf: filepath.Join(dir, "xcc-dns-nocache.Corefile"), d: d}
	guard := filepath.Join(dir, "xcc-dns-nocache.guard")
	for src, dst := range map[string]string{d.xccConf: u.conf, envValue(d.xccEnv, "XCC_GUARD"): guard} {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", src, err)
		}
		if err := os.WriteFile(dst, []byte(WithoutCache(string(b))), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", dst, err)
		}
	}
	name := "xcc-dns-coredns-nocache-" + d.Cluster.Name
	err := l.startRetrying(ctx, name, 4, func(ports []int) (*Process, func(context.Context) error, error) {
		u.Addr = fmt.Sprintf("%s:%d", loopback, ports[0])
		u.env = replaceEnv(d.xccEnv, map[string]string{
			"DNS_PORT":     strconv.Itoa(ports[0]),
			"HEALTH_PORT":  strconv.Itoa(ports[1]),
			"READY_PORT":   strconv.Itoa(ports[2]),
			"METRICS_PORT": strconv.Itoa(ports[3]),
			"XCC_GUARD":    guard,
		})
		p, err := startProcess(l.LogDir, name, u.env, l.CoreDNSBin(), xccDNSArgs(u.conf)...)
		u.Proc = p
		return p, httpOK(readyURL(u.env)), err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// Restart stops it and starts it again on the same ports, without
// waiting for its readiness.
func (u *UncachedXCCDNS) Restart() error {
	u.Proc.Stop()
	l := u.d.l
	p, err := startProcess(l.LogDir, "xcc-dns-coredns-nocache-"+u.d.Cluster.Name, u.env, l.CoreDNSBin(), xccDNSArgs(u.conf)...)
	if err != nil {
		return err
	}
	l.procs.add(p)
	u.Proc = p
	return nil
}

// Stop stops it.
func (u *UncachedXCCDNS) Stop() { u.Proc.Stop() }

// RestartXCCNoWait restarts the lab's own serve and CoreDNS of the
// cluster, without waiting for serve's readiness (which needs the API
// server): serve on its etcd data, then CoreDNS.
func (d *WorkloadDNS) RestartXCCNoWait() error {
	r := d.Primary()
	r.Stop(false)
	if err := r.StartServe(context.Background(), false); err != nil {
		return err
	}
	l := d.l
	p, err := startProcess(l.LogDir, "xcc-dns-coredns-"+d.Cluster.Name, d.xccEnv, l.CoreDNSBin(), xccDNSArgs(d.xccConf)...)
	if err != nil {
		return err
	}
	l.procs.add(p)
	d.XCCDNS = p
	return nil
}

// WithoutCache is a Corefile with every `cache` directive, and its block,
// taken out.
func WithoutCache(text string) string {
	var out []string
	depth := 0 // >0 while inside a cache block
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case depth > 0:
			depth += strings.Count(line, "{") - strings.Count(line, "}")
			continue
		case len(f) > 0 && f[0] == "cache":
			depth = strings.Count(line, "{") - strings.Count(line, "}")
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// envValue is the value of key in env ("KEY=value" entries).
func envValue(env []string, key string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, key+"="); ok {
			return v
		}
	}
	return ""
}
