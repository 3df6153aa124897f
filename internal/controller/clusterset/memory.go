package clusterset

import (
	"crypto/sha256"

	"k8s.io/apimachinery/pkg/types"
)

// setMemory is what the controller remembers of one ClusterSet between
// syncs. written and exports are kept in the controller's state too
// (state.go), for the next controller to start from: neither
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
	// versions number the imports, so a member's write can tell that
	// none changed since its last (changes.go).
	versions importVersions
	// saved is the sha256 of what the state holds, as
	// state.EncodeClusterSet wrote it (a hash: the encoding can be large);
	// unknown while savedKnown is false.
	saved      [sha256.Size]byte
	savedKnown bool
	// savedOf is stateSum of what the state was known to hold: equal, a
	// sync saves nothing without encoding it; 0 is unknown.
	savedOf uint64
}

// heldID is the cluster id a Cluster (of UID uid) holds as a member.
type heldID struct {
	uid types.UID
	id  string
}

// memoryOf returns the memory of the ClusterSet key, new when the key
// names another object (uid) than remembered.
func (c *Reconciler) memoryOf(key string, uid types.UID) *setMemory {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.memory[key]
	if m == nil || (uid != "" && m.uid != uid) {
		m = &setMemory{uid: uid, exports: map[string]memberRead{}, written: map[string]string{}, held: map[string]heldID{},
			members: map[string]*memberMemo{}}
		c.memory[key] = m
	}
	return m
}

func (c *Reconciler) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.memory, key)
}
