// Package apply writes one member's Multi-Cluster Services objects: it
// diffs the desired objects of internal/mcs/objects against what the
// member holds (ComputePlan, pure) and makes the member equal to them
// (Apply), through small interfaces around the typed clients (Member) so
// the fake clientsets of client-go and mcs-api stand in for tests.
//
// What it holds to:
//
//   - Only objects labelled as the controller's (objects.Ours) are ever
//     updated or deleted, and only those are listed (List, or the
//     caller's informers with Observed telling them of each write). An
//     object of a
//     desired name that is not the controller's (a user's ServiceImport,
//     a Service someone named like a derived one) is left alone and
//     reported as a conflict (ErrNotOurs); the import's dependent objects
//     are then not written in that member either. Deletes carry the UID
//     listed as a precondition, updates its resourceVersion, so an object
//     replaced meanwhile is not touched.
//   - Order: ServiceImports first (their UIDs are the owners of the rest),
//     derived Services next (their ClusterIPs are read back into Result,
//     for the caller to compute the objects again with them),
//     EndpointSlices, then the ServiceImports' status and the
//     ServiceExports' status, each through the status subresource; deletes
//     in the reverse order: slices, Services, ServiceImports. Owned objects
//     would go with their ServiceImport anyway; deleting them explicitly
//     does not wait for the member's garbage collector.
//   - A ServiceImport's status is written after its slices, so it says
//     whether they are: endpointSliceObjects Absent, and Ready False, for
//     an import whose derived Service could not be created (its name held
//     by another's Service), whose slices are therefore not written. The
//     status of an import whose derived Service has just got its
//     ClusterIP waits for the caller's write of that address into its
//     spec: written before, it would be written twice.
//   - A condition (of a ServiceImport or an export) keeps its
//     lastTransitionTime while its status stays the same
//     (meta.SetStatusCondition), and observes the object's generation; an
//     object whose status is unchanged, conditions' times aside, is not
//     written.
//   - One failure does not stop the other objects: every error is
//     collected, wrapped with the object and member. A refusal (Refusal:
//     the member answered no about that object) is its import's, in
//     Result.Refused, and costs only that import; the member's other
//     errors are returned joined. The caller goes on to write the
//     member's DNS slices, and Settled keeps a refused import out of the
//     writes for a backoff of its own.
//   - An import the member holds as the last write left it, asked for the
//     same again, is settled (Settled, Round): Round.Settled, given to
//     objects.Input.Skip, keeps it from being built at all, and Split
//     from being planned, so a write costs the imports that changed.
//   - The requests of each step go write.Concurrency at a time
//     (write.Each): the member's client rate bounds a write, not the
//     round trip of each request.
//   - Every call has a deadline (Bounded), and once one call of a write has
//     passed it the member counts as not answering: the rest of that write
//     fails at once with ErrNotAnswering, so a frozen member costs one
//     deadline per write, not one per object.
package apply
