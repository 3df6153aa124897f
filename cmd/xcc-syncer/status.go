package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/overview"
)

func init() { subcommands["status"] = runStatus }

// statusUserAgent names this subcommand in API server audit logs.
const statusUserAgent = "xcc-syncer-status"

// statusTimeout bounds the reads of `xcc-syncer status`.
const statusTimeout = 30 * time.Second

// errNotReady is what status returns when something is not Ready, or a
// serve pod holds no record where a Ready object expects some: main
// exits with exitNotReady, so a rollout can be gated on it.
var errNotReady = errors.New("something is behind")

// exitNotReady is status's exit code when something is behind; 1 stays
// the code of a status that could not be read.
const exitNotReady = 3

// runStatus is `xcc-syncer status` (also `kubectl xcc-dns status`): one
// screen of the installation, read from the management cluster with the
// rights to list GatewayDNS and ClusterSets, and to get the controller's
// state ConfigMaps for the members' exports; with --serve-records (the
// default) also what each serve pod of every workload cluster holds,
// through the clusters' kubeconfig Secrets. It writes nothing.
func runStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("status", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: xcc-syncer status [flags]

Every GatewayDNS and ClusterSet of the management cluster, what is behind,
and the records each serve pod of each workload cluster holds.

Exit code: 0 when everything is Ready; %d when a GatewayDNS or ClusterSet
is not Ready, or a serve pod holds no record while a Ready GatewayDNS or
ClusterSet writes records into its cluster (behind); 1 when the management
cluster cannot be read. What cannot be read of a workload cluster is said
on a "not read:" line and does not change the exit code.

`, exitNotReady)
		fs.PrintDefaults()
	}
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the management cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	kubeContext := fs.String("context", "", "kubeconfig context to use (default: its current context)")
	namespace := fs.String("namespace", "", "only this namespace of the management cluster (default: all)")
	fs.StringVar(namespace, "n", "", "short for --namespace")
	output := fs.String("o", "text", "output: text or json")
	stateNamespace := fs.String("state-namespace", controller.DefaultLeaderElectionNamespace, "namespace where the controller keeps its state (its --state-namespace): the members' last exports of each ClusterSet are read there")
	serveRecords := fs.Bool("serve-records", true, "also read, through each workload cluster's <cluster>-kubeconfig Secret and its API server's pod proxy, the records each serve pod holds (xcc_serve_records of its /metrics); false: the management cluster alone is read")
	serveNamespace := fs.String("serve-namespace", defaultServeNamespace, "with --serve-records: namespace of the workload chart's serve pods in each workload cluster")
	_ = fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("-o %q: want text or json", *output)
	}
	cfg, err := restConfig(*kubeconfig, *kubeContext, statusUserAgent)
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var gds []v1alpha1.GatewayDNS
	if err := list(ctx, client, v1alpha1.GatewayDNSResource, *namespace, &gds); err != nil {
		return err
	}
	var sets []xccv1alpha1.ClusterSet
	if err := list(ctx, client, xccv1alpha1.ClusterSetResource, *namespace, &sets); err != nil {
		return err
	}
	report := overview.Build(gds, sets)
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	readExportProblems(ctx, &report, sets, &state.ConfigMaps{Client: core, Namespace: *stateNamespace})
	if *serveRecords {
		configFor := func(ctx context.Context, namespace, cluster string) (*rest.Config, error) {
			return workloadConfig(ctx, core, namespace, cluster, statusUserAgent, serveClusterTimeout)
		}
		sr := serveReader{configFor: configFor, namespace: *serveNamespace, timeout: serveClusterTimeout}
		report.SetServe(sr.read(ctx, overview.ServeClusters(gds, sets)))
	}
	if *output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = report.WriteText(os.Stdout, time.Now())
	}
	if err != nil {
		return err
	}
	if bad := report.NotReady(); len(bad) > 0 {
		return fmt.Errorf("%w: %s", errNotReady, strings.Join(bad, ", "))
	}
	return nil
}

// readExportProblems sets the exports in Conflict or not Valid of each
// ClusterSet, from what the controller keeps of it; what cannot be read
// (no right to get ConfigMaps there, a damaged state) is said in the
// report's Unread, once when every read is refused alike.
func readExportProblems(ctx context.Context, report *overview.Report, sets []xccv1alpha1.ClusterSet, kept state.ClusterSets) {
	for _, cs := range sets {
		key := cs.Namespace + "/" + cs.Name
		k, err := kept.LoadClusterSet(ctx, key)
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			report.Unread = append(report.Unread, fmt.Sprintf("the exports of the ClusterSets: %v", err))
			return
		}
		if err == nil {
			var problems []overview.MemberExports
			if problems, err = overview.ExportProblems(cs, k); err == nil {
				report.SetExports(key, problems)
			}
		}
		if err != nil {
			report.Unread = append(report.Unread, fmt.Sprintf("the exports of ClusterSet %s: %v", key, err))
		}
	}
}

// list lists resource in namespace ("" every one) into out, a slice of
// the typed objects. A resource the API server does not serve (the
// ClusterSet CRD of an installation without it) lists nothing.
func list[T any](ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, out *[]T) error {
	l, err := client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", gvr.Resource, err)
	}
	for _, u := range l.Items {
		var obj T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
			return fmt.Errorf("%s %s/%s: %w", gvr.Resource, u.GetNamespace(), u.GetName(), err)
		}
		*out = append(*out, obj)
	}
	return nil
}

// restConfig is the client configuration of kubeconfig's context
// (kubectl's loading rules when kubeconfig is empty, then in-cluster),
// naming userAgent in audit logs.
func restConfig(kubeconfig, kubeContext, userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}
