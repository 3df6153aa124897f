// Package objects computes what one member of a clusterset holds for the
// Multi-Cluster Services API: from the aggregator's result, the endpoints
// of each exporting member and the member's own state, the ServiceImports,
// derived Services and EndpointSlices it gets and the conditions of its
// own ServiceExports. Compute is pure, so every rule is a table test; the
// writer (internal/mcs/apply) diffs its result against the member.
// ComputeWith gives the same digests from a Memo of the last call, and
// builds only the imports whose inputs changed or that the caller does
// not hold settled (Input.Skip); a property test holds what it builds
// equal to Compute's.
//
// The choices it makes:
//
//   - An import is written only into a member where its namespace exists
//     (namespace sameness: creating a namespace is its owners' choice).
//   - A ClusterSetIP import gets a derived Service named
//     derived-<16 hex of sha256("<ns>/<svc>")> (DerivedServiceName): a
//     name a user does not pick by accident, so it never takes a user's
//     Service, and the same in every member. It is selectorless, of type
//     ClusterIP, asks for both families where the member has them
//     (PreferDualStack), and carries the import's ports (targetPort =
//     port), session affinity, internalTrafficPolicy and
//     trafficDistribution. Its ClusterIPs, which each member's API server
//     allocates, are the import's spec.ips once read back.
//   - The EndpointSlices of both import types are labelled
//     kubernetes.io/service-name: <derived Service name>, never <svc>: the
//     member's kube-proxy and cluster DNS select slices by that label, and
//     <svc> would add every remote endpoint to the member's own Service of
//     that name, which must stay local. A Headless import has no derived
//     Service; its slices also carry service.kubernetes.io/headless, which
//     kube-proxy's informers exclude, so nothing programs them and only
//     the clusterset DNS reads them (by multicluster.kubernetes.io/
//     service-name and source-cluster).
//   - The endpoints of a source are data, not trust: only endpoints that
//     are ready, serving and not terminating, with an address of the
//     slice's family and a hostname (if any) that is a DNS label, by the
//     rules of contract.ReadyEndpoints; an address inside the operator's
//     allowed CIDRs (Input.AllowedCIDRs), judged by contract.EndpointAddress
//     as the clusterset DNS records are, so kube-proxy never reaches an
//     address DNS refuses; ports that are valid and that the
//     import has (same name and protocol); at most Limits of them per
//     source, cut in a fixed order, and at most Limits of them and of
//     their slices per source cluster over all its imports, its oldest
//     exports first (boundMembers); a cut there is named in the import's
//     Ready message. What is left out is listed in Objects.Refused; the
//     addresses of a member's own export that are refused are counted in
//     its export's Valid message, the first few named (refusedAddresses).
//   - Slices hold at most MaxEndpointsPerSlice endpoints, one address
//     family and one port set each, named from the derived Service, the
//     source cluster, the family, the port set and an index, so a slice
//     keeps its name while its endpoints change.
//   - A node name is copied only onto the member's own endpoints: a remote
//     node's name means nothing here, and could name a local node.
//   - A ServiceImport's status holds its exporters (clusters),
//     endpointSliceObjects Present (the writer writes the slices of every
//     import it writes, and says Absent when it cannot) and Ready: True
//     for a Headless import, for a ClusterSetIP import once its derived
//     Service has an address (then in spec.ips), else False, reason
//     Pending. IPFamilyNotSupported has no case: a member allocates a
//     PreferDualStack Service one of its families or refuses to create it.
//   - Ready on an export is True only when the aggregator says it is part
//     of its import and the caller says the import is written in every
//     reachable member; else False, reason Pending.
//
// The ownerReferences to the ServiceImport are set by the writer, once
// the import's UID is known.
package objects
