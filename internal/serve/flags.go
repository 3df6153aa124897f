package serve

import (
	"flag"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/httpserver"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// AddFlags registers the flags of `xcc-syncer serve` on fs, each setting
// its field of o.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of this workload cluster; empty: in-cluster config")
	fs.StringVar(&o.Namespace, "namespace", DefaultNamespace, "namespace whose EndpointSlices describe the records")
	fs.StringVar(&o.Domain, "domain", skydnsrecord.DefaultDomain, "DNS zone the records live in; hostnames outside it are refused")
	fs.StringVar(&o.NameGrants, "name-grants", "", "semicolon-separated <namespace>=<suffix> grants: slices of <namespace> may publish names one label below <suffix> besides <label>.<namespace>.names.<domain>; the same value as the controller's, checked again here (the chart's nameGrants sets both, and the guard of xcc-syncer corefile for each suffix); empty: none")
	fs.StringVar(&o.ClusterSetZone, "clusterset-zone", contract.DefaultClusterSetZone, "zone of the Multi-Cluster Services DNS specification (schema "+contract.DNSVersion+"): the records of the clusterset slices, and dns-version TXT, go there; xcc-syncer corefile writes its server block and the cluster DNS forward block carries it too (the chart's mcs.dnsZone sets all); neither equal to, inside nor above --domain; empty: none")
	fs.StringVar(&o.ClusterSetServer, "clusterset-server", corefile.ClusterSetServe, "who answers --clusterset-zone: "+corefile.ClusterSetServe+", this server (the cluster DNS forwards the zone here); "+corefile.ClusterSetCoreDNS+", the cluster DNS's own kubernetes plugin (its multicluster option, CoreDNS 1.12.2 and later), whose line the cluster DNS keeper writes; the chart's mcs.dnsServer sets it for serve, xcc-syncer corefile and patch-corefile")
	fs.Var(&o.ReverseCIDRs, "reverse-cidrs", "comma-separated CIDRs whose addresses get PTR records pointing at the gateway or api name that has them (e.g. 192.0.2.0/24,2001:db8::/32): the load-balancer and control-plane ranges the operator allocates, never pod or Service ranges; xcc-syncer corefile takes the same flag and writes the reverse zones' server block (the chart's reverseCIDRs sets both); empty: none")
	httpserver.AddressFlag(fs, &o.HTTPAddress, DefaultHTTPAddress, "once etcd answers and the first reconcile is done, or etcd held records on disk at start: a replica restarted while its API server is unreachable answers what it had, and /readyz says so")
	fs.DurationVar(&o.ReconcilePeriod, "reconcile-period", DefaultReconcilePeriod, "how often every record is read back from etcd and repaired")
	fs.IntVar(&o.MaxRecords, "max-records", DefaultMaxRecords, "most records all EndpointSlices together may publish; a slice that would exceed it is refused (the oldest slices keep their place)")
	fs.StringVar(&o.EtcdEndpoints, "etcd-endpoints", "", "comma-separated client URLs of an existing etcd; set, no etcd is embedded")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", 0, "how long to go on serving (etcd up, /readyz 503 \"shutting down\") after SIGTERM; the chart sets 10s, 2 s beyond CoreDNS's 8 s drain")
	fs.StringVar(&o.ClusterDNSConfigMap, "cluster-dns-configmap", "", "namespace/name of the cluster DNS ConfigMap (kube-system/coredns) whose forward block for the zone to keep, forwarding to the ClusterIP of --cluster-dns-service; both set, or neither (see internal/corefile/README.md)")
	fs.StringVar(&o.ClusterDNSService, "cluster-dns-service", "", "namespace/name of this Service: the block forwards to its ClusterIP while it exists and goes when it is deleted (with --cluster-dns-configmap)")
	fs.DurationVar(&o.ClusterDNSPeriod, "cluster-dns-period", DefaultClusterDNSPeriod, "how often the forward block is checked")
	fs.StringVar(&o.AnswerDNSAddress, "answer-dns-address", DefaultAnswerDNSAddress, "host:port of the CoreDNS of this pod, which "+AnswerPath+" asks (the chart's ports.dns on loopback); empty: not asked")
	fs.StringVar(&o.AnswerClusterDNSService, "answer-cluster-dns-service", DefaultAnswerClusterDNSService, "namespace/name of the cluster DNS Service, whose ClusterIP "+AnswerPath+" asks (read with get on that Service); empty: not asked")
	o.Etcd.AddFlags(fs)
}
