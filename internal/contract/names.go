package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

const (
	// clustersLabel roots the per-cluster names: <cluster>.<ns>.clusters.<zone>.
	clustersLabel = "clusters"
	// gatewaysLabel roots the multi-cluster gateway names:
	// <gatewaydns>.<ns>.gateways.<zone>.
	gatewaysLabel = "gateways"
	// namesLabel roots the names Services claim with the fqdn annotation,
	// one subtree per namespace: <name>.<ns>.names.<zone>.
	namesLabel = "names"
	// servicesLabel roots the names of exported headless Services:
	// <gatewaydns>.<ns>.services.<zone> and the names below it.
	servicesLabel = "services"
	// wildcardLabel is the etcd plugin's other wildcard besides "*": a
	// path label "any" makes it read the whole subtree. No name we publish
	// may contain it, so no query for one of ours needs to reach etcd.
	wildcardLabel = "any"

	maxSliceNameLength = 63
	sliceNameHashChars = 8
)

// ErrOutsideSubtree is wrapped when a hostname is valid but not a name the
// slice's namespace may publish.
var ErrOutsideSubtree = errors.New("outside the names the namespace owns")

// ValidateLabel reports whether label may name a cluster or a namespace
// in a published name: an RFC 1123 label that is not "any".
func ValidateLabel(label string) error {
	if err := skydnsrecord.ValidateLabel(label); err != nil {
		return err
	}
	if label == wildcardLabel {
		return fmt.Errorf("%w: label %q is the DNS server's wildcard", skydnsrecord.ErrInvalidName, label)
	}
	return nil
}

// GatewayHostname is the wildcard name of a cluster's gateway.
func GatewayHostname(cluster, namespace, zone string) string {
	return "*." + string(KindGateway) + "." + clusterName(cluster, namespace, zone)
}

// APIHostname is the name of a cluster's API server.
func APIHostname(cluster, namespace, zone string) string {
	return string(KindAPI) + "." + clusterName(cluster, namespace, zone)
}

func clusterName(cluster, namespace, zone string) string {
	return cluster + "." + namespace + "." + clustersLabel + "." + skydnsrecord.CanonicalName(zone)
}

// GatewaysHostname is the wildcard multi-cluster name of a GatewayDNS: the
// gateways of every cluster it selects.
func GatewaysHostname(gatewayDNS, namespace, zone string) string {
	return "*." + gatewayDNS + "." + namespace + "." + gatewaysLabel + "." + skydnsrecord.CanonicalName(zone)
}

// DefaultNameHostname is the name a Service's fqdn annotation may claim in
// the subtree every namespace is granted: <name>.<namespace>.names.<domain>.
func DefaultNameHostname(name, namespace, zone string) string {
	return name + "." + namespace + "." + namesLabel + "." + skydnsrecord.CanonicalName(zone)
}

// HeadlessHostname is the hostname annotation of the slices of a
// GatewayDNS exporting a headless Service: the name across clusters,
// <gatewaydns>.<namespace>.services.<domain>.
func HeadlessHostname(gatewayDNS, namespace, zone string) string {
	return gatewayDNS + "." + namespace + "." + servicesLabel + "." + skydnsrecord.CanonicalName(zone)
}

// Hostname is a published hostname read back into its parts.
type Hostname struct {
	// Name is where the records are stored: the hostname without its
	// wildcard label, canonical.
	Name      string
	Kind      Kind
	Namespace string
	// Cluster is the cluster in the name (KindGateway, KindAPI).
	Cluster string
	// GatewayDNS is the GatewayDNS in the name (KindGateways, KindHeadless).
	GatewayDNS string
}

// ParseHostname reads the hostname annotation of a slice written for the
// GatewayDNS namespace/gatewayDNS and checks that it is a name that
// GatewayDNS's namespace owns, exactly one of:
//
//	*.gateway.<cluster>.<namespace>.clusters.<domain>  (KindGateway)
//	api.<cluster>.<namespace>.clusters.<domain>        (KindAPI)
//	*.<gatewayDNS>.<namespace>.gateways.<domain>       (KindGateways; only the GatewayDNS's own)
//	<name>.<namespace>.names.<domain>                  (KindName)
//	<gatewayDNS>.<namespace>.services.<domain>         (KindHeadless; only the GatewayDNS's own)
//
// Anything else, including a name below another (which the etcd plugin's
// prefix read would add to that name's answers), another namespace's
// name or another GatewayDNS's gateways name, is refused.
func ParseHostname(hostname, namespace, gatewayDNS, zone string) (Hostname, error) {
	return ParseHostnameGranted(hostname, namespace, gatewayDNS, zone, Grants{})
}

// ParseHostnameGranted is ParseHostname that also accepts, as KindName,
// a name exactly one label below a suffix the operator granted namespace
// (ParseGrants); a name below another namespace's grant is refused.
func ParseHostnameGranted(hostname, namespace, gatewayDNS, zone string, grants Grants) (Hostname, error) {
	h, err := parseHostname(hostname, zone)
	if err != nil {
		return Hostname{}, err
	}
	if _, ok := grants.owner(h.name); ok && !h.wildcard {
		return h.claimedName(namespace, zone, grants)
	}
	return h.owned(namespace, gatewayDNS, zone)
}

// parsedHostname is a hostname annotation read once: the name its records
// are stored at and whether it is a wildcard (skydnsrecord.ParseHostname),
// and its labels below the zone, the last being the subtree. Every rule
// of the contract reads these, never the annotation again.
type parsedHostname struct {
	hostname string
	name     string
	wildcard bool
	labels   []string
}

// parseHostname reads hostname, strictly below zone.
func parseHostname(hostname, zone string) (parsedHostname, error) {
	name, wildcard, err := skydnsrecord.ParseHostname(hostname, zone)
	if err != nil {
		return parsedHostname{}, err
	}
	zone = skydnsrecord.CanonicalName(zone)
	return parsedHostname{hostname: hostname, name: name, wildcard: wildcard,
		labels: strings.Split(strings.TrimSuffix(name, "."+zone), ".")}, nil
}

// owned reads h as a name of one of the structured subtrees, which
// namespace (and, for KindGateways and KindHeadless, gatewayDNS) owns.
func (h parsedHostname) owned(namespace, gatewayDNS, zone string) (Hostname, error) {
	want := func() error {
		return fmt.Errorf("hostname %q: %w %q: want *.gateway.<cluster>.%[3]s.%[4]s.%[5]s, api.<cluster>.%[3]s.%[4]s.%[5]s, *.%[6]s.%[3]s.%[7]s.%[5]s, <name>.%[3]s.%[8]s.%[5]s or %[6]s.%[3]s.%[9]s.%[5]s",
			h.hostname, ErrOutsideSubtree, namespace, clustersLabel, skydnsrecord.CanonicalName(zone), gatewayDNS, gatewaysLabel, namesLabel, servicesLabel)
	}
	labels, name, wildcard := h.labels, h.name, h.wildcard
	if len(labels) != 4 && len(labels) != 3 {
		return Hostname{}, want()
	}
	var out Hostname
	switch subtree := labels[len(labels)-1]; {
	case subtree == clustersLabel && len(labels) == 4:
		out = Hostname{Name: name, Kind: Kind(labels[0]), Cluster: labels[1], Namespace: labels[2]}
		switch {
		case out.Kind == KindGateway && wildcard, out.Kind == KindAPI && !wildcard:
		default:
			return Hostname{}, want()
		}
	case subtree == gatewaysLabel && len(labels) == 3 && wildcard:
		out = Hostname{Name: name, Kind: KindGateways, GatewayDNS: labels[0], Namespace: labels[1]}
	case subtree == namesLabel && len(labels) == 3 && !wildcard:
		out = Hostname{Name: name, Kind: KindName, Namespace: labels[1]}
	case subtree == servicesLabel && len(labels) == 3 && !wildcard:
		out = Hostname{Name: name, Kind: KindHeadless, GatewayDNS: labels[0], Namespace: labels[1]}
	default:
		return Hostname{}, want()
	}
	if out.Namespace != namespace {
		return Hostname{}, fmt.Errorf("hostname %q: %w %q: it belongs to namespace %q", h.hostname, ErrOutsideSubtree, namespace, out.Namespace)
	}
	if (out.Kind == KindGateways || out.Kind == KindHeadless) && out.GatewayDNS != gatewayDNS {
		return Hostname{}, fmt.Errorf("hostname %q: %w %s/%s: it belongs to GatewayDNS %s/%s", h.hostname, ErrOutsideSubtree, namespace, gatewayDNS, namespace, out.GatewayDNS)
	}
	for _, l := range labels[:len(labels)-1] {
		if err := ValidateLabel(l); err != nil {
			return Hostname{}, fmt.Errorf("hostname %q: %w", h.hostname, err)
		}
	}
	return out, nil
}

// ParseRef splits a "namespace/name" reference (the gateway-dns-ref
// annotation, a GatewayDNS's spec.service) whose parts are both DNS labels.
func ParseRef(ref string) (namespace, name string, err error) {
	ns, n, found := strings.Cut(ref, "/")
	if !found {
		return "", "", fmt.Errorf("%q is not namespace/name", ref)
	}
	if err := skydnsrecord.ValidateLabel(ns); err != nil {
		return "", "", fmt.Errorf("%q: namespace: %w", ref, err)
	}
	if err := skydnsrecord.ValidateLabel(n); err != nil {
		return "", "", fmt.Errorf("%q: name: %w", ref, err)
	}
	return ns, n, nil
}

// SliceName is deterministic, at most 63 characters, and unique per
// (GatewayDNS, source cluster, kind, address family). The readable prefix
// may be truncated; the hash of the unambiguous tuple keeps names distinct
// even where dashes in names would make two prefixes equal.
func SliceName(gdnsNamespace, gdnsName, cluster string, kind Kind, family string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{gdnsNamespace, gdnsName, cluster, string(kind), family}, "/")))
	suffix := "-" + hex.EncodeToString(sum[:])[:sliceNameHashChars]
	prefix := strings.Join([]string{gdnsName, cluster, string(kind), family}, "-")
	if max := maxSliceNameLength - len(suffix); len(prefix) > max {
		prefix = prefix[:max]
	}
	prefix = strings.TrimRight(strings.ReplaceAll(prefix, ".", "-"), "-")
	return prefix + suffix
}

// nameSliceName is SliceName for a KindName slice: a GatewayDNS has one
// per (name, source cluster, address family), so the name is hashed in
// too, and its first label leads the readable prefix.
func nameSliceName(src Source, family string) string {
	name := skydnsrecord.CanonicalName(src.Hostname)
	sum := sha256.Sum256([]byte(strings.Join([]string{src.Namespace, src.GatewayDNS, src.Cluster, string(KindName), family, name}, "/")))
	suffix := "-" + hex.EncodeToString(sum[:])[:sliceNameHashChars]
	label, _, _ := strings.Cut(name, ".")
	prefix := strings.Join([]string{label, src.Cluster, string(KindName), family}, "-")
	if max := maxSliceNameLength - len(suffix); len(prefix) > max {
		prefix = prefix[:max]
	}
	return strings.TrimRight(prefix, "-") + suffix
}
