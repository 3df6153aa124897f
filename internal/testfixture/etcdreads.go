package testfixture

import (
	"context"
	"net"
	"sync"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// EtcdReads is an etcd KV endpoint in front of a real etcd that records
// the key of every Range request it passes on: what a DNS server in front
// of it reads. Only Range is served; the etcd plugin needs nothing else.
type EtcdReads struct {
	pb.UnimplementedKVServer
	kv       pb.KVClient
	Endpoint string // http://127.0.0.1:<port>, for the etcd plugin

	mu   sync.Mutex
	keys []string
}

// RecordEtcdReads starts an EtcdReads on a free loopback port in front of
// the etcd cli talks to; it stops when the test ends.
func RecordEtcdReads(t testing.TB, cli *clientv3.Client) *EtcdReads {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &EtcdReads{kv: pb.NewKVClient(cli.ActiveConnection()), Endpoint: "http://" + l.Addr().String()}
	s := grpc.NewServer()
	pb.RegisterKVServer(s, r)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return r
}

// Range records the key read (a prefix read ends in '/') and passes the
// request on.
func (r *EtcdReads) Range(ctx context.Context, req *pb.RangeRequest) (*pb.RangeResponse, error) {
	r.mu.Lock()
	r.keys = append(r.keys, string(req.Key))
	r.mu.Unlock()
	return r.kv.Range(ctx, req)
}

// Take returns the keys read since the last Take.
func (r *EtcdReads) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := r.keys
	r.keys = nil
	return keys
}
