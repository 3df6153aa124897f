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
	var (
		kubeconfig, namespace, name, service string
		o                                    corefile.Options
	)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; empty: in-cluster config")
	fs.StringVar(&namespace, "namespace", corefile.DefaultNamespace, "namespace of the cluster DNS ConfigMap")
	fs.StringVar(&name, "configmap", corefile.DefaultConfigMap, "name of the cluster DNS ConfigMap (key "+corefile.CorefileKey+")")
	fs.StringVar(&o.Zone, "zone", corefile.DefaultZone, "zone forwarded to the xcc-dns server")
	fs.StringVar(&o.ForwardTo, "forward-to", "", "address of the xcc-dns server, ip[:port]; this or --forward-to-service unless --remove")
	fs.StringVar(&service, "forward-to-service", "", "namespace/name of the xcc-dns Service; its ClusterIP and DNS port are forwarded to, and the block names it; with --remove, its "+corefile.Finalizer+" finalizer is removed first")
	fs.Var(&o.ReverseCIDRs, "reverse-cidrs", "comma-separated CIDRs whose reverse zones are forwarded too (xcc-syncer serve's --reverse-cidrs)")
	fs.BoolVar(&o.Remove, "remove", false, "take the block out instead of adding it")
	klog.InitFlags(fs)
	_ = fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if !o.Remove && (o.ForwardTo == "") == (service == "") {
		return errors.New("give exactly one of --forward-to and --forward-to-service (or --remove)")
	}

	client, err := kubeClient(kubeconfig)
	if err != nil {
		return err
	}
	switch {
	case o.Remove && service != "":
		// Without the finalizer the serve replicas stop re-adding the block.
		if err := corefile.RemoveFinalizer(ctx, client, service); err != nil {
			return err
		}
	case service != "":
		if o.ForwardTo, err = corefile.ServiceAddress(ctx, client, service); err != nil {
			return err
		}
		o.Service = service
	}
	action, err := corefile.ApplyToConfigMap(ctx, client, namespace, name, o)
	if err != nil {
		return err
	}
	klog.InfoS("cluster DNS Corefile", "configmap", namespace+"/"+name, "zone", o.Zone, "forwardTo", o.ForwardTo, "reverseCIDRs", o.ReverseCIDRs.String(), "result", action)
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
