package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	mcsclientset "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller"
	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/explain"
	"github.com/xcc-dns/xcc-dns/internal/serve"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

func init() { subcommands["explain"] = runExplain }

// explainUserAgent names this subcommand in API server audit logs.
const explainUserAgent = "xcc-syncer-explain"

// explainTimeout bounds the reads of `xcc-syncer explain`.
const explainTimeout = 30 * time.Second

// Bounds of the --from read of a workload cluster, whose slice namespace
// anyone able to write there could fill: pages of explainSlicePage, at
// most explainMaxSlices slices.
const (
	explainSlicePage = 500
	explainMaxSlices = 20000
)

// runExplain is `xcc-syncer explain NAME [TYPE]` (also `kubectl xcc-dns
// explain`): why NAME answers what it answers, or nothing, read from the
// management cluster; it writes nothing. Flags may come before or after
// the name.
func runExplain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("explain", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: xcc-syncer explain NAME [TYPE] [flags]\n\n")
		fs.PrintDefaults()
	}
	kubeconfigPath := fs.String("kubeconfig", "", "kubeconfig of the management cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	kubeContext := fs.String("context", "", "kubeconfig context to use (default: its current context)")
	domain := fs.String("domain", controller.DefaultDomain, "DNS zone of the published names: the controller's --domain")
	clusterSetZone := fs.String("clusterset-zone", contract.DefaultClusterSetZone, "zone of the Multi-Cluster Services names: the controller's --clusterset-zone; empty: none")
	nameGrants := fs.String("name-grants", "", "the controller's --name-grants, so that granted names are read as such")
	from := fs.String("from", "", "also read the slices of this Cluster (of the name's namespace, or of the ClusterSet that has it) in its slice namespace, through its <cluster>-kubeconfig Secret")
	sliceNamespace := fs.String("slice-namespace", controller.DefaultSliceNamespace, "namespace of the slices in each workload cluster: the controller's --slice-namespace")
	clusterDNS := fs.String("cluster-dns-configmap", corefile.DefaultNamespace+"/"+corefile.DefaultConfigMap, "with --from: namespace/name of the cluster DNS ConfigMap whose Corefile is read, to say whether it forwards the name's zone")
	xccService := fs.String("xcc-dns-service", "", "with --from: namespace/name of the xcc-dns Service in the workload cluster, whose ClusterIP the cluster DNS should forward the zone to (default: the Service patch-corefile's block names, else "+explain.DefaultService+")")
	clusterDNSService := fs.String("cluster-dns-service", serve.DefaultAnswerClusterDNSService, "with --from: namespace/name of the cluster DNS Service, whose pods' reload metrics (port metrics, else 9153, through the pod proxy) say whether they run the ConfigMap's Corefile")
	var dnsServers []string
	fs.Func("dns", "ADDR[:PORT] of a DNS server to ask the name from here (port 53 by default), e.g. a workload cluster's xcc-dns reached from inside it; repeatable", func(v string) error {
		dnsServers = append(dnsServers, v)
		return nil
	})
	output := fs.String("o", "text", "output: text or json")
	positional := parseInterleaved(fs, args)
	if len(positional) < 1 || len(positional) > 2 {
		fs.Usage()
		return fmt.Errorf("want NAME [TYPE], got %v", positional)
	}
	if *output != "text" && *output != "json" {
		return fmt.Errorf("-o %q: want text or json", *output)
	}
	if err := skydnsrecord.ValidateName(skydnsrecord.CanonicalName(*domain)); err != nil {
		return fmt.Errorf("--domain: %w", err)
	}
	if err := contract.CheckClusterSetZone(*domain, *clusterSetZone); err != nil {
		return fmt.Errorf("--clusterset-zone: %w", err)
	}
	grants, err := contract.ParseGrants(*nameGrants, *domain)
	if err != nil {
		return fmt.Errorf("--name-grants: %w", err)
	}
	qtype := ""
	if len(positional) == 2 {
		qtype = positional[1]
	}
	n := explain.Classify(positional[0], qtype, explain.Config{Zone: *domain, ClusterSetZone: *clusterSetZone, Grants: grants})

	// A management cluster that cannot be reached is an unread fact: the
	// grammar's part of the answer stands without it.
	var reader explain.Reader
	cfg, err := restConfig(*kubeconfigPath, *kubeContext, explainUserAgent)
	if err == nil {
		var dyn dynamic.Interface
		if dyn, err = dynamic.NewForConfig(cfg); err == nil {
			reader = managementReader{dyn}
		}
	}
	if err != nil {
		reader = unreadable{err}
	}
	ctx, cancel := context.WithTimeout(ctx, explainTimeout)
	defer cancel()
	facts := explain.Read(ctx, n, reader)
	if *from != "" && cfg != nil {
		ns := explain.FromNamespace(n, facts, *from)
		if ns == "" {
			facts.Unread = append(facts.Unread, fmt.Sprintf("--from %s: no namespace: the name has none and no ClusterSet lists the Cluster", *from))
		} else {
			core, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("kubernetes client: %w", err)
			}
			w := &workloadReader{management: core, sliceNamespace: *sliceNamespace}
			explain.ReadSlices(ctx, n, w, ns, *from, &facts)
			readFrom(ctx, n, w, ns, *from, *clusterDNS, *xccService, &facts)
			readLive(ctx, n, w, ns, *from, *clusterDNS, *clusterDNSService, &facts)
		}
	}
	if len(dnsServers) > 0 {
		if qtype, err := queryType(n); err != nil {
			facts.Unread = append(facts.Unread, "--dns: not asked: "+err.Error())
		} else {
			answers, unread := askDNS(ctx, dnsServers, n.Name, qtype)
			facts.Answers, facts.Unread = append(facts.Answers, answers...), append(facts.Unread, unread...)
		}
	}
	report := explain.Build(n, facts, time.Now())
	if *output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // shapes are written <cluster>.<ns>...
		return enc.Encode(report)
	}
	return report.WriteText(os.Stdout, time.Now())
}

// parseInterleaved parses args with fs, flags before, between and after
// the positional arguments (kubectl's habit: explain NAME --context x),
// and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) []string {
	var positional []string
	for {
		_ = fs.Parse(args)
		if fs.NArg() == 0 {
			return positional
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// managementReader lists GatewayDNS and ClusterSets of the management
// cluster.
type managementReader struct{ client dynamic.Interface }

func (m managementReader) GatewayDNS(ctx context.Context, namespace string) ([]v1alpha1.GatewayDNS, error) {
	var out []v1alpha1.GatewayDNS
	err := list(ctx, m.client, v1alpha1.GatewayDNSResource, namespace, &out)
	return out, err
}

func (m managementReader) ClusterSets(ctx context.Context) ([]xccv1alpha1.ClusterSet, error) {
	var out []xccv1alpha1.ClusterSet
	err := list(ctx, m.client, xccv1alpha1.ClusterSetResource, "", &out)
	return out, err
}

// unreadable is the Reader of a management cluster no client could be
// made for: every read fails with why.
type unreadable struct{ err error }

func (u unreadable) GatewayDNS(context.Context, string) ([]v1alpha1.GatewayDNS, error) {
	return nil, u.err
}

func (u unreadable) ClusterSets(context.Context) ([]xccv1alpha1.ClusterSet, error) {
	return nil, u.err
}

// readFrom adds to f what else the workload cluster --from says of n:
// whether its cluster DNS forwards n's zone, to the xcc-dns Service
// (xccService; "": the one the managed block names, else
// explain.DefaultService), and for a clusterset name the ServiceImport
// behind it there. What cannot be read is unread.
func readFrom(ctx context.Context, n explain.Name, w *workloadReader, namespace, cluster, clusterDNS, xccService string, f *explain.Facts) {
	if _, err := w.config(ctx, namespace, cluster); err != nil || n.Zone == "" || n.Refused != "" {
		// The slices' read has said why the cluster cannot be read.
		return
	}
	cmNamespace, cmName, err := corefile.SplitRef(clusterDNS)
	if err == nil {
		var fw *explain.Forward
		if fw, err = w.Forward(ctx, namespace, cluster, cmNamespace, cmName, n.Zone); err == nil {
			f.Forward = fw
		}
	}
	if err != nil {
		f.Unread = append(f.Unread, fmt.Sprintf("cluster DNS of %s: %v", cluster, err))
	}
	if fw := f.Forward; fw != nil && fw.Found {
		ref := cmp.Or(xccService, fw.Service, explain.DefaultService)
		if fw.ServiceAddresses, err = w.ServiceAddresses(ctx, namespace, cluster, ref); err != nil {
			f.Unread = append(f.Unread, fmt.Sprintf("the xcc-dns Service of %s, to compare the block's forward with: %v", cluster, err))
		}
		fw.Service = ref
	}
	if n.Family != explain.FamilyClusterSet {
		return
	}
	impNamespace, impName, _ := strings.Cut(n.Owner.ServiceImport, "/")
	imp, err := w.Import(ctx, namespace, cluster, impNamespace, impName)
	if err != nil {
		f.Unread = append(f.Unread, fmt.Sprintf("ServiceImport %s in %s: %v", n.Owner.ServiceImport, cluster, err))
	}
	f.Import = imp
}

// readLive adds to f what the cluster --from does now: what its xcc-dns
// and cluster DNS answer (asked by a serve pod there), and whether its
// cluster DNS pods run the ConfigMap's Corefile (its Service
// clusterDNSService). What cannot be read is unread.
func readLive(ctx context.Context, n explain.Name, w *workloadReader, namespace, cluster, clusterDNS, clusterDNSService string, f *explain.Facts) {
	if _, err := w.config(ctx, namespace, cluster); err != nil || n.Zone == "" {
		return
	}
	if qtype, err := queryType(n); err != nil {
		f.Unread = append(f.Unread, "live answers: not asked: "+err.Error())
	} else {
		answers, pod, err := w.Answers(ctx, namespace, cluster, n.Name, qtype)
		if err != nil {
			f.Unread = append(f.Unread, fmt.Sprintf("live answers of %s: %v", cluster, err))
		}
		f.Answers, f.AnswersFrom = answers, pod
	}
	if w.corefileText == "" {
		// The ConfigMap's read has said why.
		return
	}
	r, err := w.Reload(ctx, namespace, cluster, clusterDNSService, clusterDNS, w.corefileText, w.corefileChanged, time.Now())
	if err != nil {
		f.Unread = append(f.Unread, fmt.Sprintf("reload state of the cluster DNS pods of %s: %v", cluster, err))
	}
	f.Reload = r
}

// workloadReader reads a workload cluster (--from) through its Cluster
// API kubeconfig Secret (workloadConfig). The client is made once.
type workloadReader struct {
	management     kubernetes.Interface
	sliceNamespace string
	// corefileText and corefileChanged are the cluster DNS ConfigMap's
	// Corefile and when it was last written, once Forward read it.
	corefileText    string
	corefileChanged time.Time

	// The client configuration of the Cluster key (namespace/cluster),
	// or why there is none.
	key string
	cfg *rest.Config
	err error
}

// config is the client configuration of the Cluster namespace/cluster.
func (w *workloadReader) config(ctx context.Context, namespace, cluster string) (*rest.Config, error) {
	if key := namespace + "/" + cluster; w.key != key {
		w.key = key
		w.cfg, w.err = workloadConfig(ctx, w.management, namespace, cluster, explainUserAgent, explainTimeout)
	}
	return w.cfg, w.err
}

func (w *workloadReader) client(ctx context.Context, namespace, cluster string) (kubernetes.Interface, error) {
	cfg, err := w.config(ctx, namespace, cluster)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client of %s/%s: %w", namespace, cluster, err)
	}
	return client, nil
}

func (w *workloadReader) Slices(ctx context.Context, namespace, cluster string) ([]explain.Slice, error) {
	client, err := w.client(ctx, namespace, cluster)
	if err != nil {
		return nil, err
	}
	var out []explain.Slice
	opts := metav1.ListOptions{Limit: explainSlicePage, LabelSelector: contract.LabelManagedBy + "=" + contract.ManagedByValue}
	for {
		l, err := client.DiscoveryV1().EndpointSlices(w.sliceNamespace).List(ctx, opts)
		if err != nil {
			return out, fmt.Errorf("list EndpointSlices in %s of %s: %w", w.sliceNamespace, cluster, err)
		}
		for i := range l.Items {
			out = append(out, slice(&l.Items[i]))
		}
		if l.Continue == "" {
			return out, nil
		}
		if len(out) >= explainMaxSlices {
			return out, fmt.Errorf("more than %d slices in %s of %s: the rest not read", explainMaxSlices, w.sliceNamespace, cluster)
		}
		opts.Continue = l.Continue
	}
}

// Forward reads the cluster DNS ConfigMap cmNamespace/cmName of the
// cluster and says which of its server blocks answers zone.
func (w *workloadReader) Forward(ctx context.Context, namespace, cluster, cmNamespace, cmName, zone string) (*explain.Forward, error) {
	client, err := w.client(ctx, namespace, cluster)
	if err != nil {
		return nil, err
	}
	cm, err := client.CoreV1().ConfigMaps(cmNamespace).Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", cmNamespace, cmName, err)
	}
	text, ok := cm.Data[corefile.CorefileKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no %q key", cmNamespace, cmName, corefile.CorefileKey)
	}
	w.corefileText, w.corefileChanged = text, lastChange(cm.ObjectMeta)
	blk, err := corefile.FindZone(text, zone)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cmNamespace, cmName, err)
	}
	fw := &explain.Forward{ConfigMap: cmNamespace + "/" + cmName, Zone: zone}
	if blk != nil {
		fw.Found, fw.Key, fw.Managed, fw.ForwardTo, fw.Cache, fw.Kubernetes = true, blk.Key, blk.Managed, blk.ForwardTo, blk.Cache, blk.Kubernetes
	}
	// The Service patch-corefile's block names, if any: the xcc-dns one.
	if svc, _, err := corefile.BlockService(text); err == nil {
		fw.Service = svc
	}
	return fw, nil
}

// ServiceAddresses reads the Service ref (namespace/name) of the cluster
// and returns the addresses a forward to it names.
func (w *workloadReader) ServiceAddresses(ctx context.Context, namespace, cluster, ref string) ([]string, error) {
	client, err := w.client(ctx, namespace, cluster)
	if err != nil {
		return nil, err
	}
	svcNamespace, svcName, err := corefile.SplitRef(ref)
	if err != nil {
		return nil, err
	}
	svc, err := client.CoreV1().Services(svcNamespace).Get(ctx, svcName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get Service %s: %w", ref, err)
	}
	return corefile.ServiceAddresses(svc)
}

// Import reads the ServiceImport impNamespace/impName of the member
// cluster; nil, no error, when there is none.
func (w *workloadReader) Import(ctx context.Context, namespace, cluster, impNamespace, impName string) (*explain.Import, error) {
	cfg, err := w.config(ctx, namespace, cluster)
	if err != nil {
		return nil, err
	}
	client, err := mcsclientset.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client of %s/%s: %w", namespace, cluster, err)
	}
	si, err := client.MulticlusterV1beta1().ServiceImports(impNamespace).Get(ctx, impName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	imp := &explain.Import{Name: impNamespace + "/" + impName, Type: string(si.Spec.Type), IPs: si.Spec.IPs}
	for _, p := range si.Spec.Ports {
		imp.Ports = append(imp.Ports, fmt.Sprintf("%s/%s/%d", p.Name, p.Protocol, p.Port))
	}
	for _, c := range si.Status.Clusters {
		imp.Clusters = append(imp.Clusters, c.Cluster)
	}
	return imp, nil
}

// slice is what explain shows of one contract slice.
func slice(s *discoveryv1.EndpointSlice) explain.Slice {
	out := explain.Slice{Name: s.Name, Hostname: s.Annotations[contract.AnnotationHostname], Source: s.Labels[contract.LabelSourceCluster]}
	for _, ep := range s.Endpoints {
		out.Addresses = append(out.Addresses, ep.Addresses...)
	}
	if len(out.Addresses) > maxShownAddresses {
		out.Addresses = append(out.Addresses[:maxShownAddresses:maxShownAddresses], fmt.Sprintf("... %d more", len(out.Addresses)-maxShownAddresses))
	}
	return out
}

// maxShownAddresses keeps one slice on one line.
const maxShownAddresses = 8
