package contract

import (
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/owned"
)

// Owned are the label and annotation keys of a contract slice that the
// controller owns: each is what the desired slice says, or absent. Others
// may add any other.
var Owned = owned.Keys{
	Labels: []string{LabelManagedBy, LabelServiceName, LabelSourceCluster, LabelRecord},
	Annotations: []string{AnnotationHostname, AnnotationGatewayRef, AnnotationTTL, AnnotationLocality, AnnotationFailoverOrder,
		AnnotationSelfNamespace, AnnotationSelfClusters, AnnotationServiceImport, AnnotationImportType},
}

// SameSlice reports whether existing, a contract slice in a target,
// already says what desired says (owned.SameSlice under Owned). Labels
// and annotations others add are not fought over. Every writer of
// contract slices, the GatewayDNS one and the ClusterSet one, compares
// with it, and the Multi-Cluster Services writer with the same rule.
func SameSlice(existing, desired *discoveryv1.EndpointSlice) bool {
	return owned.SameSlice(existing, desired, Owned)
}

// MergeSlice is desired as an update of existing: its resource version
// and UID, and the labels and annotations others put on it kept.
func MergeSlice(existing, desired *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	return owned.MergeSlice(existing, desired, Owned)
}
