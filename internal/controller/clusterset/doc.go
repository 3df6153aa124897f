// Package clusterset is the ClusterSet reconciler of the management
// controller: the Multi-Cluster Services half (docs/mcs.md). For each
// ClusterSet it keeps, in every member, the ServiceImports, derived
// Services and EndpointSlices of what the members export, and the
// clusterset contract slices serve answers the clusterset zone from.
//
// A sync (sync.go) runs these steps, each in its own file:
//
//   - members (members.go): which Clusters of the namespace are members
//     and under which cluster id (package member), and a connection to
//     each (the shared workload connections);
//   - read (read.go): each member's ServiceExports, Services and the
//     EndpointSlices of its admitted exports, from the caches only; a
//     member that cannot be read keeps its last exports;
//   - desired: the aggregate of every member's exports (package
//     aggregate) and each member's objects (package objects), both pure;
//   - plan and write (write.go): per member, in its lane (package lane),
//     the difference to what it holds (package apply) and its contract
//     slices, each call under workload.RequestTimeout; memo.go keeps
//     what each member's last write built and settled, so a change costs
//     the imports it touches;
//   - status (status.go, metrics.go): Ready and the member entries, and
//     the gauges of the set.
//
// remove.go takes a set's objects out of members that left and of every
// member when the set is deleted (its Finalizer waits for that);
// memory.go and state.go are what a set's syncs remember, in memory and,
// across restarts, in the controller's state (package state).
//
// What it holds to: a member that is slow or unreachable delays and costs
// only itself, and an object a member refuses only its import, which
// waits out a backoff of its own (apply.Settled); a member is never written from a partial
// read; in a member only the controller's own objects (by label) are
// changed or removed.
// It shares with the GatewayDNS reconciler the Cluster informer, the
// kubeconfig Secret cache and the workload connections, handed to it in
// Config by the controller, which also starts it; it never imports the
// controller's root package.
package clusterset
