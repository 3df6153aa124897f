package skydnsrecord

import "net/netip"

// MetadataAddresses are the cloud instance metadata and platform service
// addresses (and one reserved block) that lie outside the link-local
// ranges, which ParseAddress refuses anyway: a pod sent to one reaches the
// node's metadata service and, through it, the node's credentials. Every
// entry is one a provider documents or its own tools use; each is refused
// whatever the operator's allowed CIDRs. The link-local ones (AWS, GCP,
// Azure, OpenStack, Oracle 169.254.169.254; AWS ECS 169.254.170.2; EKS
// Pod Identity 169.254.170.23; fe80::a9fe:a9fe) are refused as link-local.
var MetadataAddresses = []string{
	"fd00:ec2::/32",          // AWS: IMDS fd00:ec2::254, DNS ::253, NTP ::123, EKS Pod Identity ::23
	"fd20:ce::254/128",       // Google Cloud metadata server, IPv6-only instances
	"fd00:c1::a9fe:a9fe/128", // Oracle Cloud Infrastructure metadata, IPv6
	"100.100.100.200/32",     // Alibaba Cloud metadata
	"168.63.129.16/32",       // Azure WireServer (platform agent, DNS, DHCP)
	"192.0.0.192/32",         // Oracle Cloud Classic metadata
}

// metadataPrefixes are MetadataAddresses parsed once.
var metadataPrefixes = func() []netip.Prefix {
	out := make([]netip.Prefix, len(MetadataAddresses))
	for i, s := range MetadataAddresses {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}()

// IsMetadataAddress says whether ip (IPv4-mapped IPv6 judged as its IPv4)
// is one of MetadataAddresses.
func IsMetadataAddress(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, p := range metadataPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
