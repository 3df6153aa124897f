// Command xcc-syncer keeps cross-cluster DNS records in step with the
// Kubernetes objects that describe them. It has one subcommand per role:
//
//	serve           each workload cluster: EndpointSlices -> SkyDNS records in an embedded etcd
//	controller      management cluster: GatewayDNS + Cluster API -> EndpointSlices in every workload cluster
//	patch-corefile  adds or removes the xcc.test forward block in kube-system/coredns
//	corefile        writes the DNS server's guard of the zone, generated from the name grammar
//	status          prints every GatewayDNS and ClusterSet and what is behind; exits 3 when one is not Ready
//	explain         says why a name answers what it answers, or nothing, and where its records are
//	version         prints the version and commit it was built from
//
// main only parses flags and wires packages together; the work lives in internal/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"
)

// subcommands maps a subcommand name to its entry point. Each entry point
// parses its own flags from args and returns when ctx is done or on error.
var subcommands = map[string]func(ctx context.Context, args []string) error{}

const usage = `usage: xcc-syncer <serve|controller|patch-corefile|corefile|status|explain|version> [flags]

Run "xcc-syncer <subcommand> -h" for the flags of a subcommand. Installed
as kubectl-xcc_dns on the PATH it is a kubectl plugin: kubectl xcc-dns status,
kubectl xcc-dns explain NAME.
`

// pluginName is the file name kubectl looks for to run `kubectl xcc-dns`.
const pluginName = "kubectl-xcc_dns"

func main() {
	if filepath.Base(os.Args[0]) == pluginName {
		// kubectl xcc-dns status ...: the same subcommands.
		os.Args = append([]string{"xcc-syncer"}, os.Args[1:]...)
	}
	if len(os.Args) < 2 || subcommands[os.Args[1]] == nil {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := subcommands[os.Args[1]](ctx, os.Args[2:]); err != nil {
		if errors.Is(err, errNotReady) {
			klog.Flush()
			os.Exit(exitNotReady)
		}
		klog.ErrorS(err, "exiting", "subcommand", os.Args[1])
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
