// Package publish writes the desired slices of a GatewayDNS to its target
// clusters. The plan (plan.go) is pure: computePlan diffs the desired
// slices against a target's listed ones, ComputeDelta diffs two
// generations of desired slices. The Writer (publish.go) applies them: it
// remembers, per GatewayDNS, the last two generations and the generation
// written to each target, so a target one generation behind gets the
// delta without being listed, and it writes clusters with the same
// destination once. It only ever changes or deletes slices that carry the
// controller's managed-by label and the GatewayDNS's reference, and the
// self marker of a target (self.go) only when it carries the label and
// kind the controller gives it.
package publish
