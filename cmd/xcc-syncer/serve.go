package main

import (
	"context"
	"flag"

	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/serve"
)

func init() { subcommands["serve"] = runServe }

// runServe is `xcc-syncer serve`: EndpointSlices in one namespace of this
// cluster -> SkyDNS records in an embedded (or given) etcd.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	var o serve.Options
	o.AddFlags(fs)
	klog.InitFlags(fs)
	_ = fs.Parse(args)
	return serve.Run(ctx, o)
}
