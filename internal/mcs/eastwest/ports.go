package eastwest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// Range is the ClusterSet's range of TCP listener ports, both ends in.
type Range struct{ First, Last int32 }

// Allocation is the TCP listener port of each export's TCP ports.
type Allocation struct {
	// Ports are, per export with a TCP port, its listener name to port.
	Ports map[aggregate.Key]map[string]int32
	// Refused say, per export, which of its TCP ports got none.
	Refused map[aggregate.Key][]string
}

// Keys are the exports of a, sorted.
func (a Allocation) Keys() []aggregate.Key {
	return slices.SortedFunc(maps.Keys(a.Ports), compareKeys)
}

func compareKeys(x, y aggregate.Key) int {
	return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
}

// Allocate gives each TCP-kind port of each export a port of r for its
// listener. The allocation is read from the member, never remembered: a
// port keeps the one its ListenerSet (among sets, the controller's of
// gateway ref) holds there while it is in r and no other listener
// holds it; a new one gets the lowest port of r that no listener of gw
// and of no ListenerSet of ref holds. Ports kept are settled first, so a
// new export never takes one; among exports, in namespace/name order.
func Allocate(ref Ref, r Range, gw *gatewayv1.Gateway, sets []*gatewayv1.ListenerSet, exports map[aggregate.Key][]aggregate.Port) Allocation {
	out := Allocation{Ports: map[aggregate.Key]map[string]int32{}, Refused: map[aggregate.Key][]string{}}
	taken := takenPorts(ref, gw, sets, exports)
	keys := slices.SortedFunc(maps.Keys(exports), compareKeys)
	var todo []func()
	for _, k := range keys {
		held := heldPorts(ownSet(ref, k, sets))
		for _, p := range exports[k] {
			if KindOf(p) != KindTCP {
				continue
			}
			if out.Ports[k] == nil {
				out.Ports[k] = map[string]int32{}
			}
			name := ListenerName(p)
			if port, ok := held[name]; ok && port >= r.First && port <= r.Last && !taken[port] {
				taken[port] = true
				out.Ports[k][name] = port
				continue
			}
			todo = append(todo, func() {
				port, ok := lowestFree(r, taken)
				if !ok {
					out.Refused[k] = append(out.Refused[k], fmt.Sprintf("port %s (%s %d): no free port in %d-%d", p.Name, p.Protocol, p.Port, r.First, r.Last))
					return
				}
				taken[port] = true
				out.Ports[k][name] = port
			})
		}
	}
	for _, f := range todo {
		f()
	}
	return out
}

// takenPorts are the ports that listeners other than the controller's
// ones of exports hold on gateway ref: the Gateway's own, and those of
// every other ListenerSet whose parent it is, a tenant's too.
func takenPorts(ref Ref, gw *gatewayv1.Gateway, sets []*gatewayv1.ListenerSet, exports map[aggregate.Key][]aggregate.Port) map[int32]bool {
	taken := map[int32]bool{}
	if gw != nil {
		for _, l := range gw.Spec.Listeners {
			taken[l.Port] = true
		}
	}
	for _, s := range sets {
		if !parentIs(ref, s) {
			continue
		}
		k := aggregate.Key{Namespace: s.Namespace, Name: s.Labels[objects.LabelServiceName]}
		if _, ours := exports[k]; ours && ownSet(ref, k, []*gatewayv1.ListenerSet{s}) != nil {
			continue
		}
		for _, l := range s.Spec.Listeners {
			taken[l.Port] = true
		}
	}
	return taken
}

// heldPorts are the TCP listeners' ports of set (nil: none), by name.
func heldPorts(set *gatewayv1.ListenerSet) map[string]int32 {
	held := map[string]int32{}
	if set == nil {
		return held
	}
	for _, l := range set.Spec.Listeners {
		if l.Protocol == gatewayv1.TCPProtocolType {
			held[string(l.Name)] = l.Port
		}
	}
	return held
}

// lowestFree is the lowest port of r not taken.
func lowestFree(r Range, taken map[int32]bool) (int32, bool) {
	for p := r.First; p <= r.Last && p > 0; p++ {
		if !taken[p] {
			return p, true
		}
	}
	return 0, false
}
