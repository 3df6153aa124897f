// Package dnsworld starts the whole record path of one workload cluster in
// a test process: EndpointSlices in a fake API server, serve's syncer, a
// real embedded etcd, and stock CoreDNS answering from it.
package dnsworld

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/etcdserver"
	"github.com/xcc-dns/xcc-dns/internal/guard"
	"github.com/xcc-dns/xcc-dns/internal/serve"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// Zone is the zone the syncer publishes in unless Config.Zone says
// otherwise: the charts' default.
const Zone = "xcc.test"

// readyWithin bounds the wait for the syncer's first reconcile.
const readyWithin = 20 * time.Second

// Config says what world to start.
type Config struct {
	// Corefile is the text CoreDNS runs; its {$...} values are set by
	// Start (DNS_PORT 0, ETCD_ENDPOINT, HEALTH_PORT, READY_PORT,
	// METRICS_PORT, UPSTREAM, and the guard file of the zone, grants and
	// reverse CIDRs with XCC_GUARD and XCC_ZONE).
	Corefile string
	// Zone is serve's --domain; empty: Zone.
	Zone string
	// Directives is CoreDNS's plugin order; nil: coredns.Directives.
	Directives []string
	// Slices are in the fake API server when the syncer starts.
	Slices []*discoveryv1.EndpointSlice
	// ReverseCIDRs (comma-separated) get PTR records from serve.
	ReverseCIDRs string
	// Records are put into etcd before the syncer starts, key to value, as
	// an operator's `etcdctl put` would.
	Records map[string]string
	// Upstream is the address of {$UPSTREAM}; empty: a
	// testfixture.StartUpstream that knows no name.
	Upstream string
	// NameGrants are serve's --name-grants.
	NameGrants contract.Grants
	// RecordReads puts a testfixture.EtcdReads between CoreDNS and etcd:
	// World.Reads holds every key the etcd plugin reads.
	RecordReads bool
	// ClusterSetZone is serve's --clusterset-zone, and the guard file's
	// server block for it; empty: none.
	ClusterSetZone string
}

// World is a started record path. Everything stops when the test ends.
type World struct {
	DNS        *coredns.Server
	Etcd       *clientv3.Client
	EtcdServer *etcdserver.Server
	Kube       *fake.Clientset
	Syncer     *serve.Syncer
	// Reads is set with Config.RecordReads.
	Reads *testfixture.EtcdReads
}

// Start starts etcd, serve's syncer on a fake API holding c.Slices (and
// waits for its first reconcile), and CoreDNS with c.Corefile.
func Start(t testing.TB, c Config) *World {
	t.Helper()
	srv, cli := testfixture.StartEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for key, value := range c.Records {
		if _, err := cli.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	zone := c.Zone
	if zone == "" {
		zone = Zone
	}
	reverse, err := cidr.Parse(c.ReverseCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	var owned []string
	for _, p := range reverse {
		owned = append(owned, cidr.ReverseZone(p))
	}
	if c.ClusterSetZone != "" {
		owned = append(owned, c.ClusterSetZone)
	}

	kube := fake.NewClientset()
	for _, s := range c.Slices {
		if _, err := kube.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	syncer, factory := serve.New(serve.Config{
		Client: kube, Namespace: testfixture.SliceNamespace, Domain: zone,
		Store: store.New(cli, zone).WithNames(owned...), Metrics: serve.NewMetrics(prometheus.NewRegistry()),
		ReverseCIDRs: reverse, NameGrants: c.NameGrants, ClusterSetZone: c.ClusterSetZone,
	})
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	go func() {
		if err := syncer.Run(ctx); err != nil {
			t.Errorf("syncer: %v", err)
		}
	}()
	deadline := time.Now().Add(readyWithin)
	for !syncer.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("syncer not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}

	upstream := c.Upstream
	if upstream == "" {
		upstream = testfixture.StartUpstream(t, "upstream.invalid.", "192.0.2.1")
	}
	testfixture.GuardEnv(t, guard.Config{Zone: zone, Grants: c.NameGrants, ReverseCIDRs: reverse, ClusterSetZone: c.ClusterSetZone})
	t.Setenv("DNS_PORT", "0")
	endpoint := srv.Endpoints()[0]
	var reads *testfixture.EtcdReads
	if c.RecordReads {
		reads = testfixture.RecordEtcdReads(t, cli)
		endpoint = reads.Endpoint
	}
	t.Setenv("ETCD_ENDPOINT", endpoint)
	t.Setenv("HEALTH_PORT", testfixture.FreePort(t))
	t.Setenv("READY_PORT", testfixture.FreePort(t))
	t.Setenv("METRICS_PORT", testfixture.FreePort(t))
	t.Setenv("UPSTREAM", upstream)
	directives := c.Directives
	if directives == nil {
		directives = coredns.Directives
	}
	d, err := coredns.StartOrdered(directives, c.Corefile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	return &World{DNS: d, Etcd: cli, EtcdServer: srv, Kube: kube, Syncer: syncer, Reads: reads}
}

// Ask asks the world's CoreDNS over network ("udp" or "tcp"); see
// testfixture.Ask.
func (w *World) Ask(t testing.TB, network, name string, qtype uint16, bufsize uint16) *dns.Msg {
	t.Helper()
	addr := w.DNS.UDP
	if network == "tcp" {
		addr = w.DNS.TCP
	}
	return testfixture.Ask(t, network, addr, name, qtype, bufsize)
}
