package clusterset

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/mcs/member"
)

// destinations are the workload API servers (with their slice namespace:
// workload.Cluster.Destination) the ClusterSets write, each held by one
// member of one ClusterSet. A write holds every object of the controller
// in its member that it does not want as its own to delete, so two
// ClusterSets whose Clusters reach one API server (two Cluster objects,
// in one namespace or two) would each delete the other's imports, and two
// members of one set would write it twice under two cluster ids.
//
// The oldest ClusterSet (creationTimestamp, then key) holds a destination,
// and of its Clusters the first by name; every other Cluster reaching it
// is refused (ReasonSharedAPIServer) and handed over as a Cluster another
// set has: not cleaned, as the holder's writes replace what was there.
type destinations struct {
	mu   sync.Mutex
	held map[string]destinationClaim
	// changed is called with the key of a ClusterSet whose members may
	// change: it lost a destination, or one it was refused was let go.
	changed func(set string)
	// waiting are, per destination, the ClusterSets refused it.
	waiting map[string]map[string]bool
}

// destinationClaim is the member holding a destination.
type destinationClaim struct {
	set     string
	created time.Time
	cluster string
}

// before reports whether c comes before o: older set, then set key, then
// Cluster name.
func (c destinationClaim) before(o destinationClaim) bool {
	if !c.created.Equal(o.created) {
		return c.created.Before(o.created)
	}
	if c.set != o.set {
		return c.set < o.set
	}
	return c.cluster < o.cluster
}

func newDestinations(changed func(string)) *destinations {
	return &destinations{held: map[string]destinationClaim{}, waiting: map[string]map[string]bool{}, changed: changed}
}

// claim gives dest to want unless a claim that comes before it holds it,
// which it then returns.
func (d *destinations) claim(dest string, want destinationClaim) (destinationClaim, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.held[dest]
	if ok && cur != want && cur.before(want) {
		if d.waiting[dest] == nil {
			d.waiting[dest] = map[string]bool{}
		}
		d.waiting[dest][want.set] = true
		return cur, false
	}
	d.held[dest] = want
	if ok && cur.set != want.set {
		d.changed(cur.set)
	}
	return want, true
}

// heldBy adds to keep the destinations set holds for its Cluster cluster.
func (d *destinations) heldBy(set, cluster string, keep map[string]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for dest, c := range d.held {
		if c.set == set && c.cluster == cluster {
			keep[dest] = true
		}
	}
}

// release lets go of every destination set holds but those in keep, and
// syncs again the sets that were refused one.
func (d *destinations) release(set string, keep map[string]bool) {
	d.mu.Lock()
	var wake []string
	for dest, c := range d.held {
		if c.set != set || keep[dest] {
			continue
		}
		delete(d.held, dest)
		for w := range d.waiting[dest] {
			wake = append(wake, w)
		}
		delete(d.waiting, dest)
	}
	for dest, w := range d.waiting {
		if delete(w, set); len(w) == 0 {
			delete(d.waiting, dest)
		}
	}
	d.mu.Unlock()
	for _, w := range wake {
		if w != set {
			d.changed(w)
		}
	}
}

// claimDestinations keeps, of members, those holding their destination,
// refusing the others into res and others (handed over, not cleaned), and
// lets go of the destinations the set no longer has. A member whose slice
// namespace has not been read (just connected, or reconnecting) may reach
// an API server another set holds: it is kept but not written
// (destUnknown), and keeps what its Cluster held, until it is known.
func (c *Reconciler) claimDestinations(key string, created time.Time, res member.Result, members []setMember,
	others map[string]bool) (member.Result, []setMember) {
	byName := slices.Clone(members)
	slices.SortFunc(byName, func(a, b setMember) int { return strings.Compare(a.Cluster, b.Cluster) })
	keep := map[string]bool{}
	refused := map[string]bool{}
	unknown := map[string]bool{}
	for _, m := range byName {
		if m.cluster == nil {
			continue
		}
		uid, has, synced := m.cluster.SliceNamespace(c.cfg.SliceNamespace)
		if !synced {
			unknown[m.Cluster] = true
			c.dests.heldBy(key, m.cluster.Key(), keep)
			continue
		}
		// No UID only in fakes; not installed is refused (member).
		dest := m.cluster.Destination(uid)
		if !has || dest == "" {
			continue
		}
		holder, ok := c.dests.claim(dest, destinationClaim{set: key, created: created, cluster: m.cluster.Key()})
		if ok {
			keep[dest] = true
			continue
		}
		refused[m.Cluster] = true
		others[m.cluster.Key()] = true
		res.Refused = append(res.Refused, member.Member{Cluster: m.Cluster, Reason: xccv1alpha1.ReasonSharedAPIServer,
			Message: fmt.Sprintf("Cluster %s of ClusterSet %s reaches the same API server and slice namespace, and is the member there",
				holder.cluster, holder.set)})
	}
	c.dests.release(key, keep)
	members = slices.Clone(members)
	for i := range members {
		members[i].destUnknown = unknown[members[i].Cluster]
	}
	if len(refused) == 0 {
		return res, members
	}
	slices.SortFunc(res.Refused, func(a, b member.Member) int { return strings.Compare(a.Cluster, b.Cluster) })
	res.Members = slices.DeleteFunc(slices.Clone(res.Members), func(m member.Member) bool { return refused[m.Cluster] })
	return res, slices.DeleteFunc(members, func(m setMember) bool { return refused[m.Cluster] })
}
