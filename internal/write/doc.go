// Package write holds the rules every write of the controller into a
// workload cluster follows, whichever reconciler asks for it: the
// GatewayDNS slices (controller/publish), and the Multi-Cluster Services
// objects and contract slices of a ClusterSet (mcs/apply,
// controller/clusterset). Those packages compute what they desire; this
// one plans the writes (Diff) and is the only one that calls a workload
// client's create, update and delete.
//
// The rules:
//
//   - One plan (Diff): desired against held, by namespace and name, with
//     one comparer per kind. Only what the caller's Kind.Ours says is its
//     own is updated or deleted; a desired name another's object holds is
//     refused, never written; what Kind.Keep names stays as it is.
//   - A name taken: Create reads the holder. One the caller's ours says
//     is its own is returned, to be compared and updated; any other is
//     never touched and the create fails with kubeclient.ErrNotOurs, a
//     refusal of that one object.
//   - Every delete carries the UID of the object read as a precondition
//     (Delete): an object made anew under the name meanwhile is not
//     deleted. Gone already is no error.
//   - Every call has a deadline (Gate). Once a call of one write has
//     passed it, the rest of that write fails at once with
//     ErrNotAnswering: a frozen cluster costs one deadline per write, not
//     one per object.
//   - Every error a cluster sends is cut (kubeclient.Cut) before anyone
//     keeps, joins or logs it: the text is its admin's.
//   - A refusal (Refusal: the cluster answered no about one object) costs
//     that object; any other error is the cluster's and costs the write.
//   - The requests of one step go Concurrency at a time (Each).
package write
