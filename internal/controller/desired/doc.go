// Package desired computes what one GatewayDNS should publish: its
// EndpointSlices and one status entry per selected Cluster, from what the
// informers know (Input). Compute is a pure function, so every case of bad
// input is a table test without a client; the address claims (claims.go)
// find one IP address published by two clusters, in any namespace.
//
// The reasons (Reason*) are the vocabulary of status.clusters[].reason,
// shared by the controller loop and the workload connections.
package desired
