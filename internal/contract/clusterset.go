package contract

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// The Multi-Cluster Services DNS specification (schema 1.0.0) in the zone
// clusterset.local (serve's --clusterset-zone). The controller writes, into
// each member's slice namespace, the slices of every ServiceImport of that
// member (BuildClusterSet); serve reads them (ParseClusterSet). With
// X = <svc>.<ns>.svc.<zone> (ClusterSetHostname) the names are:
//
//	X                          ClusterSetIP: the member's ClusterSetIPs; Headless: every ready endpoint of every source
//	_<port>._<proto>.X         SRV per named port: target X (ClusterSetIP), or one per endpoint, target <hostname>.<clusterid>.X
//	<hostname>.<clusterid>.X   Headless: one endpoint (its hostname, else its dashed address, PodLabel)
//	<clusterid>.X              Headless: that source's endpoints (the names below it); ClusterSetIP: none, NXDOMAIN
//	dns-version.<zone>         TXT "1.0.0", written by serve itself (DNSVersionName)
//
// The layout is KindHeadless's (X stored at _all.X, HeadlessAllName and
// the other Headless* name functions take any X), and serve makes the
// records with the same code. Unlike the other kinds the slices differ per
// member: a ClusterSetIP is allocated by each member's API server. No
// locality and no health: every ready endpoint of every source answers.

// KindClusterSet labels the slices of a ServiceImport (xcc-dns.io/record:
// clusterset). Its names lie in the clusterset zone, not in the zone of
// the other kinds, and are owned by the import (AnnotationServiceImport),
// not by a GatewayDNS.
const KindClusterSet Kind = "clusterset"

const (
	// AnnotationServiceImport is the ServiceImport a KindClusterSet slice
	// publishes, <ns>/<svc>. Not AnnotationGatewayRef: the controller's
	// GatewayDNS plans own the slices that carry that one.
	AnnotationServiceImport = "xcc-dns.io/service-import"
	// AnnotationImportType is the import's type, ClusterSetIP or Headless.
	AnnotationImportType = "xcc-dns.io/import-type"

	// DefaultClusterSetZone is the zone of the MCS DNS specification.
	DefaultClusterSetZone = "clusterset.local"
	// DNSVersion is the schema version of the specification served, the
	// TXT record of DNSVersionName.
	DNSVersion = "1.0.0"

	// svcLabel roots the names of imports: <svc>.<ns>.svc.<zone>.
	svcLabel = "svc"
	// dnsVersionLabel is the name of the version record below the zone.
	dnsVersionLabel = "dns-version"
	// clusterSetIPSliceCluster stands for the cluster in the names of the
	// slices of a ClusterSetIP import, which have no source cluster; the
	// family in the slice name keeps them apart from a source's slices.
	clusterSetIPSliceCluster = "ip"
)

// ImportType is the type of a ServiceImport, spelled as the MCS API does.
type ImportType string

// The import types of the MCS API.
const (
	ImportClusterSetIP ImportType = "ClusterSetIP"
	ImportHeadless     ImportType = "Headless"
)

// ClusterSetHostname is the name of an import, the hostname annotation of
// its slices: <name>.<namespace>.svc.<zone>.
func ClusterSetHostname(name, namespace, zone string) string {
	return name + "." + namespace + "." + svcLabel + "." + skydnsrecord.CanonicalName(zone)
}

// DNSVersionName is the name of the version record of the clusterset zone.
func DNSVersionName(zone string) string {
	return dnsVersionLabel + "." + skydnsrecord.CanonicalName(zone)
}

// ClusterSetImport is what the controller publishes of one ServiceImport
// into one member. Namespace and Name are the import's (both DNS labels).
type ClusterSetImport struct {
	Namespace, Name string
	Type            ImportType
	// IPs are the member's ClusterSetIPs (ClusterSetIP only): one slice per
	// family, one endpoint holding them.
	IPs []string
	// Ports are the import's ports (ClusterSetIP only); each named one is
	// an SRV name with target X.
	Ports []Port
	// Sources are the exporting clusters (Headless only), each with its
	// ready endpoints as ReadyEndpoints picks them.
	Sources []ClusterSetSource
	// TTL is the record TTL in seconds; 0 leaves serve's default
	// (DefaultGatewaysTTL).
	TTL int32
}

// ClusterSetSource is one exporting cluster of a Headless import.
type ClusterSetSource struct {
	// Cluster is its cluster id, a DNS label other than "any".
	Cluster   string
	Endpoints HeadlessEndpoints
}

// BuildClusterSet returns the slices of imp for one member's slice
// namespace (without a namespace set), each named deterministically:
//
//   - ClusterSetIP: one per family of imp.IPs (IPv4, IPv6; anything else
//     in IPs is left out), one ready endpoint holding the family's IPs,
//     ports imp.Ports;
//   - Headless: per source, the slices BuildHeadless writes (one per port
//     set and family, one endpoint per address with its hostname), every
//     endpoint ready, labelled with the source's cluster id.
//
// Callers refuse more than MaxAddressesPerSlice endpoints of one port set
// and family, and more than MaxPortsPerSlice ports, before building.
func BuildClusterSet(imp ClusterSetImport, zone string) []*discoveryv1.EndpointSlice {
	if imp.Type == ImportHeadless {
		var out []*discoveryv1.EndpointSlice
		for _, src := range imp.Sources {
			out = append(out, buildEndpointSlices(src.Endpoints, true, func(family string, t discoveryv1.AddressType) *discoveryv1.EndpointSlice {
				return newClusterSetSlice(imp, src.Cluster, family, t, zone)
			})...)
		}
		return out
	}
	addrs := Classify(imp.IPs, nil, zone)
	var out []*discoveryv1.EndpointSlice
	for _, f := range []struct {
		t     discoveryv1.AddressType
		addrs []string
	}{{discoveryv1.AddressTypeIPv4, addrs.IPv4}, {discoveryv1.AddressTypeIPv6, addrs.IPv6}} {
		if len(f.addrs) == 0 {
			continue
		}
		s := newClusterSetSlice(imp, "", strings.ToLower(string(f.t)), f.t, zone)
		s.Ports = endpointPorts(imp.Ports)
		for chunk := range slices.Chunk(f.addrs, MaxAddressesPerEndpoint) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  slices.Clone(chunk),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			})
		}
		out = append(out, s)
	}
	return out
}

// newClusterSetSlice returns a slice of imp without endpoints: of source
// cluster cluster ("" for a ClusterSetIP import), named for family.
func newClusterSetSlice(imp ClusterSetImport, cluster, family string, t discoveryv1.AddressType, zone string) *discoveryv1.EndpointSlice {
	nameCluster := cluster
	if nameCluster == "" {
		nameCluster = clusterSetIPSliceCluster
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: SliceName(imp.Namespace, imp.Name, nameCluster, KindClusterSet, family),
			Labels: map[string]string{
				LabelManagedBy:   ManagedByValue,
				LabelServiceName: ServiceNameValue(imp.Name),
				LabelRecord:      string(KindClusterSet),
			},
			Annotations: map[string]string{
				AnnotationHostname:      ClusterSetHostname(imp.Name, imp.Namespace, zone),
				AnnotationServiceImport: imp.Namespace + "/" + imp.Name,
				AnnotationImportType:    string(imp.Type),
			},
		},
		AddressType: t,
	}
	if cluster != "" {
		s.Labels[LabelSourceCluster] = cluster
	}
	if imp.TTL != 0 {
		s.Annotations[AnnotationTTL] = strconv.Itoa(int(imp.TTL))
	}
	return s
}

// ClusterSetSelector selects the controller's KindClusterSet slices in a
// slice namespace: a member is in one clusterset at a time, so every one
// of them is its set's.
func ClusterSetSelector() string {
	return klabels.SelectorFromSet(klabels.Set{LabelManagedBy: ManagedByValue, LabelRecord: string(KindClusterSet)}).String()
}

// IsOwnClusterSet reports whether slice is a clusterset contract slice
// the controller wrote: what ClusterSetSelector selects, checked on the
// object itself, since a workload API server is the tenant's and may
// answer a selector with anything.
func IsOwnClusterSet(slice *discoveryv1.EndpointSlice) bool {
	return slice.Labels[LabelManagedBy] == ManagedByValue && IsClusterSet(slice)
}

// IsClusterSet reports whether slice says it is of KindClusterSet: serve
// reads such a slice with ParseClusterSet, in the clusterset zone, and
// never with Parse.
func IsClusterSet(slice *discoveryv1.EndpointSlice) bool {
	return slice.Labels[LabelRecord] == string(KindClusterSet)
}

// ParseClusterSet reads a KindClusterSet slice the way serve publishes it
// in zone (the clusterset zone). ok is false for a slice without the
// hostname annotation and for one refused whole: an import reference that
// is not two DNS labels (or holds "any"), a hostname other than the
// import's own name, an unknown import type, a bad TTL aside, a source
// cluster that is not a DNS label (Headless), an addressType other than
// IPv4 or IPv6, more than MaxAddressesPerSlice addresses or
// MaxPortsPerSlice ports. A bad address, hostname or port refuses only
// itself. Only ready, serving, not terminating endpoints are read: no
// health and no locality here, every ready endpoint answers.
func ParseClusterSet(slice *discoveryv1.EndpointSlice, zone string) (p Parsed, ok bool, problems []error) {
	hostname, has := slice.Annotations[AnnotationHostname]
	if !has {
		return Parsed{}, false, nil
	}
	ns, svc, err := ParseRef(slice.Annotations[AnnotationServiceImport])
	if err == nil {
		err = errors.Join(ValidateLabel(ns), ValidateLabel(svc))
	}
	if err != nil {
		return Parsed{}, false, []error{fmt.Errorf("annotation %s: %w", AnnotationServiceImport, err)}
	}
	want := ClusterSetHostname(svc, ns, zone)
	name, wildcard, err := skydnsrecord.ParseHostname(hostname, zone)
	if err != nil || wildcard || name != want {
		return Parsed{}, false, []error{fmt.Errorf("annotation %s=%q: %w %s/%s: want %s", AnnotationHostname, hostname, ErrOutsideSubtree, ns, svc, want)}
	}
	p.Hostname = Hostname{Name: name, Kind: KindClusterSet, Namespace: ns}
	p.TTL, problems = parseTTL(slice.Annotations, DefaultGatewaysTTL)
	switch t := ImportType(slice.Annotations[AnnotationImportType]); t {
	case ImportHeadless:
		p.Source = slice.Labels[LabelSourceCluster]
		if err := ValidateLabel(p.Source); err != nil {
			return Parsed{}, false, append(problems, fmt.Errorf("label %s=%q: the source cluster of a Headless import: %w", LabelSourceCluster, p.Source, err))
		}
		ok, more := parseHeadless(slice, zone, &p)
		problems = append(problems, more...)
		if !ok {
			return Parsed{}, false, problems
		}
		// No health here: an endpoint that is not ready is not published.
		p.Pods = slices.DeleteFunc(p.Pods, func(pod HeadlessPod) bool { return !pod.Ready })
		p.Unready = nil
		return p, true, problems
	case ImportClusterSetIP:
		p.ClusterSetIP = true
		ok, more := parseClusterSetIPs(slice, zone, &p)
		if !ok {
			return Parsed{}, false, append(problems, more...)
		}
		return p, true, append(problems, more...)
	default:
		return Parsed{}, false, append(problems, fmt.Errorf("annotation %s=%q: want %s or %s", AnnotationImportType, t, ImportClusterSetIP, ImportHeadless))
	}
}

// parseClusterSetIPs reads the ClusterSetIPs and ports of a ClusterSetIP
// slice into p.
func parseClusterSetIPs(slice *discoveryv1.EndpointSlice, zone string, p *Parsed) (ok bool, problems []error) {
	if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
		return false, []error{fmt.Errorf("addressType %q: a ClusterSetIP slice holds IPv4 or IPv6 addresses", slice.AddressType)}
	}
	count := 0
	for _, ep := range slice.Endpoints {
		count += len(ep.Addresses)
	}
	if count > MaxAddressesPerSlice {
		return false, []error{fmt.Errorf("%d addresses, more than %d in one slice: refused whole", count, MaxAddressesPerSlice)}
	}
	p.Ports, ok, problems = parsePorts(slice.Ports)
	if !ok {
		return false, problems
	}
	for _, ep := range slice.Endpoints {
		c := ep.Conditions
		if !ptr.Deref(c.Ready, true) || !ptr.Deref(c.Serving, true) || ptr.Deref(c.Terminating, false) {
			problems = append(problems, fmt.Errorf("endpoint %v: not ready, not serving or terminating: not published", ep.Addresses))
			continue
		}
		for _, addr := range ep.Addresses {
			host, err := ParseAddress(slice.AddressType, addr, zone)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			p.Hosts = append(p.Hosts, host)
		}
	}
	p.Hosts = sortedUnique(p.Hosts)
	return true, problems
}

// srvAllLabel is the label below an import's name X where the SRV
// records of X itself are stored (ClusterSetSRVName).
const srvAllLabel = "_srv"

// ClusterSetSRVName is where the SRV records of the import's name x are
// stored: each distinct target and port of its SRV names.
func ClusterSetSRVName(x string) string { return srvAllLabel + "." + x }

// ClusterSetShapes returns every shape of the clusterset zone. The zone
// is closed: only these names exist in it, none is put by hand.
func ClusterSetShapes() []Shape {
	s, ns, c := variable("<svc>"), variable("<ns>"), variable("<clusterid>")
	svc := lit(svcLabel)
	proto, port := Label{Class: LabelProto, Text: "_<proto>"}, Label{Class: LabelPort, Text: "_<port>"}
	return []Shape{
		{Kind: "clusterset zone", Root: true},
		{Kind: "dns-version", Labels: labels(lit(dnsVersionLabel)), TXT: true},
		{Kind: "svc", Labels: labels(svc), Empty: true, Root: true},
		{Kind: "namespace of svc", Labels: labels(ns, svc), Empty: true},
		{Kind: "clusterset service", Labels: labels(s, ns, svc), StoredAt: headlessAllLabel, SRVAt: srvAllLabel},
		{Kind: "clusterset service, stored", Labels: labels(lit(headlessAllLabel), s, ns, svc), Stored: true},
		{Kind: "clusterset service, SRV stored", Labels: labels(lit(srvAllLabel), s, ns, svc), SRV: true, Stored: true},
		{Kind: "clusterset cluster", Labels: labels(c, s, ns, svc)},
		{Kind: "clusterset endpoint", Labels: labels(variable("<hostname>"), c, s, ns, svc)},
		{Kind: "clusterset protocol", Labels: labels(proto, s, ns, svc), Empty: true},
		{Kind: "clusterset SRV", Labels: labels(port, proto, s, ns, svc), SRV: true,
			Targets: &StoredTargets{Labels: labels(variable("<hostname>"), c), Up: 2}},
	}
}

// CheckClusterSetZone refuses a clusterset zone (empty: none) that is not
// a domain name, or that equals, holds or lies inside the zone of the
// other kinds: each zone's guard and records must own their subtree alone.
func CheckClusterSetZone(zone, clusterSetZone string) error {
	if clusterSetZone == "" {
		return nil
	}
	cs, z := skydnsrecord.CanonicalName(clusterSetZone), skydnsrecord.CanonicalName(zone)
	if err := skydnsrecord.ValidateName(cs); err != nil {
		return fmt.Errorf("clusterset zone %q: %w", clusterSetZone, err)
	}
	if skydnsrecord.IsSubdomain(cs, z) || skydnsrecord.IsSubdomain(z, cs) {
		return fmt.Errorf("clusterset zone %q: equal to, inside or above the zone %q", clusterSetZone, zone)
	}
	return nil
}
