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
func GatewayHostname(cluster, namespace, domain string) string {
	return "*." + string(KindGateway) + "." + clusterName(cluster, namespace, domain)
}

// APIHostname is the name of a cluster's API server.
func APIHostname(cluster, namespace, domain string) string {
	return string(KindAPI) + "." + clusterName(cluster, namespace, domain)
}

func clusterName(cluster, namespace, domain string) string {
	return cluster + "." + namespace + "." + clustersLabel + "." + skydnsrecord.CanonicalName(domain)
}

// Hostname is a published hostname read back into its parts.
type Hostname struct {
	// Name is where the records are stored: the hostname without its
	// wildcard label, canonical.
	Name      string
	Kind      Kind
	Namespace string
	Cluster   string
}

// ParseHostname reads the hostname annotation of a slice written for a
// GatewayDNS of namespace and checks that it is a name that namespace
// owns: exactly *.gateway.<cluster>.<namespace>.clusters.<domain> or
// api.<cluster>.<namespace>.clusters.<domain>. Anything else, including a
// name below a gateway (which the etcd plugin's prefix read would add to
// that gateway's answers) or another namespace's name, is refused.
func ParseHostname(hostname, namespace, domain string) (Hostname, error) {
	name, wildcard, err := skydnsrecord.ParseHostname(hostname, domain)
	if err != nil {
		return Hostname{}, err
	}
	suffix := "." + clustersLabel + "." + skydnsrecord.CanonicalName(domain)
	head, ok := strings.CutSuffix(name, suffix)
	labels := strings.Split(head, ".")
	if !ok || len(labels) != 3 {
		return Hostname{}, fmt.Errorf("hostname %q: %w %q: want *.gateway.<cluster>.%s%s or api.<cluster>.%s%s",
			hostname, ErrOutsideSubtree, namespace, namespace, suffix, namespace, suffix)
	}
	h := Hostname{Name: name, Kind: Kind(labels[0]), Cluster: labels[1], Namespace: labels[2]}
	switch {
	case h.Kind == KindGateway && wildcard, h.Kind == KindAPI && !wildcard:
	default:
		return Hostname{}, fmt.Errorf("hostname %q: %w %q: want *.gateway.<cluster>.%s%s or api.<cluster>.%s%s",
			hostname, ErrOutsideSubtree, namespace, namespace, suffix, namespace, suffix)
	}
	if h.Namespace != namespace {
		return Hostname{}, fmt.Errorf("hostname %q: %w %q: it belongs to namespace %q", hostname, ErrOutsideSubtree, namespace, h.Namespace)
	}
	for _, l := range []string{h.Cluster, h.Namespace} {
		if err := ValidateLabel(l); err != nil {
			return Hostname{}, fmt.Errorf("hostname %q: %w", hostname, err)
		}
	}
	return h, nil
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
