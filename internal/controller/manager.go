package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/clusterset"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/gatewaydns"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
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
	// MemberSyncsPerSecond bounds the ClusterSet syncs one member's
	// events cause; zero is clusterset.DefaultMemberSyncsPerSecond.
	MemberSyncsPerSecond int
}

// Manager builds what the two reconcilers share once (the management
// informers, the kubeconfig Secret cache, the workload connections and
// the metrics), hands it to both, and runs them side by side. Neither
// reconciler knows the other: the events that concern both (a Cluster,
// a kubeconfig Secret, a workload cluster's slice namespace or Service)
// are sent to each from here.
type Manager struct {
	cfg Config
	// engine is what both reconcilers run on (package mgmt): the
	// management informers, the workload connections, the lanes.
	engine mgmt.Engine
	synced []cache.InformerSynced

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
	m := &Manager{cfg: cfg}
	// The engine both reconcilers run on.
	engine := mgmt.NewEngine(mgmt.EngineConfig{
		Dynamic:         cfg.Dynamic,
		Kube:            cfg.Kube,
		ClusterResource: cfg.ClusterResource,
		Resync:          cfg.Resync,
		NewClient:       cfg.NewClient,
		SliceNamespace:  cfg.SliceNamespace,
		ReadLimits:      cfg.ReadLimits,
		Gauge:           func(n int) { cfg.Metrics.ClustersWatched.Set(float64(n)) },
		Written:         cfg.Metrics.targetWritten,
		EnqueueIn:       m.enqueueIn,
		OnService:       m.serviceChanged,
		OnMember:        m.memberChanged,
		Own:             clusterset.OwnKinds(),
		ExportCache:     clusterset.ExportCache,
	})
	m.engine = engine
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
	m.synced = append(engine.Synced(), m.gatewayDNS.HasSynced)
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

			MemberSyncsPerSecond: cfg.MemberSyncsPerSecond,
		})
		m.synced = append(m.synced, m.sets.HasSynced)
	}
	cfg.Metrics.attach(engine.Workloads)
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

// memberChanged hands the users of a clusterset member's informer that
// changed to the ClusterSet reconciler, which bounds each member's rate.
func (m *Manager) memberChanged(cluster string, users []string) {
	if m.sets != nil {
		m.sets.MemberChanged(cluster, users)
	}
}

// Run starts the informers, waits for their caches, and runs both
// reconcilers until ctx ends; it returns once both have stopped. ready
// is closed once the caches have synced.
func (m *Manager) Run(ctx context.Context, ready chan<- struct{}) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "clusterResource", m.cfg.ClusterResource.String(),
		"sliceNamespace", m.cfg.SliceNamespace, "domain", m.cfg.Domain, "allowedCIDRs", m.cfg.AllowedCIDRs.String())
	m.engine.Start(ctx)
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), m.synced...) {
		return errors.New("informer caches did not sync")
	}
	logger.Info("Caches synced; starting workers", "count", m.cfg.Workers,
		"gatewayDNS", m.gatewayDNS.Count(), "clusters", len(m.engine.Clusters.GetStore().ListKeys()))
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
	m.engine.Stop()
	logger.Info("Workers stopped")
	return nil
}
