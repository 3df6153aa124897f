package clusterset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// removeMember takes every object of a clusterset out of the member w:
// its MCS objects (only those labelled the controller's), its contract
// slices and its east-west objects.
func (c *Reconciler) removeMember(ctx context.Context, m setMember) error {
	client, ok := memberClient(m)
	if !ok {
		return nil
	}
	client = apply.Observed(client, c.seen(m.cluster))
	existing, err := apply.List(ctx, client)
	if err != nil {
		return err
	}
	contractSlices, err := c.listClusterSetSlices(ctx, m.cluster.Key(), client)
	if err != nil {
		return err
	}
	res, err := apply.Apply(ctx, client, objects.Objects{}, existing, metav1.Now())
	if errors.Is(err, apply.ErrNotAnswering) {
		return err
	}
	if len(res.Refused) > 0 {
		// A removal is done only when nothing is left: a refused delete
		// is tried again like any other failure.
		err = errors.Join(err, refusedError(res.Refused))
	}
	return errors.Join(err, c.writeClusterSetSlices(ctx, m.cluster.Key(), client.Slices(c.cfg.SliceNamespace), nil, contractSlices, contractWant{}),
		removeEastWest(ctx, m))
}

// removeLeftMembers removes the objects of the clusterset from the
// Clusters that were members and are not now (unselected, refused,
// deleted); one that cannot be reached, or whose removal is still
// running in its lane, is tried again at the next sync.
// A Cluster that another ClusterSet now has (others) is handed over, not
// cleaned: that set's sync replaces every object of the controller there
// with its own, and a removal racing it could delete what it wrote.
func (c *Reconciler) removeLeftMembers(ctx context.Context, key string, mem *setMemory, members []setMember, others map[string]bool, user string) {
	now := map[string]bool{}
	for _, m := range members {
		if m.cluster != nil {
			now[m.cluster.Key()] = true
		}
	}
	var left []string
	for cluster, id := range mem.written {
		switch {
		case now[cluster]:
		case others[cluster]:
			klog.FromContext(ctx).V(2).Info("A former member is another ClusterSet's now; its objects are left to that set", "member", id, "cluster", cluster)
			delete(mem.written, cluster)
		default:
			left = append(left, cluster)
		}
	}
	slices.Sort(left)
	errs := c.removeFromAll(ctx, key, mem, left, user)
	for i, cluster := range left {
		if errs[i] != nil && !c.clusterGone(ctx, mem.written[cluster], cluster, errs[i]) {
			klog.FromContext(ctx).Info("Removing the imports of a former member failed; retried at the next sync", "member", mem.written[cluster], "cluster", cluster, "err", errs[i])
			continue
		}
		delete(mem.written, cluster)
	}
	// What is known built and settled goes with what is known written.
	for cluster := range mem.members {
		if _, ok := mem.written[cluster]; !ok {
			delete(mem.members, cluster)
		}
	}
}

// errRemoving is the error of a removal still running in its member's
// lane when its sync stopped waiting: it is waited for again at the next.
var errRemoving = errors.New("the removal is still running")

// removeFromAll removes the clusterset's objects from each Cluster of
// clusters (keys of mem.written), each in its lane, and returns the
// error of each, errRemoving for one still running.
func (c *Reconciler) removeFromAll(ctx context.Context, key string, mem *setMemory, clusters []string, user string) []error {
	errs := make([]error, len(clusters))
	logger := klog.FromContext(ctx)
	var started []*lane.Write
	var at []int
	all := make([]error, len(clusters))
	for i, cluster := range clusters {
		sm, err := c.connectMember(mem.written[cluster], cluster, user)
		if err != nil {
			errs[i] = err
			continue
		}
		at = append(at, i)
		started = append(started, c.submit(cluster, key, &all[i], func(ctx context.Context) error {
			return c.removeMember(klog.NewContext(ctx, logger), sm)
		}))
	}
	for j, res := range c.lanes.Wait(ctx, started) {
		if errs[at[j]] = writeError(res.Err, all[at[j]]); !res.Ended {
			errs[at[j]] = errRemoving
		}
	}
	return errs
}

// clusterGone reports, for a removal from the Cluster key that failed
// with err, whether the Cluster is gone or being deleted: its objects go
// with it, and its kubeconfig Secret with them, so it is not waited for.
func (c *Reconciler) clusterGone(ctx context.Context, id, key string, err error) bool {
	obj, exists, cerr := c.cfg.Clusters.GetIndexer().GetByKey(key)
	if cerr != nil {
		return false
	}
	if m := watch.Meta(obj); exists && m != nil && m.GetDeletionTimestamp() == nil {
		return false
	}
	klog.FromContext(ctx).Info("The Cluster of a member to clean is gone; its imports are not removed", "member", id, "cluster", key, "err", err)
	return true
}

// connectMember is the connection to the Cluster key
// (<namespace>/<name>), cluster id id, for a removal.
func (c *Reconciler) connectMember(id, key, user string) (setMember, error) {
	namespace, name, _ := strings.Cut(key, "/")
	sm, err := c.connect(namespace, name, user)
	if err != nil {
		return sm, err
	}
	if sm.cluster == nil {
		return sm, errors.New(sm.access)
	}
	sm.ClusterID = id
	return sm, nil
}

// removeClusterSet removes what the ClusterSet key (uid; "" when it is
// gone) made, in every member holding its objects, as the controller's
// state lists them after a restart, and forgets it once that is done.
// A member that cannot be reached fails the removal, which is retried;
// one whose Cluster is gone is not waited for.
func (c *Reconciler) removeClusterSet(ctx context.Context, key string, uid types.UID) error {
	mem := c.memoryOf(key, uid)
	if err := c.recoverClusterSet(ctx, mem, key, uid); err != nil {
		return err
	}
	user := userOf(key)
	clusters := slices.Sorted(maps.Keys(mem.written))
	removed := c.removeFromAll(ctx, key, mem, clusters, user)
	var errs, running []error
	for i, cluster := range clusters {
		switch {
		case errors.Is(removed[i], errRemoving):
			running = append(running, fmt.Errorf("member %s (Cluster %s): %w", mem.written[cluster], cluster, removed[i]))
		case removed[i] != nil && !c.clusterGone(ctx, mem.written[cluster], cluster, removed[i]):
			errs = append(errs, fmt.Errorf("member %s (Cluster %s): %w", mem.written[cluster], cluster, removed[i]))
		default:
			delete(mem.written, cluster)
		}
	}
	if len(errs) == 0 {
		// Only removals still running: waited for (errRemoving), not a
		// failure to report.
		errs = running
	} else {
		for _, r := range running {
			errs = append(errs, errors.New(r.Error()))
		}
	}
	if len(errs) > 0 {
		c.cfg.Workloads.Release(user, c.removalConnections(mem))
		return fmt.Errorf("remove the imports of ClusterSet %s: %w", key, errors.Join(errs...))
	}
	if err := c.forgetClusterSetState(ctx, key); err != nil {
		return err
	}
	c.cfg.Workloads.Release(user, nil)
	c.forget(key)
	c.dests.release(key, nil)
	c.cfg.Metrics.forget(key)
	return nil
}

// removalConnections keeps the connections to the members a removal has
// still to reach, for Release: none of their informers is needed.
func (c *Reconciler) removalConnections(mem *setMemory) map[string]map[string]bool {
	keep := map[string]map[string]bool{}
	for cluster := range mem.written {
		keep[cluster] = map[string]bool{}
	}
	return keep
}
