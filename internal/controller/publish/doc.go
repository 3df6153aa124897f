// Package publish writes the desired slices of a GatewayDNS to its target
// clusters. The plan (plan.go) is pure: computePlan diffs the desired
// slices against a target's listed ones, ComputeDelta diffs two
// generations of desired slices. The Writer (publish.go) applies them: it
// remembers, per GatewayDNS, the last two generations and the generation
// written to each target, so a target one generation behind gets the
// delta without being listed, and it writes clusters with the same
// destination once. It schedules nothing itself: each write runs in the
// lane of its cluster (package lane), shared with the ClusterSet
// reconciler, which bounds the writes into the cluster, backs it off
// after it failed, for both, and says how long a sync waits. It only ever
// changes or deletes slices that carry the controller's managed-by label
// and the GatewayDNS's reference, and the self marker of a target
// (self.go) only when it carries the label and kind the controller gives
// it; any other object of such a name is a refusal
// (kubeclient.ErrNotOurs), which backs off nothing.
package publish
