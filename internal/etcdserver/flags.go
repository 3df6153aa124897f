package etcdserver

import "flag"

// DefaultDataDir is where the embedded etcd keeps its data in the pod: a
// volume, so records survive restarts.
const DefaultDataDir = "/var/lib/xcc-dns/etcd"

// AddFlags registers the --etcd-* flags of the embedded etcd on fs, with
// c's fields as their targets.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Name, "etcd-name", DefaultName, "member name of the embedded etcd")
	fs.StringVar(&c.DataDir, "etcd-data-dir", DefaultDataDir, "data directory of the embedded etcd (on a volume, so records survive restarts)")
	fs.StringVar(&c.ClientURL, "etcd-client-url", DefaultClientURL, "client URL of the embedded etcd; keep it on 127.0.0.1 so only the pod can write")
	fs.StringVar(&c.PeerURL, "etcd-peer-url", DefaultPeerURL, "peer URL of the embedded etcd")
	fs.StringVar(&c.InitialCluster, "etcd-initial-cluster", "", "name=peerURL,... of every member when several form one etcd cluster; the chart's replicas do not (each has its own single-member etcd)")
	fs.Int64Var(&c.QuotaBytes, "etcd-quota-bytes", DefaultQuotaBytes, "backend quota of the embedded etcd, in bytes")
}
