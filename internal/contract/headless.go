package contract

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
)

// A GatewayDNS with resolutionType headless exports a headless Service of
// each selected cluster. With X = <gatewaydns>.<ns>.services.<zone> (the
// slices' hostname annotation, HeadlessHostname) the names are:
//
//	X                          the ready pods of the clusters the locality policy picks (Select)
//	_<port>._<proto>.X         SRV: one per picked pod and named port, target the pod's name
//	<cluster>.X                the ready pods of one cluster
//	<pod>.<cluster>.X          one pod: its hostname (StatefulSets), else its dashed address
//
// The etcd plugin answers a name from every record below it, so the
// records of X are stored at _all.X (HeadlessAllName) and the Corefile
// rewrites X onto it (_all.X asked itself is NXDOMAIN: Shape.Stored);
// below <cluster>.X lie only the pod names of that cluster, whose
// addresses are the cluster's own. No accepted cluster,
// pod or port label starts with '_', so _all and _<proto> collide with
// none of them.

const (
	// headlessAllLabel is the label below X where X's own records are stored.
	headlessAllLabel = "_all"
	// maxPortNameLength is the limit of a port name (IANA_SVC_NAME).
	maxPortNameLength = 15
)

// HeadlessAllName is where the records of the headless name x across
// clusters are stored: _all.x, which the Corefile rewrites x onto.
func HeadlessAllName(x string) string { return headlessAllLabel + "." + x }

// HeadlessClusterName is the name of the headless name x in one cluster.
func HeadlessClusterName(x, cluster string) string { return cluster + "." + x }

// HeadlessPodName is the name of one pod of cluster.
func HeadlessPodName(x, cluster, pod string) string { return pod + "." + cluster + "." + x }

// HeadlessSRVName is the SRV name of a named port of the headless name x.
func HeadlessSRVName(x string, p Port) string {
	return "_" + p.Name + "._" + strings.ToLower(string(p.Protocol)) + "." + x
}

// SRVTargetStoredName is where the addresses of target, a name below the
// headless name x, are stored as a target of srv, an SRV name below x (or
// ClusterSetSRVName(x)): target's labels below x followed by srv
// (<pod>.<cluster>._<port>._<proto>.x), so that the one read of srv finds
// them (StoredTargets). ok is false when target is not below x.
func SRVTargetStoredName(srv, x, target string) (string, bool) {
	below, ok := strings.CutSuffix(target, "."+x)
	if !ok || below == "" {
		return "", false
	}
	return below + "." + srv, true
}

// PodLabel is the label of an endpoint's own name: its hostname if it has
// one, else its address with '.' and ':' turned into '-' (what the
// cluster DNS of Kubernetes answers SRV targets of such endpoints with).
// ok is false when neither is a valid label (an IPv6 address that starts
// or ends with "::"): the endpoint then has no name of its own.
func PodLabel(hostname, addr string) (string, bool) {
	if hostname != "" {
		return hostname, ValidateLabel(hostname) == nil
	}
	l := strings.NewReplacer(".", "-", ":", "-").Replace(strings.ToLower(addr))
	return l, ValidateLabel(l) == nil
}

// Port is a named port of a headless Service's endpoints, as the SRV
// records _<Name>._<protocol>.<name> carry it.
type Port struct {
	Name     string
	Protocol corev1.Protocol
	Port     int32
}

// validatePort checks p by the rules of a Service's port: a name of at
// most 15 lowercase letters, digits and '-' with a letter (IANA_SVC_NAME),
// TCP, UDP or SCTP, 1-65535.
func validatePort(p Port) error {
	n := p.Name
	switch {
	case n == "" || len(n) > maxPortNameLength:
		return fmt.Errorf("port name %q: want 1 to %d characters", n, maxPortNameLength)
	case strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
		return fmt.Errorf("port name %q: only lowercase letters, digits and '-'", n)
	case !strings.ContainsAny(n, "abcdefghijklmnopqrstuvwxyz"), strings.HasPrefix(n, "-"), strings.HasSuffix(n, "-"), strings.Contains(n, "--"):
		return fmt.Errorf("port name %q: needs a letter, no '-' at either end, no \"--\"", n)
	}
	switch p.Protocol {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		return fmt.Errorf("port %s: protocol %q: want TCP, UDP or SCTP", n, p.Protocol)
	}
	if p.Port < 1 || p.Port > 65535 {
		return fmt.Errorf("port %s: number %d outside 1-65535", n, p.Port)
	}
	return nil
}

// parsePorts reads the named ports of a slice; unnamed ports have no SRV
// record and are skipped. A bad or repeated port refuses itself; more
// than MaxPortsPerSlice refuse the slice (ok false).
func parsePorts(in []discoveryv1.EndpointPort) (ports []Port, ok bool, problems []error) {
	if len(in) > MaxPortsPerSlice {
		return nil, false, []error{fmt.Errorf("%d ports, more than %d in one slice: refused whole", len(in), MaxPortsPerSlice)}
	}
	seen := map[string]bool{}
	for _, ep := range in {
		if ep.Name == nil || *ep.Name == "" {
			continue
		}
		p := Port{Name: *ep.Name, Protocol: ptr.Deref(ep.Protocol, corev1.ProtocolTCP), Port: ptr.Deref(ep.Port, 0)}
		if err := validatePort(p); err != nil {
			problems = append(problems, err)
			continue
		}
		k := p.Name + "/" + string(p.Protocol)
		if seen[k] {
			problems = append(problems, fmt.Errorf("port %s/%s twice", p.Name, p.Protocol))
			continue
		}
		seen[k] = true
		ports = append(ports, p)
	}
	slices.SortFunc(ports, comparePorts)
	return ports, true, problems
}

func comparePorts(a, b Port) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Port, b.Port))
}

// HeadlessPod is one endpoint of a headless slice as serve publishes it.
type HeadlessPod struct {
	// Label is the pod's own label (PodLabel); "" when it has none.
	Label string
	// Host is its canonical address.
	Host string
	// Ready is the source's health, as for the Hosts and Unready of Parsed.
	Ready bool
}

// parseHeadless reads the endpoints and ports of a KindHeadless slice into
// p. Only endpoints that serve are read: one with conditions.serving false
// or conditions.terminating true is never published, whatever its ready
// condition (the controller writes none; serve checks again).
// conditions.ready false marks the source cluster unhealthy, as on the
// other multi-cluster kinds. Each endpoint holds exactly one address (a
// pod's), and its hostname, if set, must be a valid label.
func parseHeadless(slice *discoveryv1.EndpointSlice, zone string, p *Parsed) (ok bool, problems []error) {
	if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
		return false, []error{fmt.Errorf("addressType %q: a headless slice holds IPv4 or IPv6 pod addresses", slice.AddressType)}
	}
	if len(slice.Endpoints) > MaxAddressesPerSlice {
		return false, []error{fmt.Errorf("%d endpoints, more than %d in one slice: refused whole", len(slice.Endpoints), MaxAddressesPerSlice)}
	}
	p.Ports, ok, problems = parsePorts(slice.Ports)
	if !ok {
		return false, problems
	}
	seen := map[string]bool{}
	for _, ep := range slice.Endpoints {
		ready := ptr.Deref(ep.Conditions.Ready, true)
		if ptr.Deref(ep.Conditions.Terminating, false) || !ptr.Deref(ep.Conditions.Serving, ready) {
			problems = append(problems, fmt.Errorf("endpoint %v: not serving or terminating: not published", ep.Addresses))
			continue
		}
		if len(ep.Addresses) != 1 {
			problems = append(problems, fmt.Errorf("endpoint %v: a pod endpoint has exactly one address", ep.Addresses))
			continue
		}
		host, err := ParseAddress(slice.AddressType, ep.Addresses[0], zone)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		label, hasLabel := PodLabel(ptr.Deref(ep.Hostname, ""), host)
		if !hasLabel && ptr.Deref(ep.Hostname, "") != "" {
			problems = append(problems, fmt.Errorf("endpoint %s: hostname %q is not a DNS label: not published", host, *ep.Hostname))
			continue
		}
		if !hasLabel {
			label = ""
		}
		k := label + "/" + host
		if seen[k] {
			continue
		}
		seen[k] = true
		p.Pods = append(p.Pods, HeadlessPod{Label: label, Host: host, Ready: ready})
		if ready {
			p.Hosts = append(p.Hosts, host)
		} else {
			p.Unready = append(p.Unready, host)
		}
	}
	p.Hosts, p.Unready = sortedUnique(p.Hosts), sortedUnique(p.Unready)
	return true, problems
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// HeadlessGroup is the ready endpoints of a headless Service in one
// cluster that share one set of ports: one slice per address family.
type HeadlessGroup struct {
	Ports      []Port
	IPv4, IPv6 []Endpoint
}

// Endpoint is a ready pod endpoint: its address and hostname, if any.
type Endpoint struct {
	Address  string
	Hostname string
}

// HeadlessEndpoints are what the controller publishes of a headless
// Service in one cluster.
type HeadlessEndpoints struct {
	// Groups by port set, sorted by the set.
	Groups []HeadlessGroup
	// Refused lists each endpoint or port that can never be published,
	// with why; not-ready and terminating endpoints are left out silently.
	Refused []string
}

// Len is the number of endpoints of every group and family.
func (h HeadlessEndpoints) Len() int {
	n := 0
	for _, g := range h.Groups {
		n += len(g.IPv4) + len(g.IPv6)
	}
	return n
}

// ReadyEndpoints picks from the EndpointSlices of a headless Service (those
// labelled kubernetes.io/service-name: <service> in its namespace) what the
// controller publishes: the endpoints that are ready and not terminating
// (ready unset counts as ready, as the API says), with an address that
// EndpointAddress accepts (allowed empty allows any), and a hostname, if
// set, that is a valid label; each slice's named ports. The rules are
// those serve applies (Parse), so what the controller reports published
// is what serve publishes; the imported EndpointSlices of a clusterset
// (internal/mcs/objects) are filtered by it too. zone is not read: only
// IPv4 and IPv6 slices are, and the zone constrains only FQDN targets.
func ReadyEndpoints(in []*discoveryv1.EndpointSlice, allowed cidr.List, zone string) HeadlessEndpoints {
	var out HeadlessEndpoints
	groups := map[string]*HeadlessGroup{}
	for _, s := range in {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		ports, _, problems := parsePorts(s.Ports)
		if len(s.Ports) > MaxPortsPerSlice {
			out.Refused = append(out.Refused, fmt.Sprintf("EndpointSlice %s: %d ports, more than %d", s.Name, len(s.Ports), MaxPortsPerSlice))
			continue
		}
		for _, p := range problems {
			out.Refused = append(out.Refused, fmt.Sprintf("EndpointSlice %s: %v", s.Name, p))
		}
		key := portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &HeadlessGroup{Ports: ports}
			groups[key] = g
		}
		for _, ep := range s.Endpoints {
			if !ptr.Deref(ep.Conditions.Ready, true) || ptr.Deref(ep.Conditions.Terminating, false) || len(ep.Addresses) == 0 {
				continue
			}
			host, err := EndpointAddress(s.AddressType, ep.Addresses[0], allowed)
			if err != nil {
				out.Refused = append(out.Refused, err.Error())
				continue
			}
			hostname := ptr.Deref(ep.Hostname, "")
			if hostname != "" {
				if err := ValidateLabel(hostname); err != nil {
					out.Refused = append(out.Refused, fmt.Sprintf("endpoint %s: hostname %q: %v", host, hostname, err))
					continue
				}
			}
			e := Endpoint{Address: host, Hostname: hostname}
			if s.AddressType == discoveryv1.AddressTypeIPv4 {
				g.IPv4 = append(g.IPv4, e)
			} else {
				g.IPv6 = append(g.IPv6, e)
			}
		}
	}
	for _, k := range sortedMapKeys(groups) {
		g := groups[k]
		g.IPv4, g.IPv6 = sortEndpoints(g.IPv4), sortEndpoints(g.IPv6)
		if len(g.IPv4)+len(g.IPv6) > 0 {
			out.Groups = append(out.Groups, *g)
		}
	}
	return out
}

func sortEndpoints(e []Endpoint) []Endpoint {
	slices.SortFunc(e, func(a, b Endpoint) int {
		return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.Hostname, b.Hostname))
	})
	return slices.Compact(e)
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// portsKey identifies a port set; it is part of the names of the slices
// of that set, so a slice keeps its name while its endpoints change.
func portsKey(ports []Port) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(p.Name + "/" + string(p.Protocol) + "/" + strconv.Itoa(int(p.Port)) + ";")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:sliceNameHashChars]
}

// Recheck passes endpoints that were kept (in memory, or in the
// controller's state across a restart) through the checks ReadyEndpoints
// applies to a live cluster's slices, with today's allowed CIDRs and
// zone: a kept endpoint is published only if a live one like it would be.
func (h HeadlessEndpoints) Recheck(allowed cidr.List, zone string) HeadlessEndpoints {
	return ReadyEndpoints(BuildHeadless(Source{Kind: KindHeadless}, h), allowed, zone)
}

// BuildHeadless returns the slices of a headless Service in one source
// cluster (src.Kind KindHeadless, src.Hostname HeadlessHostname): one per
// port set and address family, each endpoint one pod with its hostname,
// conditions serving true, terminating false and ready = the source's
// health (src.Unhealthy), the policy as on the other multi-cluster kinds.
// Callers refuse more than MaxAddressesPerSlice endpoints of one port set
// and family before building.
func BuildHeadless(src Source, eps HeadlessEndpoints) []*discoveryv1.EndpointSlice {
	return buildEndpointSlices(eps, !src.Unhealthy, func(family string, t discoveryv1.AddressType) *discoveryv1.EndpointSlice {
		return newSlice(src, family, t)
	})
}

// buildEndpointSlices writes endpoints of one cluster as slices, one per
// port set and address family, each from newSlice (the kind's labels and
// annotations) and named for the family and port set: what KindHeadless
// and a Headless KindClusterSet import share.
func buildEndpointSlices(eps HeadlessEndpoints, ready bool, newSlice func(family string, t discoveryv1.AddressType) *discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, g := range eps.Groups {
		key := portsKey(g.Ports)
		for _, f := range []struct {
			t   discoveryv1.AddressType
			eps []Endpoint
		}{{discoveryv1.AddressTypeIPv4, g.IPv4}, {discoveryv1.AddressTypeIPv6, g.IPv6}} {
			if len(f.eps) == 0 {
				continue
			}
			s := newSlice(strings.ToLower(string(f.t))+"-"+key, f.t)
			s.Ports = endpointPorts(g.Ports)
			for _, e := range f.eps {
				ep := discoveryv1.Endpoint{
					Addresses: []string{e.Address},
					Conditions: discoveryv1.EndpointConditions{
						Ready: ptr.To(ready), Serving: ptr.To(true), Terminating: ptr.To(false),
					},
				}
				if e.Hostname != "" {
					ep.Hostname = ptr.To(e.Hostname)
				}
				s.Endpoints = append(s.Endpoints, ep)
			}
			out = append(out, s)
		}
	}
	return out
}

// endpointPorts writes ports as a slice's ports.
func endpointPorts(ports []Port) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for _, p := range ports {
		out = append(out, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Protocol: ptr.To(p.Protocol), Port: ptr.To(p.Port)})
	}
	return out
}
