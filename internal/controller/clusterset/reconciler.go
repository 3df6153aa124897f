package clusterset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// userOf is how the ClusterSet key names itself to the shared workload
// connections (workload.Set): prefixed, so a GatewayDNS and a ClusterSet
// of the same name never release each other's informers or take each
// other's events.
func userOf(key string) string { return clusterSetUser + key }

// clusterSetUser prefixes a ClusterSet's key where the workload
// connections name their users.
const clusterSetUser = "clusterset:"

// clusterSetQueue is the work queue name of ClusterSets.
const clusterSetQueue = "xcc-dns-clusterset"

// DefaultMaxExportsPerMember bounds the valid exports of one member of
// a clusterset: each import costs every member a ClusterIP and objects
// (docs/threat-model.md has the product of the limits).
const DefaultMaxExportsPerMember = 1000

// Finalizer keeps a ClusterSet until its objects (imports, derived
// Services, EndpointSlices, contract slices) are gone from every member
// that holds them.
const Finalizer = "xcc-dns.io/clusterset-cleanup"

// hasFinalizer reports whether cs holds Finalizer.
func hasFinalizer(cs *xccv1alpha1.ClusterSet) bool {
	return slices.Contains(cs.Finalizers, Finalizer)
}

// Config is what the reconciler takes from the controller that runs it.
// The informers, the kubeconfig Secret cache and the workload
// connections are the controller's, shared with the GatewayDNS
// reconciler: one watch of each kind, one connection per workload
// cluster. They are the shared objects themselves, not interfaces over
// them, since sharing them is the point (and client-go's interfaces
// already are the seam: a test hands fakes of the clients underneath,
// env_test.go). Everything else is this package's own.
type Config struct {
	// Engine is the controller's, shared with the other reconciler:
	// New registers the ClusterSet informer on its Informers.
	mgmt.Engine
	// SliceNamespace is where the contract slices are written in each
	// member (and whose presence opts a member in).
	SliceNamespace string
	// ClusterSetZone is the zone of the MCS DNS names (clusterset.local).
	ClusterSetZone string
	// AllowedCIDRs are the ranges every imported endpoint must lie in;
	// empty allows any.
	AllowedCIDRs cidr.List
	// MaxExportsPerMember bounds the valid exports of one member that a
	// clusterset imports; zero is DefaultMaxExportsPerMember.
	MaxExportsPerMember int
	// MemberLimits bound what one member puts into another over all its
	// imports; zero fields take the defaults of package objects.
	MemberLimits objects.Limits
	// Workers syncs this many ClusterSets at once.
	Workers int
	// MemberSyncsPerSecond bounds the syncs one member's events cause
	// (MemberChanged); zero is DefaultMemberSyncsPerSecond.
	MemberSyncsPerSecond int
	// State keeps what each ClusterSet wrote and read across a restart;
	// nil keeps nothing.
	State state.Store
	// Recorder records Events on ClusterSets.
	Recorder record.EventRecorder
	// Metrics are the ClusterSet gauges; Syncs and SyncErrors count its
	// syncs with the GatewayDNS ones.
	Metrics           *Metrics
	Syncs, SyncErrors prometheus.Counter
}

// Reconciler is the Multi-Cluster Services half of the controller:
// ClusterSets, each synced by its own queue in the steps of a GatewayDNS
// sync (read the members, aggregate, compute each member's objects,
// write them, status).
type Reconciler struct {
	cfg      Config
	informer cache.SharedIndexInformer
	queue    *watch.Queue
	// lanes write into each member in the background (Config.Lanes): a
	// slow or frozen member delays only itself.
	lanes *lane.Set
	// rate holds back the events of a member past its syncs a second.
	rate *memberRate

	// dests are the members' API servers, each held by one ClusterSet.
	dests *destinations

	mu sync.Mutex
	// memory is what each ClusterSet's syncs remember, by key.
	memory map[string]*setMemory
}

// New registers the ClusterSet informer and queue; Run starts the queue.
func New(cfg Config) *Reconciler {
	if cfg.MaxExportsPerMember == 0 {
		cfg.MaxExportsPerMember = DefaultMaxExportsPerMember
	}
	if cfg.MemberSyncsPerSecond == 0 {
		cfg.MemberSyncsPerSecond = DefaultMemberSyncsPerSecond
	}
	c := &Reconciler{cfg: cfg, memory: map[string]*setMemory{}, lanes: cfg.Lanes, rate: newMemberRate(cfg.MemberSyncsPerSecond)}
	c.queue = watch.New(watch.Config{Name: clusterSetQueue, Sync: c.syncClusterSetKey, Failed: c.clusterSetFailed})
	c.dests = newDestinations(func(set string) { c.queue.Add(set) })
	c.informer = cfg.Informers.ForResource(xccv1alpha1.ClusterSetResource).Informer()
	// Every ClusterSet of the namespace: which one owns a Cluster
	// selected by two depends on both.
	_, _ = c.informer.AddEventHandler(watch.OnEvent(func(obj any) {
		c.queue.Enqueue(obj)
		if m := watch.Meta(obj); m != nil {
			c.EnqueueIn(m.GetNamespace())
		}
	}))
	return c
}

// HasSynced reports whether the ClusterSet informer has listed.
func (c *Reconciler) HasSynced() bool { return c.informer.HasSynced() }

// Run runs the queue's workers, and enqueues the ClusterSets the state
// keeps and that are gone, until ctx ends. Writes still running in the
// members' lanes end with the lanes (Config.Lanes), which outlive it.
func (c *Reconciler) Run(ctx context.Context) {
	var kept sync.WaitGroup
	kept.Go(func() { c.enqueueKeptClusterSets(ctx) })
	c.queue.Run(ctx, c.cfg.Workers)
	kept.Wait()
}

// Add enqueues the ClusterSet key.
func (c *Reconciler) Add(key string) { c.queue.Add(key) }

// MemberChanged enqueues the ClusterSets among users (the users of a
// member's informers, Users) after an event of the member cluster
// ("<namespace>/<name>"): at once while the member is within its syncs a
// second, else once its next one is due, one enqueue for all the events
// until then.
func (c *Reconciler) MemberChanged(cluster string, users []string) {
	_, sets := Users(users)
	if len(sets) == 0 {
		return
	}
	d, log := c.rate.delay(cluster, time.Now())
	if d == 0 {
		for _, key := range sets {
			c.queue.Add(key)
		}
		return
	}
	c.cfg.Metrics.MemberEventsHeld.Inc()
	if log {
		klog.Background().Info("A member's changes come faster than --member-syncs-per-second; syncing them together",
			"cluster", cluster, "syncsPerSecond", c.cfg.MemberSyncsPerSecond, "held", heldToLog, "clusterSets", sets)
	}
	for _, key := range sets {
		c.queue.AddAfter(key, d)
	}
}

// written is the done func of a write of the ClusterSet key into a
// member: one that ended after its sync stopped waiting syncs the set
// again, for the status to say what came of it.
func (c *Reconciler) written(key string) func() { return func() { c.queue.Add(key) } }

// submit hands write, of the ClusterSet key into the Cluster cluster, to
// the cluster's lane. The lane is told only of the member's own failures
// (kubeclient.MemberFailure) and backs off the member for those; *all
// gets every error of the write, refusals of single objects too, for the
// status (read it once the write has ended).
func (c *Reconciler) submit(cluster, key string, all *error, write func(context.Context) error) *lane.Write {
	return c.lanes.Submit(cluster, key, func(ctx context.Context) error {
		*all = write(ctx)
		return kubeclient.MemberFailure(*all)
	}, c.written(key))
}

// writeError is the error of a write that ended with err in its lane,
// all being every error it had (submit): refusals count too.
func writeError(err, all error) error {
	if all != nil {
		return all
	}
	return err
}

// Users splits the users of a workload informer into GatewayDNS keys and
// ClusterSet keys.
func Users(users []string) (gatewayDNS, sets []string) {
	for _, u := range users {
		if key, ok := strings.CutPrefix(u, clusterSetUser); ok {
			sets = append(sets, key)
		} else {
			gatewayDNS = append(gatewayDNS, u)
		}
	}
	return gatewayDNS, sets
}

// EnqueueIn enqueues every ClusterSet of namespace: a Cluster, a
// kubeconfig Secret or another ClusterSet there changes their members.
func (c *Reconciler) EnqueueIn(namespace string) {
	c.queue.EnqueueNamespace(c.informer.GetIndexer(), namespace)
}

// decode converts an informer's (or the API's) object into a ClusterSet.
func decode(obj any) (*xccv1alpha1.ClusterSet, error) {
	u, ok := watch.Unwrap(obj).(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("ClusterSet informer delivered %T", obj)
	}
	cs := &xccv1alpha1.ClusterSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cs); err != nil {
		return nil, fmt.Errorf("decode ClusterSet %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return cs, nil
}

// syncClusterSetKey is the ClusterSet queue's sync.
func (c *Reconciler) syncClusterSetKey(ctx context.Context, key string) error {
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "clusterSet", key))
	c.cfg.Syncs.Inc()
	obj, exists, err := c.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return fmt.Errorf("get ClusterSet %s from cache: %w", key, err)
	}
	if !exists {
		klog.FromContext(ctx).V(2).Info("ClusterSet gone; removing its imports")
		return c.removeClusterSet(ctx, key, "")
	}
	cs, err := decode(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	if cs.DeletionTimestamp != nil {
		return c.syncClusterSetDeleting(ctx, key, cs)
	}
	if !hasFinalizer(cs) {
		// Before anything is written: every object in a member is then
		// one the finalizer waits for.
		if err := mgmt.AddFinalizer(ctx, c.cfg.Dynamic, xccv1alpha1.ClusterSetResource, cs, Finalizer); err != nil {
			return err
		}
	}
	return c.syncClusterSet(ctx, key, cs)
}

// syncClusterSetDeleting removes the objects of cs, which is being
// deleted, from every member holding them, and its finalizer once they
// are gone; until then status says which members still hold them, and
// the queue retries with backoff.
func (c *Reconciler) syncClusterSetDeleting(ctx context.Context, key string, cs *xccv1alpha1.ClusterSet) error {
	if !hasFinalizer(cs) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("ClusterSet being deleted; removing its imports")
	if err := c.noteMembersIfDamaged(ctx, key, cs); err != nil {
		return err
	}
	if err := c.removeClusterSet(ctx, key, cs.UID); err != nil {
		return errors.Join(err, c.reportSetRemoval(ctx, cs, err))
	}
	return mgmt.RemoveFinalizer(ctx, c.cfg.Dynamic, xccv1alpha1.ClusterSetResource, cs, Finalizer)
}

// noteMembersIfDamaged adds, when the kept state of cs could not be read,
// the members cs selects now to those its removal cleans: the state
// would have named every member holding its objects, and without it a
// deletion after a restart would remove nothing. A member that left
// while no controller ran is still missed; the log says the state was
// damaged.
func (c *Reconciler) noteMembersIfDamaged(ctx context.Context, key string, cs *xccv1alpha1.ClusterSet) error {
	mem := c.memoryOf(key, cs.UID)
	if err := c.recoverClusterSet(ctx, mem, key, cs.UID); err != nil || !mem.damaged {
		return err
	}
	user := userOf(key)
	_, members, _, err := c.membership(cs, mem, user)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.cluster != nil {
			mem.written[m.cluster.Key()] = m.ClusterID
		}
	}
	mem.damaged = false
	return nil
}

// clusterSetFailed reports a failed ClusterSet sync; the queue requeues it.
func (c *Reconciler) clusterSetFailed(ctx context.Context, key string, err error, retries int) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "clusterSet", key)
	if apierrors.IsConflict(err) {
		logger.V(2).Info("Conflict writing ClusterSet; requeued", "err", err.Error())
		return
	}
	if errors.Is(err, errRemoving) {
		// A removal still running in a member's lane is waited for, not
		// a failure: logged every half second at the error level, it
		// drowned the ones that are.
		logger.V(2).Info("Removal still running; requeued", "err", err.Error())
		return
	}
	c.cfg.SyncErrors.Inc()
	logger.Error(err, "ClusterSet sync failed; requeued", "retries", retries)
}

// exportsOf flattens the members' reads into the aggregator's input.
func exportsOf(reads map[string]memberRead) []aggregate.Export {
	var out []aggregate.Export
	for _, r := range reads {
		out = append(out, r.exports...)
	}
	return out
}

// keptRetry is how often the start retries listing what the state keeps.
const keptRetry = 10 * time.Second

// enqueueKeptClusterSets syncs every ClusterSet the controller's state
// keeps something of and that no longer exists: one deleted while no
// controller ran, past its finalizer (removed by hand, or made before
// the finalizer was), would have no event to remove its objects by.
// Retried until the list succeeds or ctx ends.
func (c *Reconciler) enqueueKeptClusterSets(ctx context.Context) {
	if c.cfg.State == nil {
		return
	}
	_ = wait.PollUntilContextCancel(ctx, keptRetry, true, func(ctx context.Context) (bool, error) {
		keys, err := c.cfg.State.ClusterSetKeys(ctx)
		if err != nil {
			klog.FromContext(ctx).Info("Listing the kept ClusterSets failed; retrying", "err", err)
			return false, nil
		}
		for _, key := range keys {
			if _, exists, err := c.informer.GetIndexer().GetByKey(key); err == nil && !exists {
				c.queue.Add(key)
			}
		}
		return true, nil
	})
}
