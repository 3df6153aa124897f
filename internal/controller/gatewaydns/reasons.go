package gatewaydns

// Reason is a word the controller writes for a machine to read: the
// reason of a condition, of a status entry the write path decides (a
// cluster whose records are not in every target yet, a target that does
// not hold them) or of an Event. The reasons of the per-cluster and
// per-name entries that the desired result decides are desired's
// (desired.ReasonPublished, ...): they are a pure function of the
// sources, these depend on what the writes came to.
type Reason string

// Reasons of the Ready condition.
const (
	ReasonPublished          Reason = "Published"
	ReasonNoClustersSelected Reason = "NoClustersSelected"
	ReasonNotAllPublished    Reason = "NotAllClustersPublished"
	// ReasonWriteFailed: a write to a target failed (its API server
	// refused it or did not answer); it is tried again. Also the reason
	// of the target's entry, of each cluster whose records it lacks, and
	// of the target's Warning Event.
	ReasonWriteFailed Reason = "WriteFailed"
	// ReasonWriting: a target is still being written in the background
	// (its API server is slow, or the write is large): nothing failed,
	// but the names are not everywhere yet. Also the reason of the
	// target's entry and of each cluster whose records it lacks.
	ReasonWriting Reason = "Writing"
	// ReasonTargetUnreachable: a target's API server has answered no read
	// for UnreachableAfter (the shared cache's view of it): whether it
	// holds the latest records cannot be told, and its DNS serves the
	// records it last got. Also the reason of the target's entry and of
	// each cluster whose records it may lack.
	ReasonTargetUnreachable Reason = "TargetUnreachable"
	// ReasonRemoving: the GatewayDNS is being deleted and some target
	// still holds its slices (being cleaned, or failed and tried again);
	// also the Normal Event naming those still being cleaned.
	ReasonRemoving Reason = "Removing"
)

// Reasons of the Conflict condition.
const (
	ReasonNamesOwnedByOlder Reason = "NamesOwnedByOlderGatewayDNS"
	ReasonNoConflict        Reason = "NoConflict"
)

// Reasons of Events alone.
const (
	ReasonGatewayHealthy   Reason = "GatewayHealthy"
	ReasonGatewayUnhealthy Reason = "GatewayUnhealthy"
	ReasonSelfMarkerFailed Reason = "SelfMarkerFailed"
	ReasonInvalidSelector  Reason = "InvalidSelector"
	ReasonRemoveFailed     Reason = "RemoveFailed"
)

// String is the reason as written in status and Events.
func (r Reason) String() string { return string(r) }
