// Package controller is the management-cluster role of xcc-dns: it turns
// GatewayDNS objects, Cluster API Clusters and the gateway Services of the
// workload clusters into EndpointSlices in the xcc-dns namespace of every
// opted-in workload cluster, where `xcc-syncer serve` turns them into DNS
// records.
//
// Shape: informers enqueue GatewayDNS keys into one rate-limited work queue;
// each sync (syncHandler) is a pipeline: source (gather what the informers
// know), desired (package desired, a pure function), publish (package
// publish: plan the difference per target cluster and apply it) and
// status. Package workload owns the connections to workload clusters.
//
// The root package is also the wiring of the ClusterSet reconciler
// (package clusterset): it builds it with the informers, the kubeconfig
// Secret cache and the workload connections the two share, and runs its
// queue beside the GatewayDNS one.
package gatewaydns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/clusterset"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// Defaults of the controller role.
const (
	DefaultSliceNamespace = "xcc-dns"
	DefaultDomain         = "xcc.test"
	DefaultHTTPAddress    = ":8080"
	// DefaultResync re-runs every sync this often, which repairs slices
	// someone deleted or edited in a workload cluster.
	DefaultResync = 5 * time.Minute
	// DefaultWorkers syncs this many GatewayDNS at once.
	DefaultWorkers = 2
	// Finalizer keeps a GatewayDNS until its slices are gone everywhere.
	Finalizer = "connectivity.tanzu.vmware.com/xcc-dns-endpointslices"
	// controllerName is the event source and the work queue name.
	controllerName = "xcc-dns-controller"
)

// Config wires the controller to its clients.
type Config struct {
	// Kube is the management cluster (Secrets, Events).
	Kube kubernetes.Interface
	// Dynamic is the management cluster (GatewayDNS, Cluster).
	Dynamic dynamic.Interface
	// ClusterResource is the served version of cluster.x-k8s.io clusters.
	ClusterResource schema.GroupVersionResource
	// ClusterSets runs the Multi-Cluster Services half (package
	// clusterset): the ClusterSet CRD is served.
	ClusterSets bool
	// NewClient builds workload cluster clients (workload.NewClientFromKubeconfig in production).
	NewClient      workload.ClientFactory
	SliceNamespace string
	Domain         string
	// ClusterSetZone is the zone of the MCS DNS names (clusterset.local).
	ClusterSetZone string
	// MaxExportsPerMember bounds the ServiceExports of one member that a
	// clusterset imports; zero is clusterset.DefaultMaxExportsPerMember.
	MaxExportsPerMember int
	// MemberLimits bound what one member puts into another over all its
	// imports (and one source of one import); zero fields take the
	// defaults of package objects.
	MemberLimits objects.Limits
	Resync       time.Duration
	Workers      int
	Metrics      *Metrics
	// Recorder records Events on GatewayDNS objects; nil: none.
	Recorder record.EventRecorder
	// AllowedCIDRs are the ranges every published address must lie in:
	// gateways, control planes, headless pods and imported endpoints, in
	// DNS and in the EndpointSlices kube-proxy reads; empty allows any.
	AllowedCIDRs cidr.List
	// NameGrants are the operator's grants of names to namespaces
	// (--name-grants), besides each namespace's <label>.<ns>.names.<zone>.
	NameGrants contract.Grants
	// State keeps across a restart the last endpoints of headless
	// exports and what each ClusterSet wrote and read
	// (state.ConfigMaps in production); nil keeps nothing.
	State state.Store
	// Limits bound what one GatewayDNS publishes of its clusters'
	// Services; zero fields are the defaults.
	Limits desired.Limits
	// ReadLimits bound the reads from each workload cluster; zero fields
	// are the defaults.
	ReadLimits workload.ReadLimits
}

// Controller keeps the EndpointSlices of every GatewayDNS up to date.
type Controller struct {
	cfg       Config
	queue     *watch.Queue
	dynInf    dynamicinformer.DynamicSharedInformerFactory
	kubeInf   informers.SharedInformerFactory
	gdns      cache.SharedIndexInformer
	clusters  cache.SharedIndexInformer
	secrets   corelisters.SecretLister
	synced    []cache.InformerSynced
	workloads *workload.Set
	// publisher writes the slices and remembers what it wrote to each target.
	publisher publish.Publisher

	// memory is what the controller remembers about each GatewayDNS
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

	// sets is the ClusterSet reconciler (package clusterset); nil when
	// the CRD is not served.
	sets *clusterset.Reconciler
}

// New builds the controller and registers its informers; Run starts them.
func New(cfg Config) *Controller {
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.ClusterSetZone == "" {
		cfg.ClusterSetZone = contract.DefaultClusterSetZone
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Recorder == nil {
		cfg.Recorder = &record.FakeRecorder{}
	}
	c := &Controller{
		cfg:     cfg,
		dynInf:  dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, cfg.Resync),
		kubeInf: informers.NewSharedInformerFactory(cfg.Kube, 0),
		memory:  newMemories(),
		claims:  desired.NewAddressClaims(),
		names:   newNameClaims(),
	}
	c.queue = watch.New(watch.Config{Name: controllerName, Sync: c.syncKey, Failed: c.syncFailed})
	c.gdns = c.dynInf.ForResource(v1alpha1.GatewayDNSResource).Informer()
	c.clusters = c.dynInf.ForResource(cfg.ClusterResource).Informer()
	secretInf := c.kubeInf.Core().V1().Secrets()
	_ = secretInf.Informer().SetTransform(secretForCache)
	c.secrets = secretInf.Lister()
	c.synced = []cache.InformerSynced{c.gdns.HasSynced, c.clusters.HasSynced, secretInf.Informer().HasSynced}

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
	onClusterish := watch.OnEvent(func(obj any) {
		c.enqueueNamespaceOf(obj)
		if m := watch.Meta(obj); m != nil {
			c.enqueueClusterSetsIn(m.GetNamespace())
		}
	})
	_, _ = c.clusters.AddEventHandler(onClusterish)
	_, _ = secretInf.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			m := watch.Meta(obj)
			return m != nil && strings.HasSuffix(m.GetName(), workload.KubeconfigSecretSuffix)
		},
		Handler: onClusterish,
	})
	c.workloads = workload.NewSet(workload.Config{
		NewClient:      cfg.NewClient,
		SliceNamespace: cfg.SliceNamespace,
		OnNamespace: func(namespace string) {
			c.enqueueAllIn(namespace)
			c.enqueueClusterSetsIn(namespace)
		},
		OnService: c.serviceChanged,
		Gauge:     func(n int) { cfg.Metrics.ClustersWatched.Set(float64(n)) },
		Limits:    cfg.ReadLimits,
		Written:   cfg.Metrics.targetWritten,
	})
	if cfg.ClusterSets {
		c.sets = clusterset.New(clusterset.Config{
			Dynamic:             cfg.Dynamic,
			Informers:           c.dynInf,
			Clusters:            c.clusters,
			Secrets:             c.secrets,
			Workloads:           c.workloads,
			SliceNamespace:      cfg.SliceNamespace,
			ClusterSetZone:      cfg.ClusterSetZone,
			AllowedCIDRs:        cfg.AllowedCIDRs,
			MaxExportsPerMember: cfg.MaxExportsPerMember,
			MemberLimits:        cfg.MemberLimits,
			Workers:             cfg.Workers,
			State:               cfg.State,
			Recorder:            cfg.Recorder,
			Metrics:             cfg.Metrics.Metrics,
			Syncs:               cfg.Metrics.Syncs,
			SyncErrors:          cfg.Metrics.SyncErrors,
		})
		c.synced = append(c.synced, c.sets.HasSynced)
	}
	c.publisher = publish.NewWriter(publish.Config{
		SliceNamespace: cfg.SliceNamespace,
		Resync:         cfg.Resync,
		Written:        cfg.Metrics.SlicesWritten,
		Exists:         c.gatewayDNSExists,
		// A write that went on in the background ended: sync again, so
		// status catches up and a newer generation is written.
		Done: func(ref string) { c.queue.Add(ref) },
	})
	cfg.Metrics.attach(c)
	return c
}

// gatewayDNSExists reports whether the GatewayDNS key is in the cache; a
// cache error counts as existing, so no slice is taken for an orphan on it.
func (c *Controller) gatewayDNSExists(key string) bool {
	_, exists, err := c.gdns.GetIndexer().GetByKey(key)
	return err != nil || exists
}

// secretForCache is the transform of the Secret informer: of every Secret
// it keeps only what the controller reads, and of a <cluster>-kubeconfig
// Secret also its key `value`. Everything else, such as other keys,
// labels, managedFields and the annotation
// kubectl.kubernetes.io/last-applied-configuration (the whole data of a
// Secret made with kubectl apply), is dropped before it is cached, so the
// cache stays small and holds no credentials the controller does not use.
// Idempotent, as client-go asks of a transform.
func secretForCache(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name:              s.Name,
		Namespace:         s.Namespace,
		UID:               s.UID,
		ResourceVersion:   s.ResourceVersion,
		DeletionTimestamp: s.DeletionTimestamp,
	}}
	if value, ok := s.Data[workload.KubeconfigSecretKey]; ok && strings.HasSuffix(s.Name, workload.KubeconfigSecretSuffix) {
		kept.Data = map[string][]byte{workload.KubeconfigSecretKey: value}
	}
	return kept, nil
}

// enqueueNamespaceOf enqueues the object itself when it is a GatewayDNS
// (even a deleted one, so its slices go) and every GatewayDNS of its
// namespace: Clusters, Secrets and other GatewayDNS change their result.
func (c *Controller) enqueueNamespaceOf(obj any) {
	m := watch.Meta(obj)
	if m == nil {
		utilruntime.HandleError(fmt.Errorf("informer delivered %T", obj))
		return
	}
	if u, ok := watch.Unwrap(obj).(*unstructured.Unstructured); ok && u.GroupVersionKind().GroupKind() == v1alpha1.GatewayDNSKind.GroupKind() {
		c.queue.Enqueue(obj)
	}
	c.enqueueAllIn(m.GetNamespace())
}

func (c *Controller) enqueueAllIn(namespace string) {
	c.queue.EnqueueNamespace(c.gdns.GetIndexer(), namespace)
}

// enqueueClusterSetsIn enqueues every ClusterSet of namespace: a Cluster,
// a kubeconfig Secret or a workload cluster's slice namespace there
// changes their members.
func (c *Controller) enqueueClusterSetsIn(namespace string) {
	if c.sets != nil {
		c.sets.EnqueueIn(namespace)
	}
}

// serviceChanged notes when a gateway Service changed, for the propagation
// metric, and enqueues the GatewayDNS that watch it.
func (c *Controller) serviceChanged(all []string) {
	users, sets := clusterset.Users(all)
	for _, key := range sets {
		c.sets.Add(key)
	}
	now := time.Now()
	for _, u := range users {
		c.memory.of(u, "").noteServiceEvent(now)
	}
	for _, u := range users {
		c.queue.Add(u)
	}
}

// Run starts the informers, waits for their caches, and runs workers until
// ctx ends. ready is closed once the caches have synced.
func (c *Controller) Run(ctx context.Context, ready chan<- struct{}) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	c.workloads.Start(ctx)

	logger.Info("Starting controller", "clusterResource", c.cfg.ClusterResource.String(),
		"sliceNamespace", c.cfg.SliceNamespace, "domain", c.cfg.Domain, "allowedCIDRs", c.cfg.AllowedCIDRs.String())
	c.dynInf.Start(ctx.Done())
	c.kubeInf.Start(ctx.Done())
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return errors.New("informer caches did not sync")
	}
	logger.Info("Caches synced; starting workers", "count", c.cfg.Workers,
		"gatewayDNS", len(c.gdns.GetStore().ListKeys()), "clusters", len(c.clusters.GetStore().ListKeys()))
	if ready != nil {
		close(ready)
	}
	var sets sync.WaitGroup
	if c.sets != nil {
		sets.Go(func() { c.sets.Run(ctx) })
	}
	c.queue.Run(ctx, c.cfg.Workers)
	sets.Wait()
	// Writes still running in the background end with ctx.
	c.publisher.Wait()
	logger.Info("Workers stopped")
	return nil
}

// syncKey is the queue's sync: it counts the sync and logs under the key.
func (c *Controller) syncKey(ctx context.Context, key string) error {
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "gatewayDNS", key))
	c.cfg.Metrics.Syncs.Inc()
	return c.syncHandler(ctx, key)
}

// syncFailed reports a failed sync; the queue requeues the key either way.
func (c *Controller) syncFailed(ctx context.Context, key string, err error, retries int) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "gatewayDNS", key)
	if apierrors.IsConflict(err) {
		// The cache was behind our own last write; retry with the newer object.
		logger.V(2).Info("Conflict writing GatewayDNS; requeued", "err", err.Error())
		return
	}
	c.cfg.Metrics.SyncErrors.Inc()
	logger.Error(err, "Sync failed; requeued", "retries", retries)
}
