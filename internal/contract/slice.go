package contract

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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

// Source names what a set of slices is published for.
type Source struct {
	// GatewayDNS is the namespace and name of the GatewayDNS.
	Namespace, GatewayDNS string
	// Cluster is the source cluster.
	Cluster string
	Kind    Kind
	// Hostname is the published name (GatewayHostname or APIHostname).
	Hostname string
	// TTL is the record TTL in seconds; 0 leaves serve's default.
	TTL int32
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
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: SliceName(src.Namespace, src.GatewayDNS, src.Cluster, src.Kind, strings.ToLower(string(f.t))),
				Labels: map[string]string{
					LabelManagedBy:     ManagedByValue,
					LabelServiceName:   src.GatewayDNS,
					LabelSourceCluster: src.Cluster,
					LabelRecord:        string(src.Kind),
				},
				Annotations: map[string]string{
					AnnotationHostname:   src.Hostname,
					AnnotationGatewayRef: src.Namespace + "/" + src.GatewayDNS,
				},
			},
			AddressType: f.t,
		}
		for chunk := range slices.Chunk(f.addrs, MaxAddressesPerEndpoint) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  slices.Clone(chunk),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			})
		}
		if src.TTL != 0 {
			s.Annotations[AnnotationTTL] = strconv.Itoa(int(src.TTL))
		}
		out = append(out, s)
	}
	return out
}

// Parsed is what a slice asks serve to publish.
type Parsed struct {
	Hostname
	// TTL in seconds, skydnsrecord.DefaultTTL when the slice sets none.
	TTL uint32
	// Hosts are the canonical addresses or CNAME targets, one record each.
	Hosts []string
}

// Parse reads a slice the way serve publishes it. ok is false for a slice
// without the hostname annotation (it describes no records) and for one
// refused whole: a hostname its gateway-dns-ref namespace does not own, a
// bad address type, more than MaxAddressesPerSlice addresses. A bad
// address or TTL refuses only itself. Every problem is returned so the
// caller can report it; not-ready endpoints are skipped.
func Parse(slice *discoveryv1.EndpointSlice, domain string) (p Parsed, ok bool, problems []error) {
	hostname, has := slice.Annotations[AnnotationHostname]
	if !has {
		return Parsed{}, false, nil
	}
	ns, _, err := ParseRef(slice.Annotations[AnnotationGatewayRef])
	if err != nil {
		return Parsed{}, false, []error{fmt.Errorf("annotation %s: %w", AnnotationGatewayRef, err)}
	}
	if p.Hostname, err = ParseHostname(hostname, ns, domain); err != nil {
		return Parsed{}, false, []error{fmt.Errorf("annotation %s: %w", AnnotationHostname, err)}
	}
	p.TTL = skydnsrecord.DefaultTTL
	if v, set := slice.Annotations[AnnotationTTL]; set {
		n, err := strconv.ParseUint(v, 10, 32)
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("annotation %s=%q: %w; using %d", AnnotationTTL, v, err, p.TTL))
		case n < MinTTL || n > MaxTTL:
			problems = append(problems, fmt.Errorf("annotation %s=%q: outside %d..%d; using %d", AnnotationTTL, v, MinTTL, MaxTTL, p.TTL))
		default:
			p.TTL = uint32(n)
		}
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
	for _, ep := range slice.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		for _, addr := range ep.Addresses {
			host, err := ParseAddress(slice.AddressType, addr, domain)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			if !seen[host] {
				seen[host] = true
				p.Hosts = append(p.Hosts, host)
			}
		}
	}
	return p, true, problems
}
