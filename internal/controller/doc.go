// Package controller is the management-cluster role of xcc-dns
// (`xcc-syncer controller`): the manager of its two reconcilers,
// GatewayDNS (package gatewaydns) and ClusterSet (package clusterset).
//
// It holds the flags and Options (run.go), leader election, the HTTP
// endpoints and the metrics registry (metrics.go). manager.go builds
// what the two reconcilers share once (mgmt.NewEngine: the management
// informer factories, the Cluster and kubeconfig Secret informers, the
// workload connections of package workload, the lanes; the metrics),
// hands it to both, sends
// them the events that concern both, and runs both side by side until
// both have stopped. The reconcilers never import each other nor this
// package.
package controller
