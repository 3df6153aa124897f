package main

import (
	"context"
	"flag"
	"strings"

	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/controller"
)

func init() { subcommands["controller"] = runController }

// runController is `xcc-syncer controller`: GatewayDNS + Cluster API in the
// management cluster -> EndpointSlices in every opted-in workload cluster.
func runController(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("controller", flag.ExitOnError)
	var o controller.Options
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster; empty: in-cluster config")
	fs.StringVar(&o.SliceNamespace, "slice-namespace", controller.DefaultSliceNamespace, "namespace in each workload cluster that receives EndpointSlices (its presence opts the cluster in)")
	fs.StringVar(&o.Domain, "domain", controller.DefaultDomain, "DNS zone of the published names")
	fs.Var(&o.AllowedCIDRs, "allowed-cidrs", "comma-separated CIDRs that gateway and control-plane addresses must lie in (e.g. 192.0.2.0/24,2001:db8::/32); empty: any")
	fs.StringVar(&o.HTTPAddress, "http-address", controller.DefaultHTTPAddress, "address of /healthz, /readyz and /metrics")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "hold a coordination Lease so only one replica writes")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", controller.DefaultLeaderElectionNamespaceFromPod(), "namespace of the leader election Lease")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", controller.DefaultLeaderElectionID, "name of the leader election Lease")
	fs.DurationVar(&o.Resync, "resync-period", controller.DefaultResync, "how often every GatewayDNS is synced again, repairing drift in workload clusters")
	fs.IntVar(&o.Workers, "workers", controller.DefaultWorkers, "GatewayDNS synced concurrently")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve Go's /debug/pprof/ on --http-address")
	fs.Func("allow-kubeconfig-exec", "comma-separated exec credential plugin commands a <cluster>-kubeconfig Secret may run, matched exactly (e.g. aws,gke-gcloud-auth-plugin); default none", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				o.AllowKubeconfigExec = append(o.AllowKubeconfigExec, name)
			}
		}
		return nil
	})
	klog.InitFlags(fs)
	_ = fs.Parse(args)
	return controller.Run(ctx, o)
}
