package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/clusterset"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/gatewaydns"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
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
	// controllerName is the event source.
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
	// Recorder records Events on GatewayDNS and ClusterSet objects; nil: none.
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

// Manager builds what the two reconcilers share once (the management
// informers, the kubeconfig Secret cache, the workload connections and
// the metrics), hands it to both, and runs them side by side. Neither
// reconciler knows the other: the events that concern both (a Cluster,
// a kubeconfig Secret, a workload cluster's slice namespace or Service)
// are sent to each from here.
type Manager struct {
	cfg       Config
	dynInf    dynamicinformer.DynamicSharedInformerFactory
	kubeInf   informers.SharedInformerFactory
	clusters  cache.SharedIndexInformer
	secrets   corelisters.SecretLister
	synced    []cache.InformerSynced
	workloads *workload.Set
	// lanes are the one writer into the workload clusters, shared by
	// both reconcilers (package lane).
	lanes *lane.Set

	gatewayDNS *gatewaydns.Reconciler
	// sets is the ClusterSet reconciler; nil when the CRD is not served.
	sets *clusterset.Reconciler
}

// New builds the shared pieces and both reconcilers, and registers their
// informers; Run starts them.
func New(cfg Config) *Manager {
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
	m := &Manager{
		cfg:     cfg,
		dynInf:  dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, cfg.Resync),
		kubeInf: informers.NewSharedInformerFactory(cfg.Kube, 0),
		lanes:   lane.NewSet(lane.Config{}),
	}
	m.clusters = m.dynInf.ForResource(cfg.ClusterResource).Informer()
	secretInf := m.kubeInf.Core().V1().Secrets()
	_ = secretInf.Informer().SetTransform(secretForCache)
	m.secrets = secretInf.Lister()
	m.workloads = workload.NewSet(workload.Config{
		NewClient:      cfg.NewClient,
		SliceNamespace: cfg.SliceNamespace,
		OnNamespace:    m.enqueueIn,
		OnService:      m.serviceChanged,
		Gauge:          func(n int) { cfg.Metrics.ClustersWatched.Set(float64(n)) },
		Limits:         cfg.ReadLimits,
		Written:        cfg.Metrics.targetWritten,
	})
	// The engine both reconcilers run on.
	engine := mgmt.Engine{Dynamic: cfg.Dynamic, Informers: m.dynInf, Clusters: m.clusters, Secrets: m.secrets,
		Workloads: m.workloads, Lanes: m.lanes}
	m.gatewayDNS = gatewaydns.New(gatewaydns.Config{
		Engine:         engine,
		SliceNamespace: cfg.SliceNamespace,
		Domain:         cfg.Domain,
		Resync:         cfg.Resync,
		Workers:        cfg.Workers,
		Recorder:       cfg.Recorder,
		AllowedCIDRs:   cfg.AllowedCIDRs,
		NameGrants:     cfg.NameGrants,
		State:          cfg.State,
		Limits:         cfg.Limits,
		Metrics:        cfg.Metrics.GatewayDNS,
		Syncs:          cfg.Metrics.Syncs,
		SyncErrors:     cfg.Metrics.SyncErrors,
	})
	m.synced = []cache.InformerSynced{m.gatewayDNS.HasSynced, m.clusters.HasSynced, secretInf.Informer().HasSynced}
	if cfg.ClusterSets {
		m.sets = clusterset.New(clusterset.Config{
			Engine:              engine,
			SliceNamespace:      cfg.SliceNamespace,
			ClusterSetZone:      cfg.ClusterSetZone,
			AllowedCIDRs:        cfg.AllowedCIDRs,
			MaxExportsPerMember: cfg.MaxExportsPerMember,
			MemberLimits:        cfg.MemberLimits,
			Workers:             cfg.Workers,
			State:               cfg.State,
			Recorder:            cfg.Recorder,
			Metrics:             cfg.Metrics.ClusterSet,
			Syncs:               cfg.Metrics.Syncs,
			SyncErrors:          cfg.Metrics.SyncErrors,
		})
		m.synced = append(m.synced, m.sets.HasSynced)
	}
	// A Cluster or a kubeconfig Secret changes the result of every
	// GatewayDNS and the members of every ClusterSet of its namespace.
	onClusterish := watch.OnEvent(func(obj any) {
		meta := watch.Meta(obj)
		if meta == nil {
			utilruntime.HandleError(fmt.Errorf("informer delivered %T", obj))
			return
		}
		m.enqueueIn(meta.GetNamespace())
	})
	_, _ = m.clusters.AddEventHandler(onClusterish)
	_, _ = secretInf.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			meta := watch.Meta(obj)
			return meta != nil && strings.HasSuffix(meta.GetName(), workload.KubeconfigSecretSuffix)
		},
		Handler: onClusterish,
	})
	cfg.Metrics.attach(m.workloads)
	return m
}

// enqueueIn enqueues every GatewayDNS and every ClusterSet of namespace.
func (m *Manager) enqueueIn(namespace string) {
	m.gatewayDNS.EnqueueIn(namespace)
	if m.sets != nil {
		m.sets.EnqueueIn(namespace)
	}
}

// serviceChanged hands the users of a workload informer whose Service
// changed to the reconciler each belongs to.
func (m *Manager) serviceChanged(users []string) {
	gatewayDNS, sets := clusterset.Users(users)
	if m.sets != nil {
		for _, key := range sets {
			m.sets.Add(key)
		}
	}
	m.gatewayDNS.ServiceChanged(gatewayDNS)
}

// Run starts the informers, waits for their caches, and runs both
// reconcilers until ctx ends; it returns once both have stopped. ready
// is closed once the caches have synced.
func (m *Manager) Run(ctx context.Context, ready chan<- struct{}) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	m.workloads.Start(ctx)
	m.lanes.Start(ctx)

	logger.Info("Starting controller", "clusterResource", m.cfg.ClusterResource.String(),
		"sliceNamespace", m.cfg.SliceNamespace, "domain", m.cfg.Domain, "allowedCIDRs", m.cfg.AllowedCIDRs.String())
	m.dynInf.Start(ctx.Done())
	m.kubeInf.Start(ctx.Done())
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), m.synced...) {
		return errors.New("informer caches did not sync")
	}
	logger.Info("Caches synced; starting workers", "count", m.cfg.Workers,
		"gatewayDNS", m.gatewayDNS.Count(), "clusters", len(m.clusters.GetStore().ListKeys()))
	if ready != nil {
		close(ready)
	}
	var running sync.WaitGroup
	running.Go(func() { m.gatewayDNS.Run(ctx) })
	if m.sets != nil {
		running.Go(func() { m.sets.Run(ctx) })
	}
	running.Wait()
	// Writes still running in the background end with ctx.
	m.lanes.Stop()
	logger.Info("Workers stopped")
	return nil
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
