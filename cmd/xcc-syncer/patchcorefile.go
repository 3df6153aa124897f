package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
)

func init() { subcommands["patch-corefile"] = runPatchCorefile }

// patchCorefileUserAgent names this subcommand in API server audit logs.
const patchCorefileUserAgent = "xcc-syncer-patch-corefile"

// runPatchCorefile is `xcc-syncer patch-corefile`: adds (or with --remove
// takes out) the forward block for the xcc-dns zone in the cluster DNS
// Corefile. The workload chart runs it as post-install/post-upgrade and
// pre-delete hooks; it can also be run by hand with a kubeconfig.
func runPatchCorefile(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("patch-corefile", flag.ExitOnError)
	var o corefile.CommandOptions
	o.AddFlags(fs)
	klog.InitFlags(fs)
	_ = fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if !o.Remove && (o.ForwardTo == "") == (o.ForwardToService == "") {
		return errors.New("give exactly one of --forward-to and --forward-to-service (or --remove)")
	}

	client, err := kubeClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	switch {
	case o.Remove && o.ForwardToService != "":
		// Without the finalizer the serve replicas stop re-adding the block.
		if err := corefile.RemoveFinalizer(ctx, client, o.ForwardToService); err != nil {
			return err
		}
	case o.ForwardToService != "":
		if o.ForwardTo, err = corefile.ServiceAddress(ctx, client, o.ForwardToService); err != nil {
			return err
		}
		o.Service = o.ForwardToService
	}
	action, err := corefile.ApplyToConfigMap(ctx, client, o.Namespace, o.ConfigMap, o.Options)
	if err != nil {
		return err
	}
	klog.InfoS("cluster DNS Corefile", "configmap", o.Namespace+"/"+o.ConfigMap, "zone", o.Zone, "clustersetZone", o.ClusterSetZone, "clustersetServer", o.ClusterSetServer, "forwardTo", o.ForwardTo, "reverseCIDRs", o.ReverseCIDRs.String(), "result", action)
	return nil
}

// kubeClient builds a clientset from kubeconfig, or from the pod's service
// account when kubeconfig is empty.
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := kubeclient.Config(kubeconfig, patchCorefileUserAgent)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}
