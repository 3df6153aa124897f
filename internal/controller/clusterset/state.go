package clusterset

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// recoverClusterSet gives mem, on the first sync of key since the start,
// what the controller's state keeps of the ClusterSet: the members that
// hold its objects (so a removal reaches them though they were written
// by the controller before this one) and, when the state is of this
// ClusterSet (uid; "" takes any), each member's last read (so a member
// unreachable now keeps its imports in the others). What is in memory
// already wins. A damaged state is logged and taken as none: the
// controller then knows what it knew before it kept state.
func (c *Reconciler) recoverClusterSet(ctx context.Context, mem *setMemory, key string, uid types.UID) error {
	if c.cfg.State == nil || mem.recovered {
		return nil
	}
	kept, err := c.cfg.State.LoadClusterSet(ctx, key)
	switch {
	case errors.Is(err, state.ErrDamaged):
		klog.FromContext(ctx).Info("The kept state of the ClusterSet is damaged; starting without it", "err", err)
		mem.damaged = true
	case err != nil:
		return fmt.Errorf("read the kept state of ClusterSet %s: %w", key, err)
	case kept != nil:
		for id, cluster := range kept.Written {
			if _, ok := mem.written[cluster]; !ok {
				mem.written[cluster] = id
			}
		}
		for key, k := range kept.Clusters {
			if _, ok := mem.written[key]; !ok && k.Written {
				mem.written[key] = k.WrittenID
			}
			if _, ok := mem.held[key]; !ok && k.ID != "" {
				mem.held[key] = heldID{uid: types.UID(k.UID), id: k.ID}
			}
		}
		if uid == "" || kept.UID == string(uid) {
			for id, m := range kept.Members {
				if _, ok := mem.exports[id]; !ok {
					mem.exports[id] = readOfKept(id, m)
				}
			}
		}
		if data, err := state.EncodeClusterSet(*kept); err == nil {
			mem.saved, mem.savedKnown = sha256.Sum256(data), true
		}
	}
	mem.recovered = true
	return nil
}

// saveClusterSet keeps what mem remembers of key in the controller's
// state when it differs from what the state is known to hold: a sync
// that changed no member's exports or endpoints writes nothing. A last
// read too large to keep is left out and logged (state.SaveClusterSet):
// only a restart while that member is unreachable then loses its
// imports elsewhere.
func (c *Reconciler) saveClusterSet(ctx context.Context, mem *setMemory, key string) error {
	if c.cfg.State == nil {
		return nil
	}
	of := stateSum(mem)
	if of != 0 && of == mem.savedOf {
		return nil
	}
	kept := keptOf(mem)
	data, err := state.EncodeClusterSet(kept)
	if err != nil {
		return err
	}
	if len(kept.Clusters) == 0 && len(kept.Members) == 0 {
		data = nil
	}
	sum := sha256.Sum256(data)
	if mem.savedKnown && mem.saved == sum {
		mem.savedOf = of
		return nil
	}
	dropped, err := c.cfg.State.SaveClusterSet(ctx, key, kept)
	for _, id := range dropped {
		klog.FromContext(ctx).Info("Last exports of a member too large to keep across a restart", "member", id,
			"limit", state.MaxClusterSetBytes)
	}
	if err != nil && !errors.Is(err, state.ErrTooLarge) {
		return fmt.Errorf("keep the state of ClusterSet %s: %w", key, err)
	}
	if err != nil {
		// Not an error to retry: the same members make the same size.
		klog.FromContext(ctx).Info("The members of the ClusterSet are too many to keep across a restart", "err", err)
	}
	mem.saved, mem.savedKnown, mem.savedOf = sum, true, of
	return nil
}

// stateSum is a sum of what keptOf makes the state of: the Clusters
// written and held, and each member's last read by its readSum; 0 when a
// read has none (kept across a restart), which only the encoding can
// compare.
func stateSum(mem *setMemory) uint64 {
	sum := uint64(1)
	for key, id := range mem.written {
		sum += hashOf("written\x00"+key, id).Sum64()
	}
	for key, h := range mem.held {
		sum += hashOf("held\x00"+key, string(h.uid)+"\x00"+h.id).Sum64()
	}
	for id, r := range mem.exports {
		if r.sum == 0 {
			return 0
		}
		sum += hashOf("read\x00"+id, uint64String(r.sum)).Sum64()
	}
	if sum == 0 {
		sum = 1
	}
	return sum
}

// forgetClusterSetState removes what the state keeps of key: its removal
// is done.
func (c *Reconciler) forgetClusterSetState(ctx context.Context, key string) error {
	if c.cfg.State == nil {
		return nil
	}
	if _, err := c.cfg.State.SaveClusterSet(ctx, key, state.ClusterSet{}); err != nil {
		return fmt.Errorf("forget the state of ClusterSet %s: %w", key, err)
	}
	return nil
}

// keptOf is what the state keeps of mem: the Clusters written, the id
// each member holds, and each member's last complete read.
func keptOf(mem *setMemory) state.ClusterSet {
	kept := state.ClusterSet{UID: string(mem.uid), Members: map[string]state.MemberRead{}}
	if len(mem.written)+len(mem.held) > 0 {
		kept.Clusters = map[string]state.Cluster{}
	}
	for key, id := range mem.written {
		kept.Clusters[key] = state.Cluster{Written: true, WrittenID: id}
	}
	for key, h := range mem.held {
		k := kept.Clusters[key]
		k.UID, k.ID = string(h.uid), h.id
		kept.Clusters[key] = k
	}
	for id, r := range mem.exports {
		kept.Members[id] = keptRead(r)
	}
	return kept
}

// keptRead is the part of a member's read that the aggregate and the
// imports' endpoints need: its exports, and of each export's
// EndpointSlices what objects.Compute and contract.ReadyEndpoints read.
// Node names are left out: they are kept only for the member's own
// imports, which are written only from a fresh read.
func keptRead(r memberRead) state.MemberRead {
	var m state.MemberRead
	for _, x := range r.exports {
		k := state.Export{Namespace: x.Namespace, Name: x.Name, Created: x.Created.UTC(), Seen: x.Seen.UTC(), OverLimit: x.OverLimit, Service: x.Service,
			Labels: x.Labels, Annotations: x.Annotations}
		for _, s := range r.endpoints[aggregate.Key{Namespace: x.Namespace, Name: x.Name}] {
			if s != nil {
				k.Slices = append(k.Slices, trimmedSlice(s))
			}
		}
		m.Exports = append(m.Exports, k)
	}
	return m
}

func trimmedSlice(s *discoveryv1.EndpointSlice) discoveryv1.EndpointSlice {
	out := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: s.Name}, AddressType: s.AddressType, Ports: s.Ports}
	for _, ep := range s.Endpoints {
		out.Endpoints = append(out.Endpoints, discoveryv1.Endpoint{Addresses: ep.Addresses, Conditions: ep.Conditions, Hostname: ep.Hostname})
	}
	return out
}

// readOfKept is a kept read as readMembers remembers one: exports and
// endpoints, never synced (it is no read of this controller's).
func readOfKept(id string, m state.MemberRead) memberRead {
	r := memberRead{id: id, endpoints: map[aggregate.Key][]*discoveryv1.EndpointSlice{}}
	for _, k := range m.Exports {
		r.exports = append(r.exports, aggregate.Export{Cluster: id, Namespace: k.Namespace, Name: k.Name,
			Created: k.Created, Seen: k.Seen, Service: k.Service, OverLimit: k.OverLimit, Labels: k.Labels, Annotations: k.Annotations})
		if len(k.Slices) == 0 {
			continue
		}
		slices := make([]*discoveryv1.EndpointSlice, 0, len(k.Slices))
		for i := range k.Slices {
			slices = append(slices, &k.Slices[i])
		}
		r.endpoints[aggregate.Key{Namespace: k.Namespace, Name: k.Name}] = slices
	}
	return r
}
