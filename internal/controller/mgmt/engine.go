package mgmt

import (
	"context"
	"fmt"
	"strings"
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

	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// Engine is what the controller builds once and both reconcilers run on:
// one watch of each management kind, one connection and cache per
// workload cluster, one writer into them. The controller starts and
// stops all of it; a reconciler only registers on it.
type Engine struct {
	// Dynamic is the management cluster: status and finalizers.
	Dynamic dynamic.Interface
	// Informers is the controller's dynamic informer factory; each
	// reconciler registers the informer of its own kind on it.
	Informers dynamicinformer.DynamicSharedInformerFactory
	// Clusters is the Cluster API Cluster informer.
	Clusters cache.SharedIndexInformer
	// Secrets is the cache of kubeconfig Secrets.
	Secrets corelisters.SecretLister
	// Workloads are the connections to the workload clusters and their
	// informers; each reconciler's users are its own keys.
	Workloads *workload.Set
	// Lanes are the writers into the workload clusters (package lane):
	// one backoff and one bound on the writes per cluster for both.
	Lanes *lane.Set

	// kubeInf is the Secret informer's factory.
	kubeInf informers.SharedInformerFactory
}

// EngineConfig is what NewEngine builds an Engine from. The callbacks
// run only once the Engine has started.
type EngineConfig struct {
	// Dynamic and Kube are the management cluster.
	Dynamic dynamic.Interface
	Kube    kubernetes.Interface
	// ClusterResource is the served version of cluster.x-k8s.io clusters.
	ClusterResource schema.GroupVersionResource
	// Resync is the dynamic informers' resync period.
	Resync time.Duration
	// NewClient builds workload cluster clients; SliceNamespace,
	// ReadLimits, Gauge and Written are the workload Set's.
	NewClient      workload.ClientFactory
	SliceNamespace string
	ReadLimits     workload.ReadLimits
	Gauge          func(clusters int)
	Written        func(workload.Writer, time.Duration, error)
	// EnqueueIn is called with the namespace of a Cluster or kubeconfig
	// Secret that changed, or of a Cluster whose workload cluster's
	// slice namespace did: every GatewayDNS and ClusterSet there may
	// change. OnService is called with the users of a workload informer
	// whose Service changed.
	EnqueueIn func(namespace string)
	OnService func(users []string)
	// OnMember is called instead of OnService for the informers of a
	// clusterset member, with the member's key (workload.Config).
	OnMember func(cluster string, users []string)
	// Own are the kinds the ClusterSet writer keeps of its own in each
	// member (workload.Config.Own, clusterset.OwnKinds).
	Own []workload.OwnKind
	// ExportCache is what each member's ServiceExport informer keeps of
	// an export (workload.Config.ExportCache).
	ExportCache cache.TransformFunc
	// Lanes configure the lanes (zero: lane's defaults).
	Lanes lane.Config
}

// NewEngine builds the engine: the management informers (Clusters, and
// Secrets cut to kubeconfigs, secretForCache), the workload connections
// and the lanes, with the events of Clusters and kubeconfig Secrets sent
// to cfg.EnqueueIn. The reconcilers register on it before Start.
func NewEngine(cfg EngineConfig) Engine {
	e := Engine{
		Dynamic:   cfg.Dynamic,
		Informers: dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, cfg.Resync),
		Lanes:     lane.NewSet(cfg.Lanes),
		kubeInf:   informers.NewSharedInformerFactory(cfg.Kube, 0),
	}
	e.Clusters = e.Informers.ForResource(cfg.ClusterResource).Informer()
	secrets := e.kubeInf.Core().V1().Secrets()
	_ = secrets.Informer().SetTransform(secretForCache)
	e.Secrets = secrets.Lister()
	gauge := cfg.Gauge
	if gauge == nil {
		gauge = func(int) {}
	}
	e.Workloads = workload.NewSet(workload.Config{
		NewClient:      cfg.NewClient,
		SliceNamespace: cfg.SliceNamespace,
		OnNamespace:    cfg.EnqueueIn,
		OnService:      cfg.OnService,
		OnMember:       cfg.OnMember,
		Gauge:          gauge,
		Limits:         cfg.ReadLimits,
		Own:            cfg.Own,
		ExportCache:    cfg.ExportCache,
		Written:        cfg.Written,
	})
	// A Cluster or a kubeconfig Secret changes the result of every
	// GatewayDNS and the members of every ClusterSet of its namespace.
	onClusterish := watch.OnEvent(func(obj any) {
		meta := watch.Meta(obj)
		if meta == nil {
			utilruntime.HandleError(fmt.Errorf("informer delivered %T", obj))
			return
		}
		cfg.EnqueueIn(meta.GetNamespace())
	})
	_, _ = e.Clusters.AddEventHandler(onClusterish)
	// A Cluster that is gone keeps no lane: one that failed or was slow
	// would otherwise be kept for its backoff as long as the controller
	// runs.
	_, _ = e.Clusters.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if meta := watch.Meta(obj); meta != nil {
			e.Lanes.Forget(meta.GetNamespace() + "/" + meta.GetName())
		}
	}})
	_, _ = secrets.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			meta := watch.Meta(obj)
			return meta != nil && strings.HasSuffix(meta.GetName(), workload.KubeconfigSecretSuffix)
		},
		Handler: onClusterish,
	})
	return e
}

// Start starts the workload connections, the lanes and the management
// informers (the reconcilers' among them), for as long as ctx lasts; the
// lanes stop with Stop.
func (e Engine) Start(ctx context.Context) {
	e.Workloads.Start(ctx)
	e.Lanes.Start(ctx)
	e.Informers.Start(ctx.Done())
	e.kubeInf.Start(ctx.Done())
}

// Synced are the management caches a sync needs: the Clusters and the
// kubeconfig Secrets. The slice is the caller's to append to.
func (e Engine) Synced() []cache.InformerSynced {
	// The factory hands back the one Secret informer NewEngine made.
	return []cache.InformerSynced{e.Clusters.HasSynced, e.kubeInf.Core().V1().Secrets().Informer().HasSynced}
}

// Stop waits for the writes still running in the lanes; they end with
// Start's context. Call it once both reconcilers have stopped.
func (e Engine) Stop() { e.Lanes.Stop() }

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
