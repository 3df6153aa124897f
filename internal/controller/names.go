package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Label and annotation keys on the EndpointSlices this controller writes.
// The connectivity.tanzu.vmware.com annotations are the wire format that
// `xcc-syncer serve` (and the original cross-cluster-connectivity) read.
const (
	LabelManagedBy       = "endpointslice.kubernetes.io/managed-by"
	ManagedByValue       = "xcc-dns-controller"
	LabelServiceName     = "kubernetes.io/service-name"
	LabelSourceCluster   = "xcc-dns.io/source-cluster"
	LabelRecord          = "xcc-dns.io/record"
	AnnotationHostname   = "connectivity.tanzu.vmware.com/dns-hostname"
	AnnotationGatewayRef = "connectivity.tanzu.vmware.com/gateway-dns-ref"
	AnnotationTTL        = "xcc-dns.io/ttl"

	recordGateway = "gateway"
	recordAPI     = "api"

	maxNameLength = 63
	nameHashChars = 8
)

// isDNSLabel reports whether s is a lowercase RFC 1123 label. Names that are
// not are refused, never mangled: a Cluster named "a.b" must not publish
// under a.b.<ns>, which would be another cluster's subtree.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// isDNSName reports whether s (without a trailing dot) is a name of lowercase
// RFC 1123 labels, at most 253 octets: what an FQDN EndpointSlice accepts.
func isDNSName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !isDNSLabel(l) {
			return false
		}
	}
	return true
}

// splitServiceRef splits "namespace/name"; ok is false unless both parts are DNS labels.
func splitServiceRef(ref string) (namespace, name string, ok bool) {
	ns, n, found := strings.Cut(ref, "/")
	if !found || !isDNSLabel(ns) || !isDNSLabel(n) {
		return "", "", false
	}
	return ns, n, true
}

// gatewayHostname is the wildcard name of a cluster's gateway.
func gatewayHostname(cluster, clusterNamespace, domain string) string {
	return "*.gateway." + cluster + "." + clusterNamespace + ".clusters." + domain
}

// apiHostname is the name of a cluster's API server.
func apiHostname(cluster, clusterNamespace, domain string) string {
	return "api." + cluster + "." + clusterNamespace + ".clusters." + domain
}

// sliceName is deterministic, at most 63 characters, and unique per
// (GatewayDNS, source cluster, record, address family). The readable prefix
// may be truncated; the hash of the unambiguous tuple keeps names distinct
// even where dashes in names would make two prefixes equal.
func sliceName(gdnsNamespace, gdnsName, cluster, record, family string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{gdnsNamespace, gdnsName, cluster, record, family}, "/")))
	suffix := "-" + hex.EncodeToString(sum[:])[:nameHashChars]
	prefix := strings.Join([]string{gdnsName, cluster, record, family}, "-")
	if max := maxNameLength - len(suffix); len(prefix) > max {
		prefix = prefix[:max]
	}
	prefix = strings.TrimRight(strings.ReplaceAll(prefix, ".", "-"), "-")
	return prefix + suffix
}
