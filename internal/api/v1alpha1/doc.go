// Package v1alpha1 holds the GatewayDNS API (connectivity.tanzu.vmware.com/v1alpha1).
//
// The group and kind keep the names of the original cross-cluster-connectivity
// project so that manifests written for it (seed walkthrough) apply unchanged.
// The CRD YAML in charts/xcc-dns-management/crds is generated from these types
// by controller-gen (make generate); edit the types, never the YAML.
//
// +kubebuilder:object:generate=true
// +groupName=connectivity.tanzu.vmware.com
package v1alpha1
