package serve

import (
	"flag"

	"github.com/xcc-dns/xcc-dns/internal/httpserver"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// AddFlags registers the flags of `xcc-syncer serve` on fs, with o's
// fields as their targets.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of this cluster; empty: in-cluster config")
	fs.StringVar(&o.Namespace, "namespace", DefaultNamespace, "namespace whose EndpointSlices describe the records")
	fs.StringVar(&o.Domain, "domain", skydnsrecord.DefaultDomain, "DNS zone the records live in")
	fs.StringVar(&o.NameGrants, "name-grants", "", "semicolon-separated <namespace>=<suffix> grants: slices of <namespace> may publish names one label below <suffix> besides <label>.<namespace>.names.<domain>; the same value as the controller's; empty: none")
	fs.Var(&o.ReverseCIDRs, "reverse-cidrs", "comma-separated CIDRs whose addresses get PTR records pointing at the gateway or api name that has them (e.g. 192.0.2.0/24,2001:db8::/32); empty: none")
	httpserver.AddressFlag(fs, &o.HTTPAddress, DefaultHTTPAddress)
	fs.DurationVar(&o.ReconcilePeriod, "reconcile-period", DefaultReconcilePeriod, "how often every record is read back from etcd and repaired")
	fs.IntVar(&o.MaxRecords, "max-records", DefaultMaxRecords, "most records all EndpointSlices together may publish; a slice that would exceed it is refused")
	fs.StringVar(&o.EtcdEndpoints, "etcd-endpoints", "", "comma-separated client URLs of an existing etcd; set, no etcd is embedded")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", 0, "how long to go on serving (etcd up, /readyz not ready) after SIGTERM; longer than CoreDNS's lameduck")
	fs.StringVar(&o.ClusterDNSConfigMap, "cluster-dns-configmap", "", "namespace/name of the cluster DNS ConfigMap whose forward block to keep (with --cluster-dns-service)")
	fs.StringVar(&o.ClusterDNSService, "cluster-dns-service", "", "namespace/name of this Service: the block forwards to its ClusterIP while it exists and goes when it is deleted")
	fs.DurationVar(&o.ClusterDNSPeriod, "cluster-dns-period", DefaultClusterDNSPeriod, "how often the forward block is checked")
	o.Etcd.AddFlags(fs)
}
