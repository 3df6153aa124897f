package clusterset

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// syncClusterSet brings the imports of one ClusterSet in line, in the
// steps of a GatewayDNS sync: read every member (caches only), aggregate
// (pure), compute each member's objects (pure), write them, status.
func (c *Reconciler) syncClusterSet(ctx context.Context, key string, cs *xccv1alpha1.ClusterSet) error {
	mem := c.memoryOf(key, cs.UID)
	// Without what the last controller knew, an unreachable member's
	// imports would go from the others at this sync: wait for it.
	if err := c.recoverClusterSet(ctx, mem, key, cs.UID); err != nil {
		return err
	}
	user := userOf(key)
	res, members, others, err := c.membership(cs, mem, user)
	if err != nil {
		return err
	}
	res, members = c.claimDestinations(key, cs.CreationTimestamp.Time, res, members, others)
	c.holdIDs(cs, mem, res, members)
	keep := map[string]map[string]bool{}
	reads := c.readMembers(mem, members, user, keep)
	agg, err := aggregate.Aggregate(exportsOf(reads))
	if err != nil {
		// Only input the readers never make (an empty cluster id) fails.
		return fmt.Errorf("aggregate the exports of %s: %w", key, err)
	}
	if err := c.noteWritten(ctx, mem, key, members, reads); err != nil {
		c.cfg.Workloads.Release(user, keep)
		return err
	}
	ew := c.readEastWest(cs, members, agg, user, keep)
	written := c.writeMembers(ctx, key, mem, members, reads, agg, ew)
	c.removeLeftMembers(ctx, key, mem, members, others, user)
	c.cfg.Workloads.Release(user, keep)
	stateErr := c.saveClusterSet(ctx, mem, key)
	st := clusterSetStatus(cs, res, members, reads, agg, written)
	c.cfg.Metrics.observe(key, st, len(res.Refused), members, reads, agg, written)
	if err := c.updateClusterSetStatus(ctx, cs, st); err != nil {
		return errors.Join(err, stateErr)
	}
	klog.FromContext(ctx).V(2).Info("Synced ClusterSet", "members", len(members), "imports", len(agg.Imports), "failed", len(written.errs))
	return errors.Join(written.err(), stateErr)
}

// noteWritten adds the members this sync writes to those holding objects
// of the ClusterSet, and keeps the list in the controller's state before
// anything is written there: a controller that stops between the write
// and the save would otherwise leave objects no removal knows of.
func (c *Reconciler) noteWritten(ctx context.Context, mem *setMemory, key string, members []setMember, reads map[string]memberRead) error {
	added := false
	for _, m := range members {
		if writable(m, reads[m.ClusterID]) && mem.written[m.cluster.Key()] != m.ClusterID {
			mem.written[m.cluster.Key()] = m.ClusterID
			added = true
		}
	}
	if !added {
		return nil
	}
	return c.saveClusterSet(ctx, mem, key)
}
