// Package gatewaydns is the GatewayDNS reconciler of the management
// controller. For each GatewayDNS it keeps, in the slice namespace of
// every opted-in workload cluster of its namespace (a target), the
// EndpointSlices of its names: the gateway and api names of the Clusters
// it selects, their fqdn names and, for a headless export, its pods;
// `xcc-syncer serve` turns those slices into DNS records.
//
// Informer events enqueue GatewayDNS keys into one rate-limited work
// queue (reconciler.go). A sync (sync.go) runs these steps in order,
// each reading only what the one before produced:
//
//   - read (read.go): what the caches know, and nothing else: the
//     GatewayDNS, the Clusters of its namespace and which GatewayDNS owns
//     their names, each Cluster's connection (package mgmt), its gateway
//     Service, endpoints and names (package workload);
//   - desired (sync.go, compute): the slices and a status entry per
//     cluster and name, a pure function of the read (package desired),
//     then the address conflicts between GatewayDNS;
//   - plan and write (write.go, package publish): each target with the
//     self marker of its destination, then the difference to what it
//     holds, written in the background with a deadline and backoff per
//     destination, so a slow target delays only itself;
//   - status (status.go, events.go): Ready only where every target holds
//     the records, the targets behind and since when, and an Event per
//     changed reason.
//
// The order is the point: the desired result depends on the read alone,
// so it is computed and tested without API calls; the write only changes
// what the plan says, and status says what the writes came to, not what
// was wanted. A GatewayDNS that is gone or being deleted has its slices
// removed from every target instead (remove.go; its Finalizer waits for
// that, finalizer.go).
//
// memory.go is what a GatewayDNS's syncs remember between them (reasons,
// since-times, headless endpoints), names.go the names each GatewayDNS
// claims, read by the syncs of the others, and headless.go the headless
// endpoints kept across restarts (package state).
//
// It shares with the ClusterSet reconciler the Cluster informer, the
// kubeconfig Secret cache and the workload connections, handed to it in
// Config by the controller, which also starts it; it never imports the
// controller's root package, nor package clusterset.
package gatewaydns
