package objects

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// Bounds of what one source cluster puts into a member.
const (
	// MaxEndpointsPerSlice is the size of the slices written, the
	// EndpointSlice controller's default: an endpoint change rewrites one
	// slice of 100, not every endpoint.
	MaxEndpointsPerSlice = 100
	// DefaultEndpointsPerSource bounds the endpoints of one source of one
	// import; a member's Service with more is cut (Limits).
	DefaultEndpointsPerSource = 1000
	// DefaultPortSetsPerSource bounds the distinct port sets of one
	// source: each is at least one slice per family.
	DefaultPortSetsPerSource = 8
	// DefaultEndpointsPerMember bounds the endpoints one source cluster
	// puts into a member over all its imports, so that the product of
	// exports per member and endpoints per source (a million) does not
	// reach every member's kube-proxy.
	DefaultEndpointsPerMember = 10000
	// DefaultSlicesPerMember bounds the EndpointSlices one source cluster
	// puts into a member over all its imports: room for the default
	// exports per member of one endpoint each in both families.
	DefaultSlicesPerMember = 2000
	// maxRefusedPerSource bounds what Refused says of one source: a
	// hostile Service of 10,000 bad endpoints makes one line per kind of
	// fault, not 10,000.
	maxRefusedPerSource = 10
)

// Limits bound the endpoints one source of one import adds to a member,
// and those one source adds over all its imports (oldest exports first).
// A zero field takes its default.
type Limits struct {
	EndpointsPerSource int
	PortSetsPerSource  int
	EndpointsPerMember int
	SlicesPerMember    int
}

func (l Limits) orDefaults() Limits {
	return Limits{
		EndpointsPerSource: cmp.Or(l.EndpointsPerSource, DefaultEndpointsPerSource),
		PortSetsPerSource:  cmp.Or(l.PortSetsPerSource, DefaultPortSetsPerSource),
		EndpointsPerMember: cmp.Or(l.EndpointsPerMember, DefaultEndpointsPerMember),
		SlicesPerMember:    cmp.Or(l.SlicesPerMember, DefaultSlicesPerMember),
	}
}

// endpoint is one ready endpoint of a source as a member gets it.
type endpoint struct {
	address, hostname, nodeName string
}

// group is the endpoints of a source that share one port set.
type group struct {
	key        string
	ports      []discoveryv1.EndpointPort
	ipv4, ipv6 []endpoint
}

// source is what a member gets of one exporting cluster of one import.
type source struct {
	cluster string
	groups  []*group
}

// readSource reads the EndpointSlices of one source cluster's exported
// Service. local says the source is the member itself (node names kept).
// Addresses outside allowed are refused one by one, by the rule of the
// clusterset DNS records (contract.EndpointAddress).
func readSource(cluster string, local bool, in []*discoveryv1.EndpointSlice, imp aggregate.Import, lim Limits, allowed cidr.List) (source, []string) {
	var refused []string
	byKey := map[string]*group{}
	for _, s := range sortedSlices(in) {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			refused = append(refused, fmt.Sprintf("EndpointSlice %s: addressType %q: want IPv4 or IPv6", s.Name, s.AddressType))
			continue
		}
		ports, problems := importPorts(s.Ports, imp.Served[cluster])
		refused = appendPrefixed(refused, "EndpointSlice "+s.Name+": ", problems)
		ready := contract.ReadyEndpoints([]*discoveryv1.EndpointSlice{servingOnly(s)}, allowed, "")
		refused = appendPrefixed(refused, "EndpointSlice "+s.Name+": ", ready.Refused)
		key := hashPorts(ports)
		g := byKey[key]
		if g == nil {
			g = &group{key: key, ports: ports}
			byKey[key] = g
		}
		nodes := nodeNames(s, local)
		for _, rg := range ready.Groups {
			g.ipv4 = appendEndpoints(g.ipv4, rg.IPv4, nodes)
			g.ipv6 = appendEndpoints(g.ipv6, rg.IPv6, nodes)
		}
	}
	src := source{cluster: cluster}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		g := byKey[k]
		g.ipv4, g.ipv6 = uniqueEndpoints(g.ipv4), uniqueEndpoints(g.ipv6)
		if len(g.ipv4)+len(g.ipv6) > 0 {
			src.groups = append(src.groups, g)
		}
	}
	// The cut first: it is the line truncated must not drop.
	refused = append(src.bound(lim), refused...)
	return src, prefixAll("cluster "+cluster+": ", truncated(refused))
}

// truncated keeps the first maxRefusedPerSource lines and counts the rest.
func truncated(refused []string) []string {
	if len(refused) <= maxRefusedPerSource {
		return refused
	}
	n := len(refused) - maxRefusedPerSource
	return append(refused[:maxRefusedPerSource:maxRefusedPerSource], fmt.Sprintf("and %d more refused", n))
}

// bound cuts a source to the limits, keeping the first port sets (by
// their key) and the first endpoints (by address), so a cut is the same
// in every sync and every member.
func (s *source) bound(lim Limits) []string {
	var refused []string
	if n := len(s.groups); n > lim.PortSetsPerSource {
		refused = append(refused, fmt.Sprintf("%d port sets, more than %d: kept the first %d", n, lim.PortSetsPerSource, lim.PortSetsPerSource))
		s.groups = s.groups[:lim.PortSetsPerSource]
	}
	left, total := lim.EndpointsPerSource, 0
	for _, g := range s.groups {
		total += len(g.ipv4) + len(g.ipv6)
		g.ipv4 = g.ipv4[:min(len(g.ipv4), left)]
		left -= len(g.ipv4)
		g.ipv6 = g.ipv6[:min(len(g.ipv6), left)]
		left -= len(g.ipv6)
	}
	if total > lim.EndpointsPerSource {
		refused = append(refused, fmt.Sprintf("%d endpoints, more than %d: kept the first %d", total, lim.EndpointsPerSource, lim.EndpointsPerSource))
		s.groups = slices.DeleteFunc(s.groups, func(g *group) bool { return len(g.ipv4)+len(g.ipv6) == 0 })
	}
	return refused
}

// servingOnly is a copy of s without the endpoints that do not serve:
// contract.ReadyEndpoints checks ready and terminating, and an endpoint
// that says ready but not serving is not trusted either.
func servingOnly(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	c := &discoveryv1.EndpointSlice{AddressType: s.AddressType}
	c.Name = s.Name
	for _, ep := range s.Endpoints {
		if ptr.Deref(ep.Conditions.Serving, ptr.Deref(ep.Conditions.Ready, true)) {
			c.Endpoints = append(c.Endpoints, ep)
		}
	}
	return c
}

// importPorts keeps the ports of a source slice that are valid and that
// the source serves of the import (want: aggregate.Import.Served; same
// name and protocol; the number is the target port in the source and may
// differ per member). appProtocol is the import's.
func importPorts(in []discoveryv1.EndpointPort, want []aggregate.Port) ([]discoveryv1.EndpointPort, []string) {
	var out []discoveryv1.EndpointPort
	var refused []string
	seen := map[string]bool{}
	for _, p := range in {
		name, proto := ptr.Deref(p.Name, ""), ptr.Deref(p.Protocol, corev1.ProtocolTCP)
		if err := validPort(name, proto, p.Port); err != "" {
			refused = append(refused, err)
			continue
		}
		i := slices.IndexFunc(want, func(w aggregate.Port) bool { return w.Name == name && w.Protocol == string(proto) })
		if i < 0 || seen[name+"/"+string(proto)] {
			continue
		}
		seen[name+"/"+string(proto)] = true
		ep := discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(*p.Port)}
		if a := want[i].AppProtocol; a != "" {
			ep.AppProtocol = ptr.To(a)
		}
		out = append(out, ep)
	}
	slices.SortFunc(out, func(a, b discoveryv1.EndpointPort) int {
		return cmp.Or(cmp.Compare(*a.Name, *b.Name), cmp.Compare(*a.Protocol, *b.Protocol))
	})
	return out, refused
}

// validPort checks a slice's port by the rules of a Service's port; ""
// when it is valid.
func validPort(name string, proto corev1.Protocol, port *int32) string {
	if name != "" {
		if errs := validation.IsValidPortName(name); len(errs) > 0 {
			return fmt.Sprintf("port name %q: %s", name, errs[0])
		}
	}
	switch proto {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		return fmt.Sprintf("port %q: protocol %q: want TCP, UDP or SCTP", name, proto)
	}
	if port == nil || *port < 1 || *port > 65535 {
		return fmt.Sprintf("port %q: number missing or outside 1-65535", name)
	}
	return ""
}

// nodeNames maps the first address of each endpoint of a local slice to
// its node name, when that is a valid node name; nil for a remote source.
func nodeNames(s *discoveryv1.EndpointSlice, local bool) map[string]string {
	if !local {
		return nil
	}
	out := map[string]string{}
	for _, ep := range s.Endpoints {
		n := ptr.Deref(ep.NodeName, "")
		if len(ep.Addresses) == 0 || n == "" || len(validation.IsDNS1123Subdomain(n)) > 0 {
			continue
		}
		if a, err := contract.ParseAddress(s.AddressType, ep.Addresses[0], ""); err == nil {
			out[a] = n
		}
	}
	return out
}

func appendEndpoints(out []endpoint, in []contract.Endpoint, nodes map[string]string) []endpoint {
	for _, e := range in {
		out = append(out, endpoint{address: e.Address, hostname: e.Hostname, nodeName: nodes[e.Address]})
	}
	return out
}

// uniqueEndpoints sorts by address and keeps one endpoint per address:
// two endpoints of one address would be one backend twice.
func uniqueEndpoints(e []endpoint) []endpoint {
	slices.SortFunc(e, func(a, b endpoint) int {
		return cmp.Or(cmp.Compare(a.address, b.address), cmp.Compare(a.hostname, b.hostname), cmp.Compare(a.nodeName, b.nodeName))
	})
	return slices.CompactFunc(e, func(a, b endpoint) bool { return a.address == b.address })
}

func sortedSlices(in []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	out := slices.DeleteFunc(slices.Clone(in), func(s *discoveryv1.EndpointSlice) bool { return s == nil })
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func appendPrefixed(out []string, prefix string, in []string) []string {
	for _, s := range in {
		out = append(out, prefix+s)
	}
	return out
}

func prefixAll(prefix string, in []string) []string { return appendPrefixed(nil, prefix, in) }
