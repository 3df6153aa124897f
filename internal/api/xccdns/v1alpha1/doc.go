// Package v1alpha1 holds the API of this project's own group,
// xcc-dns.io/v1alpha1: the ClusterSet, which says which Cluster API
// Clusters of a namespace form one Multi-Cluster Services clusterset
// (docs/mcs.md).
//
// The CRD YAML in charts/xcc-dns-management/crds is generated from these
// types by controller-gen (make generate); edit the types, never the YAML.
//
// +kubebuilder:object:generate=true
// +groupName=xcc-dns.io
package v1alpha1
