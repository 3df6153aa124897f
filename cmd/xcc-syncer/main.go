// Command xcc-syncer keeps cross-cluster DNS records in step with the
// Kubernetes objects that describe them. It has one subcommand per role:
//
//	serve           each workload cluster: EndpointSlices -> SkyDNS records in an embedded etcd
//	controller      management cluster: GatewayDNS + Cluster API -> EndpointSlices in every workload cluster
//	patch-corefile  adds or removes the xcc.test forward block in kube-system/coredns
//	corefile        writes the DNS server's guard of the zone, generated from the name grammar
//	version         prints the version and commit it was built from
//
// main only parses flags and wires packages together; the work lives in internal/.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

// subcommands maps a subcommand name to its entry point. Each entry point
// parses its own flags from args and returns when ctx is done or on error.
var subcommands = map[string]func(ctx context.Context, args []string) error{}

const usage = `usage: xcc-syncer <serve|controller|patch-corefile|corefile|version> [flags]

Run "xcc-syncer <subcommand> -h" for the flags of a subcommand.
`

func main() {
	if len(os.Args) < 2 || subcommands[os.Args[1]] == nil {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := subcommands[os.Args[1]](ctx, os.Args[2:]); err != nil {
		klog.ErrorS(err, "exiting", "subcommand", os.Args[1])
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
