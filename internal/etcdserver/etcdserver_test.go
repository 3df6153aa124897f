package etcdserver

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestStartPutGetRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	start := func() (*Server, *clientv3.Client) {
		srv, err := Start(ctx, Config{DataDir: dir, ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", LogLevel: "error"})
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		return srv, cli
	}
	srv, cli := start()
	if _, err := cli.Put(ctx, "/skydns/test/xcc/a", `{"host":"192.0.2.1","ttl":30}`); err != nil {
		t.Fatalf("put: %v", err)
	}
	_ = cli.Close()
	srv.Close()

	// The data directory survives a restart: the record is still there.
	srv, cli = start()
	defer srv.Close()
	defer cli.Close()
	resp, err := cli.Get(ctx, "/skydns/test/xcc/a")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != `{"host":"192.0.2.1","ttl":30}` {
		t.Fatalf("after restart got %v, want the record written before", resp.Kvs)
	}
}

func TestStartFailsClearly(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); err == nil {
		t.Fatal("start without a data directory: want an error")
	}
	if _, err := Start(context.Background(), Config{DataDir: t.TempDir(), ClientURL: "::bad"}); err == nil {
		t.Fatal("start with a bad client URL: want an error")
	}
}

func TestSplitEndpoints(t *testing.T) {
	got := SplitEndpoints(" http://a:2379, ,http://b:2379 ")
	if len(got) != 2 || got[0] != "http://a:2379" || got[1] != "http://b:2379" {
		t.Fatalf("got %q", got)
	}
}
