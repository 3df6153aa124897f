package contract

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// ErrAddressFamily is wrapped when an address does not match the address
// type of its slice.
var ErrAddressFamily = errors.New("address family does not match the slice's addressType")

// ErrNotAllowed is wrapped when an endpoint address lies outside the
// operator's allowed CIDRs.
var ErrNotAllowed = errors.New("outside the allowed CIDRs")

// EndpointAddress decides whether a pod address of a slice of type t
// (IPv4 or IPv6) may be handed on, and returns its canonical form: it must
// pass ParseAddress (the slice's family; not unspecified, loopback,
// link-local, multicast or broadcast) and lie in allowed (the operator's
// --allowed-cidrs; empty allows any). It is the one rule of both data
// paths, through ReadyEndpoints: the DNS records of headless names and the
// EndpointSlices kube-proxy reads behind a ClusterSetIP, so a member can
// send no traffic by one path to an address the other refuses.
func EndpointAddress(t discoveryv1.AddressType, s string, allowed cidr.List) (string, error) {
	if t != discoveryv1.AddressTypeIPv4 && t != discoveryv1.AddressTypeIPv6 {
		return "", fmt.Errorf("address %q: addressType %q: an endpoint address is IPv4 or IPv6", s, t)
	}
	host, err := ParseAddress(t, s, "")
	if err != nil {
		return "", err
	}
	if len(allowed) > 0 && !allowed.Contains(netip.MustParseAddr(host)) {
		return "", fmt.Errorf("address %s: %w %s", host, ErrNotAllowed, allowed)
	}
	return host, nil
}

// ParseAddress reads one address of a slice of type t the way serve
// publishes it: IPv4 -> A, IPv6 -> AAAA, FQDN -> CNAME target. It returns
// the canonical form. The controller only puts into a slice what this
// accepts (see Classify), so the two sides cannot disagree.
//
// A CNAME target inside the zone is refused: the etcd plugin follows such
// a target itself, past the Corefile's guards, so a target such as
// any.clusters.<zone> would read and answer every record of the zone.
// A load balancer's hostname is never a name of ours.
func ParseAddress(t discoveryv1.AddressType, s, zone string) (string, error) {
	switch t {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		ip, err := skydnsrecord.ParseAddress(s)
		if err != nil {
			return "", err
		}
		if ip.Is4() != (t == discoveryv1.AddressTypeIPv4) {
			return "", fmt.Errorf("address %q in an %s slice: %w", s, t, ErrAddressFamily)
		}
		return ip.String(), nil
	case discoveryv1.AddressTypeFQDN:
		name, err := skydnsrecord.ParseTarget(s)
		if err != nil {
			return "", err
		}
		if z := skydnsrecord.CanonicalName(zone); skydnsrecord.IsSubdomain(name, z) {
			return "", fmt.Errorf("target %q: %w: inside the zone %q", s, skydnsrecord.ErrInvalidName, z)
		}
		return name, nil
	default:
		return "", fmt.Errorf("addressType %q: want IPv4, IPv6 or FQDN", t)
	}
}

func isAddressTypeKnown(t discoveryv1.AddressType) bool {
	switch t {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
		return true
	}
	return false
}

// Addresses are a source's addresses sorted into the families a slice
// holds, each list sorted and without duplicates.
type Addresses struct {
	IPv4, IPv6, FQDN []string
	// Refused lists each address that can never be published, with why.
	Refused []string
}

// All returns every accepted address: IPv4, then IPv6, then hostnames.
func (a Addresses) All() []string { return slices.Concat(a.IPv4, a.IPv6, a.FQDN) }

// Classify sorts the IPs and hostnames a load balancer or a Cluster
// reports into families, by the rules of ParseAddress. An entry in ips that
// is not an address but a DNS name is taken as a hostname (some load
// balancers report one there); an IPv4-mapped IPv6 address counts as IPv4.
func Classify(ips, hostnames []string, zone string) Addresses {
	var a Addresses
	seen := map[string]bool{}
	add := func(t discoveryv1.AddressType, s string) {
		host, err := ParseAddress(t, s, zone)
		if err != nil {
			a.Refused = append(a.Refused, err.Error())
			return
		}
		if seen[host] {
			return
		}
		seen[host] = true
		switch t {
		case discoveryv1.AddressTypeIPv4:
			a.IPv4 = append(a.IPv4, host)
		case discoveryv1.AddressTypeIPv6:
			a.IPv6 = append(a.IPv6, host)
		default:
			a.FQDN = append(a.FQDN, host)
		}
	}
	for _, s := range ips {
		s = strings.TrimSpace(s)
		ip, err := netip.ParseAddr(s)
		switch {
		case err == nil && ip.Unmap().Is4():
			add(discoveryv1.AddressTypeIPv4, s)
		case err == nil:
			add(discoveryv1.AddressTypeIPv6, s)
		case strings.ContainsAny(s, ":%") || strings.Trim(s, "0123456789.") == "":
			// A malformed address (10.0.0.300, fe80::1%eth0), not a hostname.
			a.Refused = append(a.Refused, fmt.Sprintf("%q: %v", s, err))
		default:
			add(discoveryv1.AddressTypeFQDN, s)
		}
	}
	for _, h := range hostnames {
		add(discoveryv1.AddressTypeFQDN, strings.TrimSpace(h))
	}
	slices.Sort(a.IPv4)
	slices.Sort(a.IPv6)
	slices.Sort(a.FQDN)
	return a
}
