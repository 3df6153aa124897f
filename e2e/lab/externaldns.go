package lab

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.etcd.io/etcd/server/v3/embed"
)

// ExternalDNSVersion is the ExternalDNS release the Makefile builds into
// bin/external-dns-<version>: the newest that builds from the Go module
// proxy.
const ExternalDNSVersion = "v0.16.1"

// ExternalDNSZone is the zone the ExternalDNS instances publish into and
// the stock CoreDNS beside them serves.
const ExternalDNSZone = "edns.test"

// ExternalDNSHostnameAnnotation is the Service annotation ExternalDNS
// publishes a name from.
const ExternalDNSHostnameAnnotation = "external-dns.alpha.kubernetes.io/hostname"

// ExternalDNSEventSync is the --min-event-sync-interval the instances run
// with: shorter than the 5 s its controller waits after any event anyway
// (ScheduleRunOnce), so the event path is as fast as the release allows.
const ExternalDNSEventSync = "1s"

// ExternalDNS is ExternalDNS set up as a user would for names across
// clusters: one instance per workload cluster (`--source=service`,
// `--provider=coredns`, TXT registry with the cluster as owner, events
// on), all writing SkyDNS records into one shared etcd, which stock
// CoreDNS serves with its `etcd` plugin, without cache.
type ExternalDNS struct {
	// DNSAddr is the stock CoreDNS's DNS address.
	DNSAddr string
	DNS     *Process

	etcdURL string
	etcd    *embed.Etcd
	l       *Lab
	mu      sync.Mutex
	procs   map[string]*Process // by owner
}

// StartExternalDNS starts the shared etcd and the stock CoreDNS that
// serves it; instances are started with Publish.
func (l *Lab) StartExternalDNS(ctx context.Context) (*ExternalDNS, error) {
	bin := l.Bin("coredns-upstream-" + StockCoreDNSVersion)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("stock CoreDNS %s not built (run make node-components): %w", StockCoreDNSVersion, err)
	}
	if _, err := os.Stat(l.Bin("external-dns-" + ExternalDNSVersion)); err != nil {
		return nil, fmt.Errorf("ExternalDNS %s not built (make bench-peers builds it): %w", ExternalDNSVersion, err)
	}
	dir := filepath.Join(l.Dir, "externaldns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", dir, err)
	}
	e, url, err := startEtcdAs("externaldns", dir, filepath.Join(l.LogDir, "externaldns-etcd.log"))
	if err != nil {
		return nil, fmt.Errorf("etcd of ExternalDNS: %w", err)
	}
	x := &ExternalDNS{etcdURL: url, etcd: e, l: l, procs: map[string]*Process{}}
	conf := filepath.Join(dir, "Corefile")
	err = l.startRetrying(ctx, "externaldns-coredns", 2, func(ports []int) (*Process, func(context.Context) error, error) {
		x.DNSAddr = fmt.Sprintf("%s:%d", loopback, ports[0])
		if err := os.WriteFile(conf, []byte(ExternalDNSCorefile(ports[0], ports[1], url)), 0o644); err != nil {
			return nil, nil, fmt.Errorf("write %s: %w", conf, err)
		}
		p, err := startProcess(l.LogDir, "externaldns-coredns", nil, bin, "-conf", conf)
		x.DNS = p
		return p, httpOK(fmt.Sprintf("http://%s:%d/ready", loopback, ports[1])), err
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	return x, nil
}

// ExternalDNSCorefile is the stock CoreDNS's Corefile: the zone from the
// shared etcd, no cache, so every answer is what etcd holds.
func ExternalDNSCorefile(dnsPort, readyPort int, etcdURL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d {\n    bind %s\n    errors\n    ready %s:%d\n", ExternalDNSZone, dnsPort, loopback, loopback, readyPort)
	fmt.Fprintf(&b, "    etcd %s {\n        path /skydns\n        endpoint %s\n    }\n}\n", ExternalDNSZone, etcdURL)
	return b.String()
}

// Publish starts an ExternalDNS instance reading w's API server with its
// admin kubeconfig, owner as its TXT owner id, and returns once its
// health endpoint answers.
func (x *ExternalDNS) Publish(ctx context.Context, w *Cluster, owner string) (*Process, error) {
	name := "externaldns-" + owner
	var proc *Process
	err := x.l.startRetrying(ctx, name, 1, func(ports []int) (*Process, func(context.Context) error, error) {
		addr := fmt.Sprintf("%s:%d", loopback, ports[0])
		p, err := startProcess(x.l.LogDir, name, []string{"ETCD_URLS=" + x.etcdURL}, x.l.Bin("external-dns-"+ExternalDNSVersion),
			"--source=service", "--provider=coredns", "--registry=txt", "--txt-owner-id="+owner,
			"--domain-filter="+ExternalDNSZone, "--events", "--min-event-sync-interval="+ExternalDNSEventSync,
			"--kubeconfig="+w.Kubeconfig, "--metrics-address="+addr)
		proc = p
		return p, httpOK("http://" + addr + "/healthz"), err
	})
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.procs[owner] = proc
	x.mu.Unlock()
	return proc, nil
}

// Publishers are the running instances by owner.
func (x *ExternalDNS) Publishers() map[string]*Process {
	x.mu.Lock()
	defer x.mu.Unlock()
	return maps.Clone(x.procs)
}

// StopPublisher stops the instance of owner.
func (x *ExternalDNS) StopPublisher(owner string) {
	x.mu.Lock()
	p := x.procs[owner]
	delete(x.procs, owner)
	x.mu.Unlock()
	if p != nil {
		p.Stop()
	}
}

// Stop stops every instance, the CoreDNS and the etcd.
func (x *ExternalDNS) Stop() {
	var wg sync.WaitGroup
	for owner := range x.Publishers() {
		wg.Go(func() { x.StopPublisher(owner) })
	}
	wg.Wait()
	if x.DNS != nil {
		x.DNS.Stop()
	}
	x.etcd.Close()
}
