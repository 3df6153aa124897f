// Package workload owns the controller's connections to workload
// clusters: a client built from each Cluster's kubeconfig Secret (inline
// credentials only, see internal/kubeconfig), an informer on its slice
// namespace (whose presence opts the cluster in) and one on each gateway
// Service. A Set shares them among every GatewayDNS that uses a cluster and
// stops them when none does, so a thousand GatewayDNS syncs open one
// connection per cluster, not one per sync.
package workload
