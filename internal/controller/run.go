package controller

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/httpserver"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
)

// Defaults of leader election and the HTTP endpoints.
const (
	DefaultLeaderElectionID        = "xcc-syncer-controller"
	DefaultLeaderElectionNamespace = "xcc-dns"
	leaseDuration                  = 15 * time.Second
	renewDeadline                  = 10 * time.Second
	retryPeriod                    = 2 * time.Second
	serviceAccountNamespaceFile    = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
	clusterAPIGroup                = "cluster.x-k8s.io"
)

// clusterAPIVersions are the Cluster API versions the controller can read,
// preferred first. Both have spec.controlPlaneEndpoint.host.
var clusterAPIVersions = []string{"v1beta2", "v1beta1"}

// Options are the settings of `xcc-syncer controller`.
type Options struct {
	Kubeconfig              string // management cluster; empty: in-cluster
	SliceNamespace          string
	Domain                  string
	AllowedCIDRs            cidr.List // gateway and control-plane addresses must lie in one; empty: any
	HTTPAddress             string
	LeaderElect             bool
	LeaderElectionNamespace string // empty: the pod's namespace, else DefaultLeaderElectionNamespace
	LeaderElectionID        string
	Resync                  time.Duration
	Workers                 int
	// Profiling serves Go's /debug/pprof/ on HTTPAddress too.
	Profiling bool
	// AllowKubeconfigExec names the exec credential plugin commands a
	// <cluster>-kubeconfig Secret may run in the controller; empty: none.
	AllowKubeconfigExec []string
}

// AddFlags registers the flags of `xcc-syncer controller` on fs, with o's
// fields as their targets.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster; empty: in-cluster config")
	fs.StringVar(&o.SliceNamespace, "slice-namespace", DefaultSliceNamespace, "namespace in each workload cluster that receives EndpointSlices (its presence opts the cluster in)")
	fs.StringVar(&o.Domain, "domain", DefaultDomain, "DNS zone of the published names")
	fs.Var(&o.AllowedCIDRs, "allowed-cidrs", "comma-separated CIDRs that gateway and control-plane addresses must lie in (e.g. 192.0.2.0/24,2001:db8::/32); empty: any")
	httpserver.AddressFlag(fs, &o.HTTPAddress, DefaultHTTPAddress)
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "hold a coordination Lease so only one replica writes")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", DefaultLeaderElectionNamespaceFromPod(), "namespace of the leader election Lease")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", DefaultLeaderElectionID, "name of the leader election Lease")
	fs.DurationVar(&o.Resync, "resync-period", DefaultResync, "how often every GatewayDNS is synced again, repairing drift in workload clusters")
	fs.IntVar(&o.Workers, "workers", DefaultWorkers, "GatewayDNS synced concurrently")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve Go's /debug/pprof/ on --http-address")
	fs.Func("allow-kubeconfig-exec", "comma-separated exec credential plugin commands a <cluster>-kubeconfig Secret may run, matched exactly (e.g. aws,gke-gcloud-auth-plugin); default none", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				o.AllowKubeconfigExec = append(o.AllowKubeconfigExec, name)
			}
		}
		return nil
	})
}

// DefaultLeaderElectionNamespaceFromPod is the pod's namespace when running
// in a cluster (POD_NAMESPACE or the service account file), else the default.
func DefaultLeaderElectionNamespaceFromPod() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return DefaultLeaderElectionNamespace
}

// Run runs the controller role until ctx ends: HTTP endpoints at once, the
// controller only while this replica holds the lease.
func Run(ctx context.Context, o Options) error {
	logger := klog.FromContext(ctx)
	cfg, err := kubeclient.Config(o.Kubeconfig, "xcc-syncer-controller")
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("management client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("management dynamic client: %w", err)
	}
	clusterGVR, err := discoverClusterResource(kube.Discovery())
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := NewMetrics(reg)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(2)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: controllerName})

	var ready, leading atomic.Bool
	var elector *leaderelection.LeaderElector
	srv, err := httpserver.Start(ctx, httpserver.Config{Address: o.HTTPAddress, Gatherer: reg, Profiling: o.Profiling,
		Ready: func(*http.Request) (string, error) {
			if elector != nil && !leading.Load() {
				return "ok", nil // a standby is ready to take over
			}
			if !ready.Load() {
				return "", errors.New("informer caches not synced")
			}
			return "ok", nil
		}})
	if err != nil {
		return err
	}
	defer srv.Close()
	srvErr := srv.Err()

	if len(o.AllowKubeconfigExec) > 0 {
		logger.Info("Kubeconfig Secrets may run these exec plugins", "commands", o.AllowKubeconfigExec)
	}
	runController := func(ctx context.Context) error {
		policy := kubeconfig.Policy{AllowExec: o.AllowKubeconfigExec}
		newClient := func(data []byte) (workload.Client, error) { return workload.NewClientFromKubeconfig(data, policy) }
		c := New(Config{
			Kube: kube, Dynamic: dyn, ClusterResource: clusterGVR, NewClient: newClient,
			SliceNamespace: o.SliceNamespace, Domain: o.Domain, AllowedCIDRs: o.AllowedCIDRs, Resync: o.Resync, Workers: o.Workers,
			Metrics: metrics, Recorder: recorder,
		})
		readyCh := make(chan struct{})
		go func() {
			select {
			case <-readyCh:
				ready.Store(true)
			case <-ctx.Done():
			}
		}()
		return c.Run(ctx, readyCh)
	}

	if !o.LeaderElect {
		logger.Info("Leader election disabled: this replica writes")
		return firstError(runController(ctx), srvErr)
	}

	id, _ := os.Hostname()
	id += "_" + uuid.NewString()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaderElectionNamespace, o.LeaderElectionID,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	runErr := make(chan error, 1)
	elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: true, Name: o.LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leading.Store(true)
				logger.Info("Became leader; starting controller", "lease", o.LeaderElectionNamespace+"/"+o.LeaderElectionID, "identity", id)
				runErr <- runController(ctx)
			},
			OnStoppedLeading: func() {
				leading.Store(false)
				logger.Info("Stopped leading", "identity", id)
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					logger.Info("Another replica leads; standing by", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader elector: %w", err)
	}
	logger.Info("Waiting for leadership", "lease", o.LeaderElectionNamespace+"/"+o.LeaderElectionID, "identity", id)
	elector.Run(ctx)
	select {
	case err := <-runErr:
		if err != nil {
			return err
		}
	default:
	}
	if ctx.Err() == nil {
		// Lost the lease while still running: exit, so no two replicas write.
		return errors.New("leader election lost")
	}
	return firstError(nil, srvErr)
}

func firstError(err error, srvErr <-chan error) error {
	if err != nil {
		return err
	}
	select {
	case err := <-srvErr:
		return err
	default:
		return nil
	}
}

// discoverClusterResource picks the served cluster.x-k8s.io version,
// preferring v1beta2; CAPI v1.11 serves both, older releases only v1beta1.
func discoverClusterResource(d discovery.DiscoveryInterface) (schema.GroupVersionResource, error) {
	var errs []error
	for _, v := range clusterAPIVersions {
		gv := schema.GroupVersion{Group: clusterAPIGroup, Version: v}
		list, err := d.ServerResourcesForGroupVersion(gv.String())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", gv, err))
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == "clusters" {
				return gv.WithResource("clusters"), nil
			}
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no served Cluster API version (%v) has clusters; is the Cluster CRD installed? %w",
		clusterAPIVersions, errors.Join(errs...))
}
