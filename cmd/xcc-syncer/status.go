package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
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
cluster cannot be read, or when no ClusterSet with members has its state in
the namespace read (--state-namespace, else the one the management chart's
ClusterRoleBinding names). What cannot be read of a workload cluster is said
on a "not read:" line and does not change the exit code.

`, exitNotReady)
		fs.PrintDefaults()
	}
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the management cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	kubeContext := fs.String("context", "", "kubeconfig context to use (default: its current context)")
	namespace := fs.String("namespace", "", "only this namespace of the management cluster (default: all)")
	fs.StringVar(namespace, "n", "", "short for --namespace")
	output := fs.String("o", "text", "output: text or json")
	stateNamespace := fs.String("state-namespace", "", "namespace where the controller keeps its state (its --state-namespace): the members' last exports of each ClusterSet are read there (default: the namespace of the management chart's controller, found by its ClusterRoleBinding, else "+controller.DefaultLeaderElectionNamespace+")")
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
	if err := readStateExports(ctx, &report, sets, core, *stateNamespace); err != nil {
		return err
	}
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

// readStateExports reads the export problems of sets from the
// controller's state, in the namespace flag names, else the one
// stateNamespace finds.
func readStateExports(ctx context.Context, report *overview.Report, sets []xccv1alpha1.ClusterSet, core kubernetes.Interface, flag string) error {
	ns, how, err := stateNamespace(ctx, core, flag)
	if err != nil {
		return err
	}
	return readExportProblems(ctx, report, sets, &state.ConfigMaps{Client: core, Namespace: ns}, fmt.Sprintf("namespace %s (%s)", ns, how))
}

// chartSelector selects the objects of the management chart.
const chartSelector = "app.kubernetes.io/name=xcc-dns-management"

// stateNamespace is where the controller keeps its state: flag when set,
// else its own namespace, which the management chart's
// ClusterRoleBinding names as its ServiceAccount's. A ClusterRoleBinding
// is the cluster admin's to write, never a tenant's, unlike a Deployment
// or ConfigMap labelled as the chart's. how says which it is, for a
// message.
func stateNamespace(ctx context.Context, core kubernetes.Interface, flag string) (ns, how string, err error) {
	if flag != "" {
		return flag, "--state-namespace", nil
	}
	l, err := core.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{LabelSelector: chartSelector})
	if err != nil {
		return controller.DefaultLeaderElectionNamespace, fmt.Sprintf("the default: the management chart's ClusterRoleBinding could not be read: %v", err), nil
	}
	var found []string
	for _, b := range l.Items {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace != "" && !slices.Contains(found, s.Namespace) {
				found = append(found, s.Namespace)
			}
		}
	}
	switch len(found) {
	case 0:
		return controller.DefaultLeaderElectionNamespace, "the default: no ClusterRoleBinding of the management chart", nil
	case 1:
		return found[0], "the namespace of the management chart's controller, from its ClusterRoleBinding", nil
	}
	slices.Sort(found)
	return "", "", fmt.Errorf("the management chart's controller runs in several namespaces (%s): pass --state-namespace", strings.Join(found, ", "))
}

// readExportProblems sets the exports in Conflict or not Valid of each
// ClusterSet, from what the controller keeps of it in where (the
// namespace, and how it was chosen); what cannot be read (no right to
// get ConfigMaps there, a damaged state, no state of a set with members)
// is said in the report's Unread, once when every read is refused alike.
// When no set with members has its state there, the namespace is the
// wrong one: an error, rather than a report of no problem.
func readExportProblems(ctx context.Context, report *overview.Report, sets []xccv1alpha1.ClusterSet, kept state.ClusterSets, where string) error {
	var withMembers, missing int
	for _, cs := range sets {
		key := cs.Namespace + "/" + cs.Name
		k, err := kept.LoadClusterSet(ctx, key)
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			report.Unread = append(report.Unread, fmt.Sprintf("the exports of the ClusterSets: %v", err))
			return nil
		}
		if cs.Status.Members > 0 {
			withMembers++
			if k == nil && err == nil {
				missing++
				err = fmt.Errorf("no state kept in %s", where)
			}
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
	if missing > 0 && missing == withMembers {
		return fmt.Errorf("no state of the %d ClusterSets with members in %s: the controller keeps it in its own namespace, "+
			"the management chart's release namespace; pass that as --state-namespace", withMembers, where)
	}
	return nil
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
