package main

import (
	"context"
	"flag"

	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/controller"
)

func init() { subcommands["controller"] = runController }

// runController is `xcc-syncer controller`: GatewayDNS + Cluster API in the
// management cluster -> EndpointSlices in every opted-in workload cluster.
func runController(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("controller", flag.ExitOnError)
	var o controller.Options
	o.AddFlags(fs)
	klog.InitFlags(fs)
	_ = fs.Parse(args)
	return controller.Run(ctx, o)
}
