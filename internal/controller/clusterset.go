package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// The Multi-Cluster Services half of the controller: ClusterSets, each
// synced by its own queue and the same pipeline as a GatewayDNS (read the
// members, aggregate, compute each member's objects, write them, status).
// It shares the Cluster and Secret informers and the workload
// connections; the users it registers with them are ClusterSet keys
// behind clusterSetUser, so the two halves never release each other's
// informers or take each other's events.

// clusterSetUser prefixes a ClusterSet's key where the workload
// connections name their users.
const clusterSetUser = "clusterset:"

// clusterSetQueue is the work queue name of ClusterSets.
const clusterSetQueue = "xcc-dns-clusterset"

// clusterSets is the state of the ClusterSet half.
type clusterSets struct {
	informer cache.SharedIndexInformer
	queue    *watch.Queue
	// lanes write into each member one write at a time, in the
	// background: a slow or frozen member delays only itself.
	lanes *lane.Set

	mu sync.Mutex
	// memory is what each ClusterSet's syncs remember, by key.
	memory map[string]*setMemory
}

// setMemory is what the controller remembers of one ClusterSet between
// syncs. written and exports are kept in the controller's state too
// (clusterset_state.go), for the next controller to start from: neither
// can be read back from the members, whose admins write what they like.
type setMemory struct {
	uid types.UID
	// exports are the last exports read from each member, by cluster id:
	// a member that cannot be read keeps them, as gateway names keep a
	// cluster's last records, so an outage neither moves an import's
	// winner nor removes it.
	exports map[string]memberRead
	// written are the Clusters (keys) that may hold objects of this
	// ClusterSet, each with the cluster id it was written under: where
	// removal must go. By Cluster, not by id: a member that changes its
	// id, or another that asks for it, must not hide it from removal.
	written map[string]string
	// held is the cluster id each member joined with, by Cluster key: a
	// member keeps it until it leaves or asks for another (package member).
	held map[string]heldID
	// recovered: written and exports were given what the controller's
	// state keeps (recoverClusterSet), once per ClusterSet after the
	// start, so a removal and an unreachable member's imports outlive a
	// restart.
	recovered bool
	// damaged: the kept state could not be read, so written may lack
	// members that hold objects; a removal then also cleans the members
	// the ClusterSet selects now.
	damaged bool
	// members are, by Cluster key, what the last writes of a member
	// built and settled (memberMemo): a write builds and plans only the
	// imports that changed.
	members map[string]*memberMemo
	// saved is the sha256 of what the state holds, as
	// state.EncodeClusterSet wrote it (a hash: the encoding can be large);
	// unknown while savedKnown is false.
	saved      [sha256.Size]byte
	savedKnown bool
}

// heldID is the cluster id a Cluster (of UID uid) holds as a member.
type heldID struct {
	uid types.UID
	id  string
}

// memoryOf returns the memory of the ClusterSet key, new when the key
// names another object (uid) than remembered.
func (s *clusterSets) memoryOf(key string, uid types.UID) *setMemory {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.memory[key]
	if m == nil || (uid != "" && m.uid != uid) {
		m = &setMemory{uid: uid, exports: map[string]memberRead{}, written: map[string]string{}, held: map[string]heldID{},
			members: map[string]*memberMemo{}}
		s.memory[key] = m
	}
	return m
}

func (s *clusterSets) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.memory, key)
}

// enqueueClusterSetsIn enqueues every ClusterSet of namespace: a Cluster,
// a kubeconfig Secret or another ClusterSet there changes their members.
func (c *Controller) enqueueClusterSetsIn(namespace string) {
	if c.sets == nil {
		return
	}
	objs, err := c.sets.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("list ClusterSets in %q: %w", namespace, err))
		return
	}
	for _, o := range objs {
		c.sets.queue.Enqueue(o)
	}
}

// clusterSetUsers splits the users of a workload informer into
// GatewayDNS keys and ClusterSet keys.
func clusterSetUsers(users []string) (gatewayDNS, sets []string) {
	for _, u := range users {
		if key, ok := strings.CutPrefix(u, clusterSetUser); ok {
			sets = append(sets, key)
		} else {
			gatewayDNS = append(gatewayDNS, u)
		}
	}
	return gatewayDNS, sets
}

// toClusterSet converts the informer's object.
func toClusterSet(obj any) (*xccv1alpha1.ClusterSet, error) {
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
func (c *Controller) syncClusterSetKey(ctx context.Context, key string) error {
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "clusterSet", key))
	c.cfg.Metrics.Syncs.Inc()
	obj, exists, err := c.sets.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return fmt.Errorf("get ClusterSet %s from cache: %w", key, err)
	}
	if !exists {
		klog.FromContext(ctx).V(2).Info("ClusterSet gone; removing its imports")
		return c.removeClusterSet(ctx, key, "")
	}
	cs, err := toClusterSet(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	if cs.DeletionTimestamp != nil {
		return c.syncClusterSetDeleting(ctx, key, cs)
	}
	if !hasSetFinalizer(cs) {
		// Before anything is written: every object in a member is then
		// one the finalizer waits for.
		if err := c.addSetFinalizer(ctx, cs); err != nil {
			return err
		}
	}
	return c.syncClusterSet(ctx, key, cs)
}

// syncClusterSetDeleting removes the objects of cs, which is being
// deleted, from every member holding them, and its finalizer once they
// are gone; until then status says which members still hold them, and
// the queue retries with backoff.
func (c *Controller) syncClusterSetDeleting(ctx context.Context, key string, cs *xccv1alpha1.ClusterSet) error {
	if !hasSetFinalizer(cs) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("ClusterSet being deleted; removing its imports")
	if err := c.noteMembersIfDamaged(ctx, key, cs); err != nil {
		return err
	}
	if err := c.removeClusterSet(ctx, key, cs.UID); err != nil {
		return errors.Join(err, c.reportSetRemoval(ctx, cs, err))
	}
	return c.removeSetFinalizer(ctx, cs)
}

// noteMembersIfDamaged adds, when the kept state of cs could not be read,
// the members cs selects now to those its removal cleans: the state
// would have named every member holding its objects, and without it a
// deletion after a restart would remove nothing. A member that left
// while no controller ran is still missed; the log says the state was
// damaged.
func (c *Controller) noteMembersIfDamaged(ctx context.Context, key string, cs *xccv1alpha1.ClusterSet) error {
	mem := c.sets.memoryOf(key, cs.UID)
	if err := c.recoverClusterSet(ctx, mem, key, cs.UID); err != nil || !mem.damaged {
		return err
	}
	user := clusterSetUser + key
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
func (c *Controller) clusterSetFailed(ctx context.Context, key string, err error, retries int) {
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
	c.cfg.Metrics.SyncErrors.Inc()
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

// newClusterSets registers the ClusterSet informer and queue of c.
func (c *Controller) newClusterSets() *clusterSets {
	s := &clusterSets{memory: map[string]*setMemory{}}
	s.queue = watch.New(watch.Config{Name: clusterSetQueue, Sync: c.syncClusterSetKey, Failed: c.clusterSetFailed})
	// A write that ended after its sync stopped waiting syncs its set
	// again, for the status to say what came of it.
	s.lanes = lane.NewSet(lane.Config{Done: s.queue.Add})
	s.informer = c.dynInf.ForResource(xccv1alpha1.ClusterSetResource).Informer()
	c.synced = append(c.synced, s.informer.HasSynced)
	// Every ClusterSet of the namespace: which one owns a Cluster
	// selected by two depends on both.
	_, _ = s.informer.AddEventHandler(watch.OnEvent(func(obj any) {
		s.queue.Enqueue(obj)
		if m := watch.Meta(obj); m != nil {
			c.enqueueClusterSetsIn(m.GetNamespace())
		}
	}))
	return s
}

// keptRetry is how often the start retries listing what the state keeps.
const keptRetry = 10 * time.Second

// enqueueKeptClusterSets syncs every ClusterSet the controller's state
// keeps something of and that no longer exists: one deleted while no
// controller ran, past its finalizer (removed by hand, or made before
// the finalizer was), would have no event to remove its objects by.
// Retried until the list succeeds or ctx ends.
func (c *Controller) enqueueKeptClusterSets(ctx context.Context) {
	if c.sets == nil || c.cfg.State == nil {
		return
	}
	_ = wait.PollUntilContextCancel(ctx, keptRetry, true, func(ctx context.Context) (bool, error) {
		keys, err := c.cfg.State.ClusterSetKeys(ctx)
		if err != nil {
			klog.FromContext(ctx).Info("Listing the kept ClusterSets failed; retrying", "err", err)
			return false, nil
		}
		for _, key := range keys {
			if _, exists, err := c.sets.informer.GetIndexer().GetByKey(key); err == nil && !exists {
				c.sets.queue.Add(key)
			}
		}
		return true, nil
	})
}
