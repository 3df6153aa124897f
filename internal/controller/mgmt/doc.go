// Package mgmt holds the Engine both reconcilers of the controller
// (GatewayDNS and ClusterSet) run on, built once by NewEngine (the
// controller's manager, and each reconciler's tests, build it alike),
// and what they do the same way in
// the management cluster: write an
// object's status subresource, patch its finalizers, and turn a
// Cluster's kubeconfig Secret into a workload connection. One place, so
// the two never drift apart on how a conflict, a gone object or a
// missing Secret is treated.
package mgmt
