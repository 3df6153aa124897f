package serve

import (
	"errors"
	"fmt"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// Annotations on the EndpointSlices that describe records. The first two
// are the ones the original cross-cluster-connectivity controller wrote, so
// slices from it are served unchanged.
const (
	HostnameAnnotation   = "connectivity.tanzu.vmware.com/dns-hostname"
	GatewayDNSAnnotation = "connectivity.tanzu.vmware.com/gateway-dns-ref"
	TTLAnnotation        = "xcc-dns.io/ttl"
)

// Owner is the owner recorded in every record made from the slice
// namespace/name: the records of one slice are found by it.
func Owner(namespace, name string) string {
	return "EndpointSlice " + namespace + "/" + name
}

// SliceRecords returns the records the slice describes, keyed by etcd key.
//
// A slice without the hostname annotation describes no records. A bad
// hostname or address type refuses the whole slice (nothing is published
// under a name that is not the one asked for). A bad address or TTL refuses
// only itself: the slice's valid addresses are still published, and every
// problem is returned so the caller can report it.
func SliceRecords(slice *discoveryv1.EndpointSlice, domain string) (skydnsrecord.Set, []error) {
	hostname, ok := slice.Annotations[HostnameAnnotation]
	if !ok {
		return nil, nil
	}
	name, _, err := skydnsrecord.ParseHostname(hostname, domain)
	if err != nil {
		return nil, []error{fmt.Errorf("annotation %s: %w", HostnameAnnotation, err)}
	}
	var problems []error
	ttl := skydnsrecord.DefaultTTL
	if v, ok := slice.Annotations[TTLAnnotation]; ok {
		n, err := strconv.ParseUint(v, 10, 32)
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("annotation %s=%q: %w; using %d", TTLAnnotation, v, err, ttl))
		case uint32(n) < skydnsrecord.MinTTL || uint32(n) > skydnsrecord.MaxTTL:
			problems = append(problems, fmt.Errorf("annotation %s=%q: outside %d..%d; using %d", TTLAnnotation, v, skydnsrecord.MinTTL, skydnsrecord.MaxTTL, ttl))
		default:
			ttl = uint32(n)
		}
	}
	parse, err := addressParser(slice.AddressType)
	if err != nil {
		return nil, append(problems, err)
	}
	owner := Owner(slice.Namespace, slice.Name)
	records := skydnsrecord.Set{}
	for _, ep := range slice.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		for _, addr := range ep.Addresses {
			host, err := parse(addr)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			records[skydnsrecord.RecordKey(name, owner, host)] = skydnsrecord.Record{Host: host, TTL: ttl, Owner: owner}
		}
	}
	return records, problems
}

var errAddressFamily = errors.New("address family does not match the slice's addressType")

// addressParser returns the parser of addresses of one slice address type:
// IPv4 -> A, IPv6 -> AAAA, FQDN -> CNAME.
func addressParser(t discoveryv1.AddressType) (func(string) (string, error), error) {
	switch t {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		want4 := t == discoveryv1.AddressTypeIPv4
		return func(s string) (string, error) {
			ip, err := skydnsrecord.ParseAddress(s)
			if err != nil {
				return "", err
			}
			if ip.Is4() != want4 {
				return "", fmt.Errorf("address %q in an %s slice: %w", s, t, errAddressFamily)
			}
			return ip.String(), nil
		}, nil
	case discoveryv1.AddressTypeFQDN:
		return skydnsrecord.ParseTarget, nil
	default:
		return nil, fmt.Errorf("addressType %q: want IPv4, IPv6 or FQDN", t)
	}
}
