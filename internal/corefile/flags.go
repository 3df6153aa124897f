package corefile

import "flag"

// CommandOptions are the settings of `xcc-syncer patch-corefile`: which
// ConfigMap to patch, how to reach its cluster, and what Patch does.
type CommandOptions struct {
	Kubeconfig string // empty: in-cluster config
	Namespace  string // of the cluster DNS ConfigMap
	ConfigMap  string
	// ForwardToService is the namespace/name of the xcc-dns Service whose
	// ClusterIP and DNS port become Options.ForwardTo.
	ForwardToService string
	Options
}

// AddFlags registers the flags of `xcc-syncer patch-corefile` on fs, with
// o's fields as their targets.
func (o *CommandOptions) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; empty: in-cluster config")
	fs.StringVar(&o.Namespace, "namespace", DefaultNamespace, "namespace of the cluster DNS ConfigMap")
	fs.StringVar(&o.ConfigMap, "configmap", DefaultConfigMap, "name of the cluster DNS ConfigMap (key "+CorefileKey+")")
	fs.StringVar(&o.Zone, "zone", DefaultZone, "zone forwarded to the xcc-dns server")
	fs.StringVar(&o.ClusterSetZone, "clusterset-zone", DefaultClusterSetZone, "zone of the Multi-Cluster Services DNS specification forwarded too (xcc-syncer serve's --clusterset-zone); empty: none")
	fs.StringVar(&o.ClusterSetServer, "clusterset-server", ClusterSetServe, "who answers --clusterset-zone: "+ClusterSetServe+", the xcc-dns server (the block forwards the zone there too); "+ClusterSetCoreDNS+", this cluster DNS's kubernetes plugin, whose line gets the zone and the multicluster option (CoreDNS 1.12.2 and later)")
	fs.StringVar(&o.ForwardTo, "forward-to", "", "address of the xcc-dns server, ip[:port]; this or --forward-to-service unless --remove")
	fs.StringVar(&o.ForwardToService, "forward-to-service", "", "namespace/name of the xcc-dns Service; its ClusterIP and DNS port are forwarded to, and the block names it; with --remove, its "+Finalizer+" finalizer is removed first")
	fs.Var(&o.ReverseCIDRs, "reverse-cidrs", "comma-separated CIDRs whose reverse zones are forwarded too (xcc-syncer serve's --reverse-cidrs)")
	fs.BoolVar(&o.Remove, "remove", false, "take the block out instead of adding it")
}
