// Package contract is the EndpointSlice contract between the two roles of
// xcc-dns: the labels and annotations, the names a slice may publish, how
// the controller builds a slice and how serve reads one back, and the one
// set of rules both apply to hostnames, addresses and TTLs.
//
// The controller and serve both use it, so status never says Published for
// anything serve would refuse, and a rule changed in one place holds on both
// sides. It is pure: no I/O.
package contract

import "strings"

// Label and annotation keys of the slices. The connectivity.tanzu.vmware.com
// annotations are what the original cross-cluster-connectivity controller
// wrote, so slices from it are read unchanged.
const (
	AnnotationHostname   = "connectivity.tanzu.vmware.com/dns-hostname"
	AnnotationGatewayRef = "connectivity.tanzu.vmware.com/gateway-dns-ref"
	AnnotationTTL        = "xcc-dns.io/ttl"

	// AnnotationLocality and AnnotationFailoverOrder carry a GatewayDNS's
	// locality policy on the slices of a multi-cluster name (KindGateways,
	// KindName, KindHeadless): how each cluster's DNS picks among the
	// healthy sources.
	// See Locality.
	AnnotationLocality      = "xcc-dns.io/locality"
	AnnotationFailoverOrder = "xcc-dns.io/failover-order"
	// AnnotationSelfNamespace and AnnotationSelfClusters are on the self
	// marker (BuildSelf): which Clusters of a namespace the cluster holding
	// the marker is.
	AnnotationSelfNamespace = "xcc-dns.io/self-namespace"
	AnnotationSelfClusters  = "xcc-dns.io/self-clusters"

	LabelManagedBy = "endpointslice.kubernetes.io/managed-by"
	ManagedByValue = "xcc-dns-controller"
	// LabelAppManagedBy, of ManagedByValue, marks every other object the
	// controller writes into a workload cluster (its Multi-Cluster
	// Services objects) as its own.
	LabelAppManagedBy = "app.kubernetes.io/managed-by"
	// LabelServiceName stays, although nothing of ours reads it: the
	// cluster DNS's kubernetes plugin indexes every EndpointSlice, and for
	// one without it answers PTR queries with a name it cannot send. Its
	// value is ServiceNameValue, never a Service's name.
	LabelServiceName   = "kubernetes.io/service-name"
	LabelSourceCluster = "xcc-dns.io/source-cluster"
	LabelRecord        = "xcc-dns.io/record"
)

// serviceNameSuffix ends every value of LabelServiceName on our slices. A
// Service's name holds no dot, so kube-proxy never takes the slices as
// endpoints of a Service of the slice namespace: a GatewayDNS or an
// exported Service named as the workload chart's own Service, with a
// port named as its port, would otherwise send the cluster DNS's
// forwarded queries to addresses a tenant chose.
const serviceNameSuffix = ".x"

// ServiceNameValue is the value of LabelServiceName on the slices of
// name: name, cut to fit a label value, and serviceNameSuffix.
func ServiceNameValue(name string) string {
	const most = 63 - len(serviceNameSuffix)
	if len(name) > most {
		name = strings.TrimRight(name[:most], "-_.")
	}
	return name + serviceNameSuffix
}

// Kind is the kind of name a slice publishes; each kind states which
// subtree of the zone it lies in and so which namespace owns it.
type Kind string

const (
	// KindGateway is *.gateway.<cluster>.<ns>.clusters.<zone>: the
	// gateway load balancer of a cluster, owned by namespace <ns>.
	KindGateway Kind = "gateway"
	// KindAPI is api.<cluster>.<ns>.clusters.<zone>: the control plane
	// endpoint of a cluster, owned by namespace <ns>.
	KindAPI Kind = "api"
	// KindGateways is *.<gatewaydns>.<ns>.gateways.<zone>: the gateways of
	// every cluster a GatewayDNS selects, one slice per (source cluster,
	// address family), owned by namespace <ns> and GatewayDNS <gatewaydns>.
	// Serve answers the healthy ones its locality policy picks.
	KindGateways Kind = "gateways"
	// KindName is <name>.<ns>.names.<zone>: a name a LoadBalancer Service
	// in a selected cluster claims with the fqdn annotation, owned by
	// namespace <ns>; every cluster that exports it is one source, as for
	// KindGateways.
	KindName Kind = "name"
	// KindHeadless is <gatewaydns>.<ns>.services.<zone> and the names
	// below it: the ready pods of a headless Service that GatewayDNS
	// <gatewaydns> of namespace <ns> exports (resolutionType headless),
	// one slice per (source cluster, address family, port set), owned by
	// that GatewayDNS as KindGateways is. Each slice gives its cluster's
	// names <cluster>.<gatewaydns>... and <pod>.<cluster>.<gatewaydns>...
	// on its own; the name across clusters and its SRV records
	// _<port>._<proto>.<gatewaydns>... are made from every source
	// together, by health and locality, as for KindGateways. See
	// HeadlessNames.
	KindHeadless Kind = "headless"
	// KindSelf labels the self marker, which publishes no name (BuildSelf).
	KindSelf Kind = "self"
)

// MultiCluster reports whether the records of a name of kind k are made
// from the slices of several source clusters together, by health and
// locality (Select), rather than from each slice alone.
func (k Kind) MultiCluster() bool {
	return k == KindGateways || k == KindName || k == KindHeadless || k == KindClusterSet
}

// Bounds of what one slice may carry.
const (
	// MaxAddressesPerEndpoint is the API server's limit on the addresses
	// of one endpoint; Build splits longer lists over several endpoints.
	MaxAddressesPerEndpoint = 100
	// MaxAddressesPerSlice bounds the records one slice publishes, on both
	// sides: the controller refuses more with a status reason, serve
	// refuses the whole slice. Ten endpoints of the API server's maximum.
	MaxAddressesPerSlice = 10 * MaxAddressesPerEndpoint
	// MaxPortsPerSlice bounds the ports of a headless slice: each named
	// port is one SRV record per pod, so 1,000 pods of 16 ports are 16,000
	// records in every cluster.
	MaxPortsPerSlice = 16
	// MaxRecordsPerName bounds the records of one name made from several
	// sources (the headless name across clusters, each of its SRV names):
	// the etcd plugin reads each SRV target's addresses once per query.
	// 1,000 A or AAAA records of the name fit in one DNS message over TCP
	// (compressed, 16 or 28 bytes each). An SRV name holds fewer: only
	// what fits in one message with its targets' addresses, whose size
	// depends on the names (SRVAnswerBudget, SRVTargetSize; about 600 at
	// 1,000 pods of StatefulSet names). serve cuts by taking the picked
	// sources' records in turn, so each keeps a share, and reports it.
	MaxRecordsPerName = 1000
)
