package controller

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/clusterset"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/httpserver"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// Defaults of leader election and the HTTP endpoints.
const (
	DefaultLeaderElectionID        = "xcc-syncer-controller"
	DefaultLeaderElectionNamespace = "xcc-dns"
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod
	// are the leader election's timing. After a leader dies, its standby
	// takes over at most LeaseDuration + 2 x 2.2 x RetryPeriod later
	// (TakeoverBound): 14.4 s with these.
	DefaultLeaseDuration        = 10 * time.Second
	DefaultRenewDeadline        = 7 * time.Second
	DefaultRetryPeriod          = time.Second
	serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
	clusterAPIGroup             = "cluster.x-k8s.io"
)

// clusterAPIVersions are the Cluster API versions the controller can read,
// preferred first. Both have spec.controlPlaneEndpoint.host.
var clusterAPIVersions = []string{"v1beta2", "v1beta1"}

// Options are the settings of `xcc-syncer controller`.
type Options struct {
	Kubeconfig     string // management cluster; empty: in-cluster
	SliceNamespace string
	Domain         string
	// ClusterSetZone is the zone of the Multi-Cluster Services names.
	ClusterSetZone string
	// MaxExportsPerMember bounds the ServiceExports imported of one
	// member of a clusterset; positive.
	MaxExportsPerMember int
	// MaxEndpointsPerMember and MaxSlicesPerMember bound what one member
	// of a clusterset puts into each other member over all its imports;
	// positive.
	MaxEndpointsPerMember   int
	MaxSlicesPerMember      int
	AllowedCIDRs            cidr.List // every published address must lie in one; empty: any
	HTTPAddress             string
	LeaderElect             bool
	LeaderElectionNamespace string // empty: OwnNamespace
	LeaderElectionID        string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader
	// election (see TakeoverBound).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	Resync        time.Duration
	Workers       int
	// Profiling serves Go's /debug/pprof/ on HTTPAddress too.
	Profiling bool
	// AllowKubeconfigExec names the exec credential plugin commands a
	// <cluster>-kubeconfig Secret may run in the controller; empty: none.
	AllowKubeconfigExec []string
	// NameGrants is --name-grants: "<ns>=<suffix>[;...]", names granted
	// to namespaces besides their <label>.<ns>.names.<zone>; checked at
	// start (contract.ParseGrants).
	NameGrants string
	// StateNamespace is the management cluster namespace where the
	// controller keeps its state (ConfigMaps); empty: OwnNamespace.
	StateNamespace string
	// Limits bound what one GatewayDNS publishes of its clusters'
	// Services (--max-names-per-cluster, ...); each must be positive.
	Limits desired.Limits
	// MemberSyncsPerSecond bounds the ClusterSet syncs one member's
	// events cause; positive.
	MemberSyncsPerSecond int
	// ReadLimits bound the reads from each workload cluster
	// (--workload-list-page-size, ...); each must be positive.
	ReadLimits workload.ReadLimits
}

// AddFlags registers the flags of `xcc-syncer controller` on fs, with o's
// fields as their targets.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster; empty: in-cluster config")
	fs.StringVar(&o.SliceNamespace, "slice-namespace", DefaultSliceNamespace, "namespace in each workload cluster that receives EndpointSlices; its presence opts the cluster in")
	fs.StringVar(&o.Domain, "domain", DefaultDomain, "DNS zone of the published names")
	fs.IntVar(&o.MaxExportsPerMember, "max-exports-per-member", clusterset.DefaultMaxExportsPerMember,
		"most valid ServiceExports of one member of a clusterset that are imported (one without a Service, or an invalid one, takes no place); over it each namespace of the member gets an equal share, the oldest first, and the others are Valid=False, reason TooManyExports, so one member cannot crowd the others out, nor one namespace the others")
	fs.IntVar(&o.MaxEndpointsPerMember, "max-endpoints-per-member", objects.DefaultEndpointsPerMember,
		"most endpoints one member of a clusterset puts into each member over all its imports; past it the imports of its newest exports get fewer or none, and their ServiceImport's Ready message says so")
	fs.IntVar(&o.MaxSlicesPerMember, "max-slices-per-member", objects.DefaultSlicesPerMember,
		"most EndpointSlices one member of a clusterset puts into each member over all its imports; past it as for --max-endpoints-per-member")
	fs.IntVar(&o.MemberSyncsPerSecond, "member-syncs-per-second", clusterset.DefaultMemberSyncsPerSecond,
		"most ClusterSet syncs the changes of one member of a clusterset cause a second (as many at once, then as many a second); changes past it are held and synced together, the latest always, so a member whose endpoints change without pause cannot keep the controller writing into every other member")
	fs.StringVar(&o.ClusterSetZone, "clusterset-zone", contract.DefaultClusterSetZone, "DNS zone of the Multi-Cluster Services names of ClusterSets (<svc>.<ns>.svc.<zone>); serve needs the same value")
	fs.Var(&o.AllowedCIDRs, "allowed-cidrs", "comma-separated CIDRs that every published address must lie in (e.g. 192.0.2.0/24,2001:db8::/32): gateway and control-plane addresses, headless pods, and the endpoints of Multi-Cluster Services imports on both data paths, their DNS records and the EndpointSlices kube-proxy serves behind a ClusterSetIP; a CIDR with host bits set is refused at start; empty: any")
	httpserver.AddressFlag(fs, &o.HTTPAddress, DefaultHTTPAddress, "once the management caches have synced, or while this replica stands by")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "hold a coordination Lease so only one replica writes")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease; empty: the controller's own (POD_NAMESPACE or the service account file, else "+DefaultLeaderElectionNamespace+")")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", DefaultLeaderElectionID, "name of the leader election Lease")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, "how long a standby waits, after it last saw the Lease renewed, before it takes the Lease; after the leader dies a standby leads within lease duration + 2 x 2.2 x retry period (docs/reliability.md)")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", DefaultRenewDeadline, "how long the leader tries to renew the Lease before it gives up and exits; less than the lease duration")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", DefaultRetryPeriod, "how often the leader renews and a standby tries to take the Lease (a standby's tries are stretched by up to 2.2 times)")
	fs.StringVar(&o.StateNamespace, "state-namespace", "", "management cluster namespace where the controller keeps the last endpoints of each headless export (a ConfigMap xcc-dns-headless-<hash> per GatewayDNS, labelled xcc-dns.io/state=headless) and, of each ClusterSet, the members holding its objects and their last exports (xcc-dns-clusterset-<hash>, xcc-dns.io/state=clusterset), so that a cluster unreachable across a restart keeps its pods and imports in the other clusters and a ClusterSet's objects are removed after a restart; no tenant may write there; empty: the controller's own, as --leader-election-namespace")
	fs.DurationVar(&o.Resync, "resync-period", DefaultResync, "how often every GatewayDNS is synced again; a target last listed more than half of this ago is listed again, repairing drift in workload clusters")
	fs.IntVar(&o.Workers, "workers", DefaultWorkers, "GatewayDNS synced concurrently")
	fs.StringVar(&o.NameGrants, "name-grants", "", "semicolon-separated <namespace>=<suffix> grants: a GatewayDNS of <namespace> may publish, with the fqdn annotation, names exactly one label below <suffix> besides <label>.<namespace>.names.<domain> (e.g. shop=shop.xcc.test); serve needs the same value. Refused at start: a suffix outside or equal to the zone, inside clusters., gateways., names., services., dns. or ns., or equal to or below another grant's; empty: none")
	fs.IntVar(&o.Limits.NamesPerCluster, desired.FlagMaxNamesPerCluster, desired.DefaultMaxNamesPerCluster,
		"most names (fqdn annotation) the Services of one source cluster publish for one GatewayDNS; over it the first ones by name are published and the cluster is TooManyNames")
	fs.IntVar(&o.Limits.NamesPerGatewayDNS, desired.FlagMaxNamesPerGatewayDNS, desired.DefaultMaxNamesPerGatewayDNS,
		"most names (fqdn annotation) one GatewayDNS publishes from all its clusters; over it each cluster's names are taken in turn (a cluster claiming many cannot push out another's) and every cluster that lost one is TooManyNames")
	fs.IntVar(&o.Limits.HeadlessEndpointsPerCluster, desired.FlagMaxHeadlessEndpointsPerCluster, desired.DefaultMaxHeadlessEndpointsPerCluster,
		"most endpoints a headless export publishes from one source cluster; over it a fixed part (by address, in turn from each port set and family) is published and the cluster is TooManyEndpoints")
	fs.IntVar(&o.Limits.HeadlessEndpointsPerGatewayDNS, desired.FlagMaxHeadlessEndpointsPerGatewayDNS, desired.DefaultMaxHeadlessEndpointsPerGatewayDNS,
		"most endpoints a headless export publishes from all its clusters; over it each cluster keeps a max-min fair share (all of its endpoints when it has no more than an equal share) and the clusters cut are TooManyEndpoints")
	fs.Int64Var(&o.ReadLimits.ListPageSize, "workload-list-page-size", workload.DefaultListPageSize,
		"most objects one list request to a workload cluster asks for (lists are paged)")
	fs.Int64Var(&o.ReadLimits.MaxResponseBytes, "workload-max-response-bytes", workload.DefaultMaxResponseBytes,
		"most bytes of one response body from a workload cluster (a list page, a whole watch); more fails the request, and a list then cuts the cluster off")
	fs.Int64Var(&o.ReadLimits.MaxListBytes, "workload-max-list-bytes", workload.DefaultMaxListBytes,
		"most bytes of the response bodies of one list from a workload cluster, its pages together, counted as they are read; more cuts the cluster off")
	fs.Int64Var(&o.ReadLimits.MaxBytesPerCluster, "workload-max-bytes-per-cluster", workload.DefaultMaxBytesPerCluster,
		"most bytes the informers of one workload cluster hold together: the lists being read and the objects cached (as encoded once trimmed); more cuts the cluster off. The heap of a cluster's reads stays within about 6 times this plus 4 KiB per --workload-max-objects (docs/threat-model.md)")
	fs.Int64Var(&o.ReadLimits.MaxObjectsPerCluster, "workload-max-objects", workload.DefaultMaxObjectsPerCluster,
		"most objects the informers of one workload cluster hold together; more cuts the cluster off (status ClusterCutOff, last published names kept)")
	fs.DurationVar(&o.ReadLimits.ListTimeout, "workload-list-timeout", workload.DefaultListTimeout,
		"most time one list request (a page) to a workload cluster takes, its body included")
	fs.DurationVar(&o.ReadLimits.WatchTimeout, "workload-watch-timeout", workload.DefaultWatchTimeout,
		"most time one watch of a workload cluster lasts (timeoutSeconds, and ended by the controller 30s later whatever the server does); the informer then watches again")
	fs.DurationVar(&o.ReadLimits.CutOffRetry, "workload-cut-off-retry", workload.DefaultCutOffRetry,
		"how long a workload cluster that was cut off stays so before its informers start again")
	fs.BoolVar(&o.Profiling, "profiling", false, "serve Go's /debug/pprof/ on --http-address")
	fs.Func("allow-kubeconfig-exec", "comma-separated exec credential plugin commands a <cluster>-kubeconfig Secret may run in the controller, matched exactly against exec.command (aws allows aws on the controller's PATH, not /tmp/aws; e.g. aws,gke-gcloud-auth-plugin). The Secret's author still chooses the arguments and environment: list only commands that cannot be made to run or read something else; empty: none", func(v string) error {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				o.AllowKubeconfigExec = append(o.AllowKubeconfigExec, name)
			}
		}
		return nil
	})
}

// OwnNamespace is the controller's own namespace: the pod's when running
// in a cluster (POD_NAMESPACE or the service account file), else
// DefaultLeaderElectionNamespace.
func OwnNamespace() string {
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
	o.LeaderElectionNamespace = cmp.Or(o.LeaderElectionNamespace, OwnNamespace())
	o.StateNamespace = cmp.Or(o.StateNamespace, OwnNamespace())
	grants, err := contract.ParseGrants(o.NameGrants, o.Domain)
	if err != nil {
		return fmt.Errorf("--name-grants: %w", err)
	}
	if err := o.checkLimits(); err != nil {
		return err
	}
	mgmt, err := connectManagement(o.Kubeconfig)
	if err != nil {
		return err
	}
	reg := httpserver.NewRegistry()
	metrics := NewMetrics(reg)
	recorder, stopEvents, err := newEventRecorder(ctx, mgmt.kube)
	if err != nil {
		return err
	}
	defer stopEvents()

	var (
		start   startState
		leading atomic.Bool
	)
	srv, err := o.startHTTP(ctx, reg, &start, &leading)
	if err != nil {
		return err
	}
	defer srv.Close()
	srvErr := srv.Err()

	if len(o.AllowKubeconfigExec) > 0 {
		logger.Info("Kubeconfig Secrets may run these exec plugins", "commands", o.AllowKubeconfigExec)
	}
	runController := o.controllerRunner(mgmt, metrics, recorder, grants, &start)
	if !o.LeaderElect {
		logger.Info("Leader election disabled: this replica writes")
		return firstError(runController(ctx), srvErr)
	}
	return firstError(o.runLeading(ctx, mgmt.kube, &leading, runController), srvErr)
}

// management holds the clients of the management cluster, made once at
// start. What it serves is found while leading (discoverAPIs).
type management struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// connectManagement builds the management clients from kubeconfigPath
// (empty: in-cluster).
func connectManagement(kubeconfigPath string) (management, error) {
	cfg, err := kubeclient.Config(kubeconfigPath, "xcc-syncer-controller")
	if err != nil {
		return management{}, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return management{}, fmt.Errorf("management client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return management{}, fmt.Errorf("management dynamic client: %w", err)
	}
	return management{kube: kube, dyn: dyn}, nil
}

// newEventRecorder records Events on the management cluster (and logs
// them at level 2); stop flushes and ends the broadcaster.
func newEventRecorder(ctx context.Context, kube kubernetes.Interface) (rec record.EventRecorder, stop func(), err error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(2)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return broadcaster.NewRecorder(scheme, corev1.EventSource{Component: controllerName}), broadcaster.Shutdown, nil
}

// startHTTP serves /healthz, /readyz and /metrics at once. /readyz is
// ready on a standby (it can take over) and, on the leader, once its
// caches synced; until then it says why not (startState).
func (o Options) startHTTP(ctx context.Context, reg *prometheus.Registry, start *startState, leading *atomic.Bool) (*httpserver.Server, error) {
	return httpserver.Start(ctx, httpserver.Config{Address: o.HTTPAddress, Gatherer: reg, Profiling: o.Profiling,
		Ready: func(*http.Request) (string, error) {
			if o.LeaderElect && !leading.Load() {
				return "ok", nil // a standby is ready to take over
			}
			if !start.ready.Load() {
				return "", start.notReady()
			}
			return "ok", nil
		}})
}

// controllerRunner returns what runs the controller for as long as its
// context lasts: a new Controller each time it is called, on the APIs
// the management cluster serves (discoverAPIs). start tells /readyz how
// far it got.
func (o Options) controllerRunner(mgmt management, metrics *Metrics, recorder record.EventRecorder, grants contract.Grants, start *startState) func(context.Context) error {
	return func(ctx context.Context) error {
		apis, err := discoverAPIs(ctx, mgmt.kube.Discovery(), start, metrics, discoveryStatus{dyn: mgmt.dyn}.say)
		if err != nil {
			return err
		}
		policy := kubeconfig.Policy{AllowExec: o.AllowKubeconfigExec}
		newClient := func(data []byte) (workload.Client, error) {
			return workload.NewClientFromKubeconfig(data, policy, o.ReadLimits.MaxResponseBytes, metrics.requests())
		}
		c := New(Config{
			Kube: mgmt.kube, Dynamic: mgmt.dyn, ClusterResource: apis.clusterGVR, ClusterSets: apis.clusterSets, NewClient: newClient,
			SliceNamespace: o.SliceNamespace, Domain: o.Domain, ClusterSetZone: o.ClusterSetZone, MaxExportsPerMember: o.MaxExportsPerMember,
			MemberLimits: objects.Limits{EndpointsPerMember: o.MaxEndpointsPerMember, SlicesPerMember: o.MaxSlicesPerMember}, AllowedCIDRs: o.AllowedCIDRs, Resync: o.Resync, Workers: o.Workers,
			Metrics: metrics, Recorder: recorder, NameGrants: grants, Limits: o.Limits, ReadLimits: o.ReadLimits, MemberSyncsPerSecond: o.MemberSyncsPerSecond,
			State: &state.ConfigMaps{Client: mgmt.kube, Namespace: o.StateNamespace, Written: metrics.stateWritten},
		})
		readyCh := make(chan struct{})
		go func() {
			select {
			case <-readyCh:
				start.ready.Store(true)
			case <-ctx.Done():
			}
		}()
		return c.Run(ctx, readyCh)
	}
}

// runLeading waits for the Lease of o and runs runController while this
// replica holds it (runElected).
func (o Options) runLeading(ctx context.Context, kube kubernetes.Interface, leading *atomic.Bool, runController func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	id, _ := os.Hostname()
	id += "_" + uuid.NewString()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaderElectionNamespace, o.LeaderElectionID,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	logger.Info("Waiting for leadership", "lease", o.LeaderElectionNamespace+"/"+o.LeaderElectionID, "identity", id,
		"leaseDuration", o.leaseDuration(), "renewDeadline", o.renewDeadline(), "retryPeriod", o.retryPeriod())
	return runElected(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: o.leaseDuration(), RenewDeadline: o.renewDeadline(), RetryPeriod: o.retryPeriod(),
		Name: o.LeaderElectionID,
	}, leading, func(ctx context.Context) error {
		logger.Info("Became leader; starting controller", "lease", o.LeaderElectionNamespace+"/"+o.LeaderElectionID, "identity", id)
		return runController(ctx)
	})
}

// checkLimits refuses a limit that is not positive: a limit of 0 would
// publish or read nothing, and the flags have no "unlimited".
func (o Options) checkLimits() error {
	for flag, v := range map[string]int{
		desired.FlagMaxNamesPerCluster:                o.Limits.NamesPerCluster,
		desired.FlagMaxNamesPerGatewayDNS:             o.Limits.NamesPerGatewayDNS,
		desired.FlagMaxHeadlessEndpointsPerCluster:    o.Limits.HeadlessEndpointsPerCluster,
		desired.FlagMaxHeadlessEndpointsPerGatewayDNS: o.Limits.HeadlessEndpointsPerGatewayDNS,
		"max-exports-per-member":                      o.MaxExportsPerMember,
		"max-endpoints-per-member":                    o.MaxEndpointsPerMember,
		"max-slices-per-member":                       o.MaxSlicesPerMember,
		"member-syncs-per-second":                     o.MemberSyncsPerSecond,
	} {
		if v <= 0 {
			return fmt.Errorf("--%s=%d: must be positive", flag, v)
		}
	}
	r := o.ReadLimits
	for flag, v := range map[string]int64{
		"workload-list-page-size":        r.ListPageSize,
		"workload-max-response-bytes":    r.MaxResponseBytes,
		"workload-max-objects":           r.MaxObjectsPerCluster,
		"workload-max-list-bytes":        r.MaxListBytes,
		"workload-max-bytes-per-cluster": r.MaxBytesPerCluster,
		"workload-list-timeout":          int64(r.ListTimeout),
		"workload-watch-timeout":         int64(r.WatchTimeout / time.Second),
		"workload-cut-off-retry":         int64(r.CutOffRetry),
	} {
		if v <= 0 {
			return fmt.Errorf("--%s: must be positive (a watch timeout at least 1s)", flag)
		}
	}
	return nil
}

func (o Options) leaseDuration() time.Duration {
	return orDefault(o.LeaseDuration, DefaultLeaseDuration)
}
func (o Options) renewDeadline() time.Duration {
	return orDefault(o.RenewDeadline, DefaultRenewDeadline)
}
func (o Options) retryPeriod() time.Duration { return orDefault(o.RetryPeriod, DefaultRetryPeriod) }

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// TakeoverBound is the longest a standby takes to hold the Lease after
// the leader died without releasing it: it may see the last renewal up to
// one try after it was written, counts leaseDuration from then (by its
// own clock), and tries again up to one try later; client-go stretches
// each wait between tries by up to leaderelection.JitterFactor (1.2), so
// a try comes at most 2.2 x retryPeriod after the one before.
func TakeoverBound(leaseDuration, retryPeriod time.Duration) time.Duration {
	maxWait := time.Duration((1 + leaderelection.JitterFactor) * float64(retryPeriod))
	return leaseDuration + 2*maxWait
}

// runElected runs run while this replica holds the Lease of cfg, until
// ctx ends or the Lease is lost. The Lease is released (ReleaseOnCancel)
// only after run has returned: the elector runs on a context of its own
// that ends once run did, so the writes run had in flight have stopped
// before a standby can take over. Without that, client-go releases the
// Lease the moment ctx ends, while the controller still finishes its
// writes. leading tells /readyz whether this replica leads.
func runElected(ctx context.Context, cfg leaderelection.LeaderElectionConfig, leading *atomic.Bool, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	var (
		mu       sync.Mutex
		started  bool // run was started
		stopping bool // ctx ended
	)
	runDone := make(chan error, 1)
	cfg.ReleaseOnCancel = true
	cfg.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(leaseCtx context.Context) {
			mu.Lock()
			if stopping {
				mu.Unlock()
				return
			}
			started = true
			mu.Unlock()
			leading.Store(true)
			// run stops when ctx ends or the Lease is lost.
			runCtx, cancel := context.WithCancel(leaseCtx)
			stop := context.AfterFunc(ctx, cancel)
			err := run(runCtx)
			stop()
			cancel()
			runDone <- err
			// Only now may the elector release the Lease.
			stopElecting()
		},
		OnStoppedLeading: func() {
			leading.Store(false)
			logger.Info("Stopped leading", "identity", cfg.Lock.Identity())
		},
		OnNewLeader: func(identity string) {
			if identity != cfg.Lock.Identity() {
				logger.Info("Another replica leads; standing by", "leader", identity)
			}
		},
	}
	le, err := leaderelection.NewLeaderElector(cfg)
	if err != nil {
		return fmt.Errorf("leader elector: %w", err)
	}
	// A replica that is not leading stops electing when ctx ends; one that
	// leads stops once run returned (above).
	stopWatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		stopping = true
		s := started
		mu.Unlock()
		if !s {
			stopElecting()
		}
	})
	defer stopWatch()
	le.Run(electCtx)
	mu.Lock()
	s := started
	mu.Unlock()
	if s {
		// The Lease was lost (or released): wait for run to stop too.
		if err := <-runDone; err != nil {
			return err
		}
	}
	if ctx.Err() == nil {
		// Lost the lease while still running: exit, so no two replicas write.
		return errors.New("leader election lost")
	}
	return nil
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
