package contract

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// TTL bounds: those of GatewayDNS spec.ttl, so that what the API server
// accepts serve publishes, and nothing else.
const (
	MinTTL = v1alpha1.MinTTL
	MaxTTL = v1alpha1.MaxTTL
)

// Source names what a set of slices is published for: the GatewayDNS,
// its source cluster, the kind and the name.
type Source struct {
	// GatewayDNS is the namespace and name of the GatewayDNS.
	Namespace, GatewayDNS string
	// Cluster is the source cluster.
	Cluster string
	Kind    Kind
	// Hostname is the value of the hostname annotation: the published
	// name, "*." before it for a wildcard (GatewayHostname, APIHostname,
	// GatewaysHostname, NameHostname, HeadlessHostname).
	Hostname string
	// TTL is the record TTL in seconds; 0 leaves serve's default.
	TTL int32
	// Locality is the GatewayDNS's policy, written on the slices of a
	// multi-cluster name (Kind.MultiCluster) and only there.
	Locality Locality
	// Unhealthy marks every endpoint not ready: the source cluster's
	// gateway is not to be answered while another one is healthy. Only
	// multi-cluster names carry health; the others publish what they have.
	Unhealthy bool
}

// Build returns one EndpointSlice per non-empty family of addrs, without a
// namespace (the same slices go to every target cluster). Each family's
// addresses are split over endpoints of at most MaxAddressesPerEndpoint;
// callers refuse more than MaxAddressesPerSlice before building.
func Build(src Source, addrs Addresses) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, f := range []struct {
		t     discoveryv1.AddressType
		addrs []string
	}{{discoveryv1.AddressTypeIPv4, addrs.IPv4}, {discoveryv1.AddressTypeIPv6, addrs.IPv6}, {discoveryv1.AddressTypeFQDN, addrs.FQDN}} {
		if len(f.addrs) == 0 {
			continue
		}
		s := newSlice(src, strings.ToLower(string(f.t)), f.t)
		ready := !src.Unhealthy || !src.Kind.MultiCluster()
		for chunk := range slices.Chunk(f.addrs, MaxAddressesPerEndpoint) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  slices.Clone(chunk),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
			})
		}
		out = append(out, s)
	}
	return out
}

// newSlice returns a slice of src without endpoints, named for family: the
// labels and annotations every kind carries.
func newSlice(src Source, family string, t discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	name := SliceName(src.Namespace, src.GatewayDNS, src.Cluster, src.Kind, family)
	if src.Kind == KindName {
		name = nameSliceName(src, family)
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				LabelManagedBy:     ManagedByValue,
				LabelServiceName:   ServiceNameValue(src.GatewayDNS),
				LabelSourceCluster: src.Cluster,
				LabelRecord:        string(src.Kind),
			},
			Annotations: map[string]string{
				AnnotationHostname:   src.Hostname,
				AnnotationGatewayRef: src.Namespace + "/" + src.GatewayDNS,
			},
		},
		AddressType: t,
	}
	if src.TTL != 0 {
		s.Annotations[AnnotationTTL] = strconv.Itoa(int(src.TTL))
	}
	if src.Kind.MultiCluster() {
		src.Locality.annotate(s.Annotations)
	}
	return s
}

// parseTTL reads the TTL annotation, def when it is not set or refused.
func parseTTL(annotations map[string]string, def uint32) (ttl uint32, problems []error) {
	v, set := annotations[AnnotationTTL]
	if !set {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	switch {
	case err != nil:
		return def, []error{fmt.Errorf("annotation %s=%q: %w; using %d", AnnotationTTL, v, err, def)}
	case n < MinTTL || n > MaxTTL:
		return def, []error{fmt.Errorf("annotation %s=%q: outside %d..%d; using %d", AnnotationTTL, v, MinTTL, MaxTTL, def)}
	}
	return uint32(n), nil
}

// Parsed is what a slice asks serve to publish.
type Parsed struct {
	Hostname
	// TTL in seconds; when the slice sets none, skydnsrecord.DefaultTTL,
	// or DefaultGatewaysTTL for a multi-cluster name.
	TTL uint32
	// Hosts are the canonical addresses or CNAME targets of the ready
	// endpoints, one record each.
	Hosts []string
	// Unready are those of the endpoints that are not ready. Only a
	// multi-cluster name publishes them, and only while no source of the
	// name is healthy (Select).
	Unready []string
	// Source is the source cluster (label xcc-dns.io/source-cluster) and
	// Locality the policy, of a multi-cluster name.
	Source   string
	Locality Locality
	// Pods and Ports are those of a headless slice (KindHeadless): every
	// serving endpoint with its own label, and the named ports.
	Pods  []HeadlessPod
	Ports []Port
	// ClusterSetIP marks a KindClusterSet slice of a ClusterSetIP import:
	// Hosts are the member's ClusterSetIPs and each named port is an SRV
	// name with target the import's name. Otherwise a KindClusterSet slice
	// is a Headless import's, read as KindHeadless is.
	ClusterSetIP bool
}

// Parse reads a slice the way serve publishes it. ok is false for a slice
// without the hostname annotation (it describes no records) and for one
// refused whole: a hostname its gateway-dns-ref namespace does not own, a
// bad address type, more than MaxAddressesPerSlice addresses. A bad
// address or TTL refuses only itself. Every problem is returned so the
// caller can report it; not-ready endpoints are skipped.
func Parse(slice *discoveryv1.EndpointSlice, zone string) (p Parsed, ok bool, problems []error) {
	return ParseGranted(slice, zone, Grants{})
}

// ParseGranted is Parse under the operator's name grants: a KindName
// slice may also publish a name granted to its namespace.
func ParseGranted(slice *discoveryv1.EndpointSlice, zone string, grants Grants) (p Parsed, ok bool, problems []error) {
	hostname, has := slice.Annotations[AnnotationHostname]
	if !has {
		return Parsed{}, false, nil
	}
	ns, _, err := ParseRef(slice.Annotations[AnnotationGatewayRef])
	if err != nil {
		return Parsed{}, false, []error{fmt.Errorf("annotation %s: %w", AnnotationGatewayRef, err)}
	}
	_, gd, _ := ParseRef(slice.Annotations[AnnotationGatewayRef])
	if p.Hostname, err = ParseHostnameGranted(hostname, ns, gd, zone, grants); err != nil {
		return Parsed{}, false, []error{fmt.Errorf("annotation %s: %w", AnnotationHostname, err)}
	}
	ttl := skydnsrecord.DefaultTTL
	if p.Kind.MultiCluster() {
		ttl = DefaultGatewaysTTL
		p.Source = slice.Labels[LabelSourceCluster]
		if err := ValidateLabel(p.Source); err != nil {
			return Parsed{}, false, []error{fmt.Errorf("label %s=%q: the source cluster of a %s name: %w", LabelSourceCluster, p.Source, p.Kind, err)}
		}
		if p.Locality, err = parseLocality(slice.Annotations); err != nil {
			return Parsed{}, false, []error{err}
		}
	}
	p.TTL, problems = parseTTL(slice.Annotations, ttl)
	if p.Kind == KindHeadless {
		ok, more := parseHeadless(slice, zone, &p)
		if !ok {
			return Parsed{}, false, append(problems, more...)
		}
		return p, true, append(problems, more...)
	}
	if !isAddressTypeKnown(slice.AddressType) {
		return Parsed{}, false, append(problems, fmt.Errorf("addressType %q: want IPv4, IPv6 or FQDN", slice.AddressType))
	}
	count := 0
	for _, ep := range slice.Endpoints {
		count += len(ep.Addresses)
	}
	if count > MaxAddressesPerSlice {
		return Parsed{}, false, append(problems, fmt.Errorf("%d addresses, more than %d in one slice: refused whole", count, MaxAddressesPerSlice))
	}
	seen := map[string]bool{}
	for _, ready := range []bool{true, false} {
		for _, ep := range slice.Endpoints {
			// Ready unset means ready (the EndpointSlice API's rule).
			if (ep.Conditions.Ready == nil || *ep.Conditions.Ready) != ready {
				continue
			}
			for _, addr := range ep.Addresses {
				host, err := ParseAddress(slice.AddressType, addr, zone)
				if err != nil {
					problems = append(problems, err)
					continue
				}
				if seen[host] {
					continue
				}
				seen[host] = true
				if ready {
					p.Hosts = append(p.Hosts, host)
				} else {
					p.Unready = append(p.Unready, host)
				}
			}
		}
	}
	return p, true, problems
}

// ReadyEndpointCount counts the endpoints of a Service's EndpointSlices that
// take traffic: conditions.ready true or unset (the EndpointSlice API reads
// unset as ready) and not terminating.
func ReadyEndpointCount(slices []*discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if ep.Conditions.Terminating != nil && *ep.Conditions.Terminating {
				continue
			}
			n++
		}
	}
	return n
}

// NameService is a LoadBalancer Service of a workload cluster annotated
// with AnnotationFQDN, as the controller's informer keeps it, with the
// health of its endpoints.
type NameService struct {
	// Namespace and Name of the Service in the workload cluster.
	Namespace, Name string
	// Value is the annotation's value, as the tenant wrote it.
	Value   string
	Ingress []corev1.LoadBalancerIngress
	// EndpointsSynced says the Service's EndpointSlices were read;
	// ReadyEndpoints counts those taking traffic (ReadyEndpointCount).
	EndpointsSynced bool
	ReadyEndpoints  int
}
