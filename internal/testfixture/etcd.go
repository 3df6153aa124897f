package testfixture

import (
	"context"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xcc-dns/xcc-dns/internal/etcdserver"
)

// StartEtcd starts an embedded etcd on free loopback ports in a fresh
// t.TempDir, and returns it with a client. Both are closed when the test
// ends.
func StartEtcd(t testing.TB) (*etcdserver.Server, *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), etcdserver.DefaultStartTimeout)
	defer cancel()
	srv, err := etcdserver.Start(ctx, etcdserver.Config{
		DataDir:   t.TempDir(),
		ClientURL: "http://127.0.0.1:0",
		PeerURL:   "http://127.0.0.1:0",
		LogLevel:  "fatal", // etcd logs errors for the connections it closes on Close
	})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(srv.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return srv, cli
}

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server that cannot report the port it bound for port 0 (CoreDNS's
// health, ready and prometheus plugins).
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
