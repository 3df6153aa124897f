package objects

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// Networks say which members reach each other's pods: members of one
// network do, members of two do not, and reach each other's exports only
// through the exporter's east-west gateway. The zero value is one network.
type Networks struct {
	// Of maps a cluster id to its network; a cluster absent is in "".
	Of map[string]string
	// Gateways are, per exporting cluster id, its east-west gateway as
	// read in that cluster; a cluster absent has none ready.
	Gateways map[string]Gateway
}

// Gateway is an exporter's east-west gateway as the importers of other
// networks get it.
type Gateway struct {
	// Programmed says the Gateway is Programmed (its status says so for
	// its current generation).
	Programmed bool
	// Addresses are its status addresses of type IPAddress, as read: they
	// pass the policy of every endpoint address (readSource).
	Addresses []string
	// Ports are, per import, the gateway's port of each import port whose
	// listener is accepted, programmed and not conflicted; a port absent
	// has no ready listener.
	Ports map[aggregate.Key][]GatewayPort
	// Refused say, per export, which of its ports have no ready listener
	// and why (eastwest.Read, eastwest.Allocate): its CrossNetwork
	// condition.
	Refused map[aggregate.Key][]string
}

// GatewayPort is the gateway's listener port of one import port, which is
// named by its name and protocol as in the import.
type GatewayPort struct {
	Name, Protocol string
	Port           int32
}

// network is the network of cluster.
func (n Networks) network(cluster string) string { return n.Of[cluster] }

// Reaches reports whether member reaches the pods of source at their
// addresses: the two are of one network.
func (n Networks) Reaches(member, source string) bool { return n.network(member) == n.network(source) }

// sources returns the slices member gets of each of imp's sources: those
// read, for a source of member's network; its gateway's, for a source of
// another (none for a Headless import: a pod of another network is not
// reachable at its address). notes say what was left out and why, for the
// ServiceImport's Ready message. endpoints is returned as is, and given
// true, when every source is of member's network; it is never changed.
func (n Networks) sources(member string, imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, memo *Memo) (map[string][]*discoveryv1.EndpointSlice, []string, bool) {
	var out map[string][]*discoveryv1.EndpointSlice
	var notes []string
	for _, c := range imp.Clusters {
		if n.network(c) == n.network(member) {
			continue
		}
		if out == nil {
			out = maps.Clone(endpoints)
			if out == nil {
				out = map[string][]*discoveryv1.EndpointSlice{}
			}
		}
		if imp.Type == aggregate.ImportHeadless {
			delete(out, c)
			notes = append(notes, fmt.Sprintf("cluster %s is in network %q, not this member's (%q): a Headless import holds the endpoints of its own network only",
				c, n.network(c), n.network(member)))
			continue
		}
		gw := n.Gateways[c]
		out[c] = memo.gatewaySlices(c, imp.Key, gw)
		switch {
		case !gw.Programmed || len(gw.Addresses) == 0:
			notes = append(notes, fmt.Sprintf("the east-west gateway of cluster %s is not ready (not Programmed or without an address): no endpoints of it", c))
		case len(gw.Ports[imp.Key]) == 0:
			notes = append(notes, fmt.Sprintf("no listener of the east-west gateway of cluster %s is ready for this import: no endpoints of it", c))
		}
	}
	if out == nil {
		return endpoints, nil, true
	}
	return out, notes, false
}

// gatewaySlices are the slices standing for the gateway gw of cluster in
// import k: one per family of its addresses, every address one ready
// endpoint, on the gateway's port of each import port. An address that is
// no IP goes into the IPv4 slice, where the rules of every endpoint
// refuse it by name. None while the gateway is not ready.
func gatewaySlices(cluster string, k aggregate.Key, gw Gateway) []*discoveryv1.EndpointSlice {
	ports := gw.Ports[k]
	if !gw.Programmed || len(gw.Addresses) == 0 || len(ports) == 0 {
		return nil
	}
	var eps []discoveryv1.EndpointPort
	for _, p := range ports {
		eps = append(eps, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Protocol: ptr.To(corev1.Protocol(p.Protocol)), Port: ptr.To(p.Port)})
	}
	byFamily := map[discoveryv1.AddressType][]discoveryv1.Endpoint{}
	for _, a := range gw.Addresses {
		family := discoveryv1.AddressTypeIPv4
		if ip, err := netip.ParseAddr(a); err == nil && ip.Is6() && !ip.Is4In6() {
			family = discoveryv1.AddressTypeIPv6
		}
		byFamily[family] = append(byFamily[family], discoveryv1.Endpoint{
			Addresses:  []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
		})
	}
	var out []*discoveryv1.EndpointSlice
	for _, family := range slices.Sorted(maps.Keys(byFamily)) {
		s := &discoveryv1.EndpointSlice{AddressType: family, Ports: eps, Endpoints: byFamily[family]}
		s.Name = "east-west-gateway-" + cluster + "-" + string(family)
		out = append(out, s)
	}
	return out
}

// gatewayMade is a gateway's slices for one import as a Memo keeps them,
// with what they were made of.
type gatewayMade struct {
	gw     Gateway // Ports holds the one import's
	slices []*discoveryv1.EndpointSlice
}

// gatewayKey names one gateway's slices for one import.
type gatewayKey struct {
	cluster string
	key     aggregate.Key
}

// gatewaySlices returns gatewaySlices, the very same objects as in the
// last call while the gateway is the same: the memo of the import
// compares its sources' slices by pointer, so an import reached through
// an unchanged gateway is known without building it. m may be nil.
func (m *Memo) gatewaySlices(cluster string, k aggregate.Key, gw Gateway) []*discoveryv1.EndpointSlice {
	one := Gateway{Programmed: gw.Programmed, Addresses: gw.Addresses, Ports: map[aggregate.Key][]GatewayPort{k: gw.Ports[k]}}
	if m == nil {
		return gatewaySlices(cluster, k, one)
	}
	gk := gatewayKey{cluster: cluster, key: k}
	made := m.gateways[gk]
	if made == nil || !sameGateway(made.gw, one, k) {
		made = &gatewayMade{gw: one, slices: gatewaySlices(cluster, k, one)}
	}
	if m.nextGateways == nil {
		m.nextGateways = map[gatewayKey]*gatewayMade{}
	}
	m.nextGateways[gk] = made
	return made.slices
}

// sameGateway reports whether a and b offer import k the same.
func sameGateway(a, b Gateway, k aggregate.Key) bool {
	return a.Programmed == b.Programmed && slices.Equal(a.Addresses, b.Addresses) && slices.Equal(a.Ports[k], b.Ports[k])
}

// Reasons of the CrossNetwork condition of an export.
const (
	ReasonRouted          = "Routed"
	ReasonGatewayNotReady = "GatewayNotReady"
	ReasonListenerRefused = "ListenerRefused"
	ReasonHeadless        = "Headless"
)

// crossNetwork is the CrossNetwork condition of member's export of k
// (typeOf: its import's type), nil when every member is in member's
// network: do the members of other networks reach it through member's
// east-west gateway, and if not, why.
func (n Networks) crossNetwork(member string, k aggregate.Key, typeOf func() aggregate.ImportType) *metav1.Condition {
	others := map[string]bool{}
	for _, net := range n.Of {
		if net != n.network(member) {
			others[fmt.Sprintf("%q", net)] = true
		}
	}
	if len(others) == 0 {
		return nil
	}
	where := "members of network " + strings.Join(slices.Sorted(maps.Keys(others)), ", ")
	c := &metav1.Condition{Type: string(aggregate.ConditionCrossNetwork), Status: metav1.ConditionFalse}
	gw := n.Gateways[member]
	refused := gw.Refused[k]
	switch {
	case typeOf() == aggregate.ImportHeadless:
		c.Reason, c.Message = ReasonHeadless, "a Headless export crosses no network: "+where+" get none of its endpoints"
	case !gw.Programmed || len(gw.Addresses) == 0:
		c.Reason, c.Message = ReasonGatewayNotReady, "the east-west gateway is not Programmed or has no address: "+where+" get none of its endpoints"
	case len(refused) > 0 || len(gw.Ports[k]) == 0:
		c.Reason = ReasonListenerRefused
		c.Message = strings.Join(refused, "; ")
		if len(gw.Ports[k]) == 0 {
			c.Message = strings.TrimPrefix(c.Message+"; no listener of it is ready: "+where+" get none of its endpoints", "; ")
		}
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonRouted
		c.Message = where + " reach it through the east-west gateway at " + strings.Join(gw.Addresses, ", ")
	}
	c.Message = aggregate.CutMessage(c.Message)
	return c
}
