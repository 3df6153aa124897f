// Package aggregate computes, from the ServiceExports seen in every member
// of a clusterset, one import per namespace/name and the conditions of
// each export, by the rules of KEP-1645 (the Multi-Cluster Services API).
// Aggregate is a pure function of its input, so every rule is a table
// test without a client; the controller reads the members and writes what
// it returns.
//
// The rules, and the choices this package makes where the KEP leaves one:
//
//   - An export is valid when its Service exists, is not of type
//     ExternalName and has at least one port. An invalid export takes no
//     part in conflicts and alone makes no import.
//   - Precedence: the oldest valid export (creation time of the
//     ServiceExport) first; exports of one instant are ordered by cluster
//     id, so every controller replica computes the same winner. The
//     creation time is the member's word, so it counts only as far back
//     as Export.Seen, the earliest time the controller vouches for
//     (Export.Since): a member claiming 1970 is ranked from when the
//     controller first saw its export.
//   - Type (ClusterSetIP or Headless), sessionAffinity and its config,
//     internalTrafficPolicy and trafficDistribution are global: the
//     winner's values are the import's.
//   - exportedLabels and exportedAnnotations of the ServiceExport are
//     global too. Each entry is checked as hostile input (exported.go):
//     one that could not be written or takes a reserved key is left out
//     and named in the Valid message, which stays True.
//   - Ports are the union of the valid exports' ports, merged first by
//     name, then by protocol and port; where two clash, the one of the
//     export with precedence is kept (KEP: "the conflict resolution
//     policy will determine which of the duplicated ports are used").
//     Exports whose port sets differ at all are in conflict, a port only
//     a newer export adds included: the union is still the import's
//     ports (the KEP and the upstream conformance suite's required
//     "union of the ports and a conflict").
//   - Conflict: the KEP sets it "on all ServiceExports for the conflicted
//     service". Every valid export of a conflicted import says True and
//     names the fields; an export whose own values lost names the fields
//     it differs in, the others name every field any export differs in.
//   - A member's limit on exports (Admit) counts valid exports only; over
//     it the member's namespaces share it equally, oldest first, and the
//     rest are invalid (TooManyExports).
//   - Ready says the export takes part in the import (it is valid). That
//     the import is written in every member is the controller's to add.
//
// The reasons (reasons.go) are the words of the conditions' reason field.
package aggregate
