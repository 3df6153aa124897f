// Package workload owns the controller's connections to workload
// clusters: a client built from each Cluster's kubeconfig Secret (inline
// credentials only, see internal/kubeconfig), an informer on its slice
// namespace (whose presence opts the cluster in) and one on each gateway
// Service; for a clusterset member one informer per kind it reads
// (exports.go; its EndpointSlices one watch for every admitted export,
// export_slices.go) and on the writer's own objects there, of the kinds it names (own.go). A Set shares them among every GatewayDNS and ClusterSet
// that uses a cluster and stops them when none does, so a thousand syncs
// open one connection per cluster, not one per sync, and a write plans
// from caches instead of lists.
package workload
