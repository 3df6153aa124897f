package desired

import "github.com/xcc-dns/xcc-dns/internal/kubeconfig"

// Reason is a word of status.clusters[].reason or status.names[].reason:
// what the desired result says of one source cluster or one name. The
// controller README says what an operator does about each.
//
// It is an alias of string: the status API's fields are strings, and the
// controller compares and joins these words with them as they are.
type Reason = string

// Reasons of a cluster's status entry (status.clusters[].reason).
const (
	ReasonPublished                 Reason = "Published"
	ReasonInvalidClusterName        Reason = "InvalidClusterName"
	ReasonConflict                  Reason = "Conflict"
	ReasonInvalidServiceRef         Reason = "InvalidServiceRef"
	ReasonUnsupportedResolutionType Reason = "UnsupportedResolutionType"
	ReasonKubeconfigMissing         Reason = kubeconfig.ReasonMissing
	ReasonKubeconfigInvalid         Reason = kubeconfig.ReasonInvalid
	ReasonKubeconfigRefused         Reason = kubeconfig.ReasonRefused
	ReasonClusterUnreachable        Reason = "ClusterUnreachable"
	ReasonServiceNotFound           Reason = "ServiceNotFound"
	ReasonServiceNotLoadBalancer    Reason = "ServiceNotLoadBalancer"
	ReasonNoLoadBalancerIngress     Reason = "NoLoadBalancerIngress"
	ReasonNoValidAddresses          Reason = "NoValidAddresses"
	ReasonAddressNotAllowed         Reason = "AddressNotAllowed"
	ReasonTooManyAddresses          Reason = "TooManyAddresses"
	ReasonInvalidNamespaceName      Reason = "InvalidNamespaceName"
	// ReasonAddressConflict: another cluster publishes one of this
	// cluster's addresses too. Its names are still published, but serve
	// publishes no PTR for a shared address (either cluster could be the
	// one lying about it). Conflict instead means an older GatewayDNS owns
	// the cluster's names.
	ReasonAddressConflict Reason = "AddressConflict"
	// ReasonClusterDeleting: the Cluster has a deletionTimestamp; its
	// names are removed at once rather than when it is gone.
	ReasonClusterDeleting Reason = "ClusterDeleting"
	// ReasonServiceNotHeadless: resolutionType headless names a Service
	// whose clusterIP is not None; nothing of it is published.
	ReasonServiceNotHeadless Reason = "ServiceNotHeadless"
	// ReasonTooManyEndpoints: a headless Service has more ready endpoints
	// of one port set and address family than a slice may carry
	// (contract.MaxAddressesPerSlice), or more than a Limit allows; the
	// last published ones stay, or a fair part is published.
	ReasonTooManyEndpoints Reason = "TooManyEndpoints"
	// ReasonTooManyNames: the Services of the cluster claim more names
	// than a Limit allows (per cluster, or per GatewayDNS); the first
	// ones by name are published, the rest are not.
	ReasonTooManyNames Reason = "TooManyNames"
	// ReasonClusterCutOff: what the workload cluster's API server
	// returned passed a limit on reads (too many objects, too large a
	// response): its informers are stopped for a while and its last
	// published names kept, as for an unreachable cluster.
	ReasonClusterCutOff Reason = "ClusterCutOff"
)

// Reasons of a name's status entry (status.names[].reason), besides
// ReasonPublished and ReasonConflict.
const (
	// ReasonNameRefused: the name lies outside what the operator granted
	// the GatewayDNS's namespace (its default <label>.<ns>.names.<zone>
	// and --name-grants); nothing is published for it.
	ReasonNameRefused Reason = "NameRefused"
	// ReasonInvalidName: the annotation's value is no name that can be
	// claimed (not a DNS name, too long, a wildcard, the label "any").
	ReasonInvalidName Reason = "InvalidName"
	// ReasonNoAddresses: no Service claiming the name has a valid
	// load-balancer address (none yet, or all refused).
	ReasonNoAddresses Reason = "NoAddresses"
)
