// Package desired computes what one GatewayDNS should publish: its
// EndpointSlices and one status entry per selected Cluster, from what the
// informers know (Input). Compute is a pure function, so every case of bad
// input is a table test without a client.
//
// Compute admits each selected cluster, then walks the kinds of name
// (kinds.go), each one unit of one signature with its own file and
// table test: api and gateway (gateway.go), gateways (gateway.go),
// headless (headless.go), name (names.go). The limits (limits.go) bound
// what tenants can make it publish; the address claims (claims.go) find
// one IP address published by two clusters, in any namespace.
//
// The reasons (reasons.go) are the vocabulary of status.clusters[].reason
// and status.names[].reason, shared by the controller loop and the
// workload connections.
package desired
