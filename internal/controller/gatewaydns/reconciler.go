package gatewaydns

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// Finalizer keeps a GatewayDNS until its slices are gone everywhere.
const Finalizer = "connectivity.tanzu.vmware.com/xcc-dns-endpointslices"

// queueName is the work queue name of GatewayDNS.
const queueName = "xcc-dns-controller"

// Config is what the reconciler takes from the controller that runs it.
// The informers, the kubeconfig Secret cache and the workload
// connections are the controller's, shared with the ClusterSet
// reconciler: one watch of each kind, one connection per workload
// cluster. Everything else is this package's own.
type Config struct {
	// Engine is the controller's, shared with the other reconciler:
	// New registers the GatewayDNS informer on its Informers.
	mgmt.Engine
	SliceNamespace string
	Domain         string
	// Resync is how often a target last listed more than half of it ago
	// is listed again (package publish).
	Resync time.Duration
	// Workers syncs this many GatewayDNS at once.
	Workers int
	// Recorder records Events on GatewayDNS objects; nil: none.
	Recorder record.EventRecorder
	// AllowedCIDRs are the ranges every published address must lie in:
	// gateways, control planes and headless pods; empty allows any.
	AllowedCIDRs cidr.List
	// NameGrants are the operator's grants of names to namespaces
	// (--name-grants), besides each namespace's <label>.<ns>.names.<zone>.
	NameGrants contract.Grants
	// State keeps across a restart the last endpoints of headless
	// exports (state.ConfigMaps in production); nil keeps nothing.
	State state.Store
	// Limits bound what one GatewayDNS publishes of its clusters'
	// Services; zero fields are the defaults.
	Limits desired.Limits
	// Metrics are the GatewayDNS metrics (nil: unregistered ones);
	// Syncs and SyncErrors count its syncs with the ClusterSet ones (nil:
	// unregistered ones).
	Metrics           *Metrics
	Syncs, SyncErrors prometheus.Counter
}

// Reconciler keeps the EndpointSlices of every GatewayDNS up to date.
type Reconciler struct {
	cfg       Config
	queue     *watch.Queue
	gdns      cache.SharedIndexInformer
	clusters  cache.SharedIndexInformer
	secrets   corelisters.SecretLister
	workloads *workload.Set
	// publisher writes the slices and remembers what it wrote to each target.
	publisher publish.Publisher

	// memory is what the reconciler remembers about each GatewayDNS
	// between syncs (memory.go), forgotten in one go when it is gone.
	memory *memories

	// The indexes below span GatewayDNS, so they cannot live in one
	// GatewayDNS's memory: each is read by the syncs of the others.
	//
	// claims are the addresses each GatewayDNS's clusters publish, to find
	// one address claimed by two clusters of any namespaces.
	claims *desired.AddressClaims
	// names are the names each GatewayDNS claims, compared between the
	// GatewayDNS of a namespace to find the older one (names.go).
	names *nameClaims
}

// New registers the GatewayDNS informer and queue; Run starts the queue.
func New(cfg Config) *Reconciler {
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.Syncs == nil {
		cfg.Syncs = prometheus.NewCounter(prometheus.CounterOpts{Name: "syncs"})
	}
	if cfg.SyncErrors == nil {
		cfg.SyncErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "sync_errors"})
	}
	if cfg.Recorder == nil {
		cfg.Recorder = &record.FakeRecorder{}
	}
	c := &Reconciler{
		cfg:       cfg,
		clusters:  cfg.Clusters,
		secrets:   cfg.Secrets,
		workloads: cfg.Workloads,
		memory:    newMemories(),
		claims:    desired.NewAddressClaims(),
		names:     newNameClaims(),
	}
	c.queue = watch.New(watch.Config{Name: queueName, Sync: c.syncKey, Failed: c.syncFailed})
	c.gdns = cfg.Informers.ForResource(v1alpha1.GatewayDNSResource).Informer()
	_, _ = c.gdns.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueNamespaceOf(obj) },
		UpdateFunc: func(old, cur any) {
			o, n := watch.Meta(old), watch.Meta(cur)
			if o == nil || n == nil || o.GetGeneration() != n.GetGeneration() || o.GetDeletionTimestamp() != n.GetDeletionTimestamp() {
				c.enqueueNamespaceOf(cur)
				return
			}
			c.queue.Enqueue(cur)
		},
		DeleteFunc: func(obj any) { c.enqueueNamespaceOf(obj) },
	})
	c.publisher = publish.NewWriter(publish.Config{
		SliceNamespace: cfg.SliceNamespace,
		Resync:         cfg.Resync,
		Written:        cfg.Metrics.SlicesWritten,
		Exists:         c.gatewayDNSExists,
		Lanes:          cfg.Lanes,
		// A write that went on in the background ended: sync again, so
		// status catches up and a newer generation is written.
		Done: func(ref string) { c.queue.Add(ref) },
	})
	cfg.Metrics.attach(c)
	return c
}

// HasSynced reports whether the GatewayDNS informer has listed.
func (c *Reconciler) HasSynced() bool { return c.gdns.HasSynced() }

// Count is how many GatewayDNS the informer holds, for the start's log.
func (c *Reconciler) Count() int { return len(c.gdns.GetStore().ListKeys()) }

// gatewayDNSExists reports whether the GatewayDNS key is in the cache; a
// cache error counts as existing, so no slice is taken for an orphan on it.
func (c *Reconciler) gatewayDNSExists(key string) bool {
	_, exists, err := c.gdns.GetIndexer().GetByKey(key)
	return err != nil || exists
}

// enqueueNamespaceOf enqueues the GatewayDNS obj itself (even a deleted
// one, so its slices go) and every GatewayDNS of its namespace, whose
// result it changes (which one owns a Cluster's names).
func (c *Reconciler) enqueueNamespaceOf(obj any) {
	m := watch.Meta(obj)
	if m == nil {
		utilruntime.HandleError(fmt.Errorf("informer delivered %T", obj))
		return
	}
	if u, ok := watch.Unwrap(obj).(*unstructured.Unstructured); ok && u.GroupVersionKind().GroupKind() == v1alpha1.GatewayDNSKind.GroupKind() {
		c.queue.Enqueue(obj)
	}
	c.EnqueueIn(m.GetNamespace())
}

// EnqueueIn enqueues every GatewayDNS of namespace: a Cluster, a
// kubeconfig Secret or a workload cluster's slice namespace there
// changes their result.
func (c *Reconciler) EnqueueIn(namespace string) {
	c.queue.EnqueueNamespace(c.gdns.GetIndexer(), namespace)
}

// ServiceChanged notes when a gateway Service changed, for the
// propagation metric, and enqueues the GatewayDNS keys that watch it.
func (c *Reconciler) ServiceChanged(keys []string) {
	now := time.Now()
	for _, k := range keys {
		c.memory.of(k, "").noteServiceEvent(now)
	}
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// Run runs the queue's workers until ctx ends. The writes still running
// in the background are the lanes' (Config.Lanes), which outlive it.
func (c *Reconciler) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.queue.Run(ctx, c.cfg.Workers)
}

// syncKey is the queue's sync: it counts the sync and logs under the key.
func (c *Reconciler) syncKey(ctx context.Context, key string) error {
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "gatewayDNS", key))
	c.cfg.Syncs.Inc()
	return c.syncHandler(ctx, key)
}

// syncFailed reports a failed sync; the queue requeues the key either way.
func (c *Reconciler) syncFailed(ctx context.Context, key string, err error, retries int) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "gatewayDNS", key)
	if apierrors.IsConflict(err) {
		// The cache was behind our own last write; retry with the newer object.
		logger.V(2).Info("Conflict writing GatewayDNS; requeued", "err", err.Error())
		return
	}
	c.cfg.SyncErrors.Inc()
	logger.Error(err, "Sync failed; requeued", "retries", retries)
}
