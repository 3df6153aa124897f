package serve_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/etcdserver"
	"github.com/xcc-dns/xcc-dns/internal/serve"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

func gatewaySlice() *discoveryv1.EndpointSlice {
	return testfixture.IPv4Slice("gw-a-ipv4", "*.gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")
}

// runServe runs the serve role until the test ends and returns the base
// URL of its HTTP server.
func runServe(t *testing.T, o serve.Options) string {
	t.Helper()
	addr := make(chan net.Addr, 1)
	o.HTTPAddress, o.HTTPReady = "127.0.0.1:0", func(a net.Addr) { addr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve.Run: %v", err)
		}
	})
	select {
	case a := <-addr:
		return "http://" + a.String()
	case err := <-done:
		t.Fatalf("serve.Run ended early: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start its HTTP server")
	}
	return ""
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := testfixture.HTTPGet(t, base+"/readyz")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunAgainstExternalEtcd runs serve with --etcd-endpoints pointing at
// an etcd started on its own: the records land there.
func TestRunAgainstExternalEtcd(t *testing.T) {
	srv, cli := testfixture.StartEtcd(t)
	kube := fake.NewClientset(gatewaySlice())
	base := runServe(t, serve.Options{
		Client: kube, Namespace: serve.DefaultNamespace, Domain: "xcc.test",
		EtcdEndpoints: strings.Join(srv.Endpoints(), ","),
	})
	waitReady(t, base)
	resp, err := cli.Get(context.Background(), "/skydns/test/xcc/clusters/dev-team/cluster-a/gateway/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), `"host":"192.0.2.10"`) {
		t.Fatalf("records in the external etcd: %v, %v", resp, err)
	}
	if code, body := testfixture.HTTPGet(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d %s", code, body)
	}
	code, body := testfixture.HTTPGet(t, base+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "xcc_serve_records 2") || !strings.Contains(body, "xcc_serve_reconcile_duration_seconds_count") {
		t.Fatalf("/metrics %d lacks the record gauge (1 leaf + 1 name record) or reconcile histogram:\n%s", code, body)
	}
}

// TestRunEmbeddedEtcd runs serve with the etcd it embeds: it turns ready
// only once that etcd is up and the first reconcile is done.
func TestRunEmbeddedEtcd(t *testing.T) {
	dir := t.TempDir()
	kube := fake.NewClientset(gatewaySlice())
	base := runServe(t, serve.Options{
		Client: kube, Namespace: serve.DefaultNamespace, Domain: "xcc.test",
		Etcd: etcdserver.Config{DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", LogLevel: "error"},
	})
	waitReady(t, base)
}

// A serve restarted while its API server is unreachable answers from the
// records its etcd holds on disk, and says so in /readyz; with an empty
// data directory it is not ready, having nothing to answer.
func TestRestartWithoutAPIServerServesFromDisk(t *testing.T) {
	dir := t.TempDir()
	etcdCfg := etcdserver.Config{DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", LogLevel: "error"}
	func() {
		ctx, cancel := context.WithCancel(context.Background())
		addr := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() {
			done <- serve.Run(ctx, serve.Options{Client: fake.NewClientset(gatewaySlice()), Namespace: serve.DefaultNamespace, Domain: "xcc.test",
				Etcd: etcdCfg, HTTPAddress: "127.0.0.1:0", HTTPReady: func(a net.Addr) { addr <- a }})
		}()
		waitReady(t, "http://"+(<-addr).String())
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()

	// An API server that refuses every connection.
	unreachable, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base := runServe(t, serve.Options{Client: unreachable, Namespace: serve.DefaultNamespace, Domain: "xcc.test", Etcd: etcdCfg})
	waitReady(t, base)
	if _, body := testfixture.HTTPGet(t, base+"/readyz"); !strings.Contains(body, "from disk") {
		t.Errorf("/readyz body %q does not say it serves from disk", body)
	}

	empty := etcdCfg
	empty.DataDir = t.TempDir()
	base = runServe(t, serve.Options{Client: unreachable, Namespace: serve.DefaultNamespace, Domain: "xcc.test", Etcd: empty})
	time.Sleep(2 * time.Second)
	if code, body := testfixture.HTTPGet(t, base+"/readyz"); code == http.StatusOK {
		t.Errorf("/readyz with nothing on disk and no API server: %d %s", code, body)
	}
}

// TestShutdownDelay: told to stop, serve says "shutting down" on /readyz
// at once, goes on running for the delay (with an embedded etcd, that etcd
// stays up for a CoreDNS in lameduck beside it), and only then ends.
func TestShutdownDelay(t *testing.T) {
	srv, _ := testfixture.StartEtcd(t)
	addr := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	const delay = 1500 * time.Millisecond
	go func() {
		done <- serve.Run(ctx, serve.Options{
			Client: fake.NewClientset(gatewaySlice()), Namespace: serve.DefaultNamespace, Domain: "xcc.test",
			EtcdEndpoints: strings.Join(srv.Endpoints(), ","), ShutdownDelay: delay,
			HTTPAddress: "127.0.0.1:0", HTTPReady: func(a net.Addr) { addr <- a },
		})
	}()
	base := "http://" + (<-addr).String()
	waitReady(t, base)
	stopped := time.Now()
	cancel()
	time.Sleep(200 * time.Millisecond)
	if code, body := testfixture.HTTPGet(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz while stopping: %d %q, want 503 shutting down", code, body)
	}
	select {
	case err := <-done:
		t.Fatalf("serve ended %s after the stop, before its %s delay: %v", time.Since(stopped), delay, err)
	default:
	}
	select {
	case err := <-done:
		if took := time.Since(stopped); took < delay || err != nil {
			t.Errorf("serve ended after %s with %v, want after %s without error", took, err, delay)
		}
	case <-time.After(delay + 10*time.Second):
		t.Fatal("serve did not end after its shutdown delay")
	}
}

// Switched to the cluster DNS's own clusterset server, serve removes the
// clusterset records it wrote while it answered the zone: the etcd users
// inspect holds nothing that no server answers any more.
func TestSwitchToCoreDNSRemovesClusterSetRecords(t *testing.T) {
	srv, cli := testfixture.StartEtcd(t)
	opts := serve.Options{
		Client: fake.NewClientset(gatewaySlice()), Namespace: serve.DefaultNamespace, Domain: "xcc.test",
		ClusterSetZone: "clusterset.local", EtcdEndpoints: strings.Join(srv.Endpoints(), ","),
	}
	const versionKey = "/skydns/local/clusterset/dns-version"
	count := func() int64 {
		t.Helper()
		resp, err := cli.Get(context.Background(), "/skydns/local/clusterset/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		addr := make(chan net.Addr, 1)
		done := make(chan error, 1)
		o := opts
		o.HTTPAddress, o.HTTPReady = "127.0.0.1:0", func(a net.Addr) { addr <- a }
		go func() { done <- serve.Run(ctx, o) }()
		waitReady(t, "http://"+(<-addr).String())
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	if n := count(); n == 0 {
		t.Fatalf("serving the clusterset zone wrote nothing under it (want %s)", versionKey)
	}
	opts.ClusterSetServer = corefile.ClusterSetCoreDNS
	// Ready from disk comes before the first reconcile: wait for it.
	runServe(t, opts)
	deadline := time.Now().Add(20 * time.Second)
	for n := count(); n != 0; n = count() {
		if time.Now().After(deadline) {
			t.Fatalf("after the switch to %s, %d clusterset records are left", corefile.ClusterSetCoreDNS, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := cli.Get(context.Background(), "/skydns/test/xcc/clusters/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count == 0 {
		t.Errorf("the gateway records went too: %v %v", resp, err)
	}
}
