package main

import (
	"context"
	"flag"

	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/etcdserver"
	"github.com/xcc-dns/xcc-dns/internal/serve"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

func init() { subcommands["serve"] = runServe }

// runServe is `xcc-syncer serve`: EndpointSlices in one namespace of this
// cluster -> SkyDNS records in an embedded (or given) etcd.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	var o serve.Options
	var endpoints string
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of this cluster; empty: in-cluster config")
	fs.StringVar(&o.Namespace, "namespace", serve.DefaultNamespace, "namespace whose EndpointSlices describe the records")
	fs.StringVar(&o.Domain, "domain", skydnsrecord.DefaultDomain, "DNS zone the records live in")
	fs.Var(&o.ReverseCIDRs, "reverse-cidrs", "comma-separated CIDRs whose addresses get PTR records pointing at the gateway or api name that has them (e.g. 192.0.2.0/24,2001:db8::/32); empty: none")
	fs.StringVar(&o.HTTPAddress, "http-address", serve.DefaultHTTPAddress, "address of /healthz, /readyz and /metrics")
	fs.DurationVar(&o.ReconcilePeriod, "reconcile-period", serve.DefaultReconcilePeriod, "how often every record is read back from etcd and repaired")
	fs.IntVar(&o.MaxRecords, "max-records", serve.DefaultMaxRecords, "most records all EndpointSlices together may publish; a slice that would exceed it is refused")
	fs.StringVar(&endpoints, "etcd-endpoints", "", "comma-separated client URLs of an existing etcd; set, no etcd is embedded")
	fs.StringVar(&o.Etcd.Name, "etcd-name", etcdserver.DefaultName, "member name of the embedded etcd")
	fs.StringVar(&o.Etcd.DataDir, "etcd-data-dir", "/var/lib/xcc-dns/etcd", "data directory of the embedded etcd (on a volume, so records survive restarts)")
	fs.StringVar(&o.Etcd.ClientURL, "etcd-client-url", etcdserver.DefaultClientURL, "client URL of the embedded etcd; keep it on 127.0.0.1 so only the pod can write")
	fs.StringVar(&o.Etcd.PeerURL, "etcd-peer-url", etcdserver.DefaultPeerURL, "peer URL of the embedded etcd")
	fs.StringVar(&o.Etcd.InitialCluster, "etcd-initial-cluster", "", "name=peerURL,... of every replica when several form one etcd cluster")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", 0, "how long to go on serving (etcd up, /readyz not ready) after SIGTERM; longer than CoreDNS's lameduck")
	fs.StringVar(&o.ClusterDNSConfigMap, "cluster-dns-configmap", "", "namespace/name of the cluster DNS ConfigMap whose forward block to keep (with --cluster-dns-service)")
	fs.StringVar(&o.ClusterDNSService, "cluster-dns-service", "", "namespace/name of this Service: the block forwards to its ClusterIP while it exists and goes when it is deleted")
	fs.DurationVar(&o.ClusterDNSPeriod, "cluster-dns-period", serve.DefaultClusterDNSPeriod, "how often the forward block is checked")
	fs.Int64Var(&o.Etcd.QuotaBytes, "etcd-quota-bytes", etcdserver.DefaultQuotaBytes, "backend quota of the embedded etcd")
	klog.InitFlags(fs)
	_ = fs.Parse(args)
	o.EtcdEndpoints = etcdserver.SplitEndpoints(endpoints)
	return serve.Run(ctx, o)
}
