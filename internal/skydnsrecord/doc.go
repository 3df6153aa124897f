// Package skydnsrecord maps DNS names to the etcd keys and values that the
// CoreDNS etcd plugin reads (the SkyDNS layout), validates what goes into
// them, and plans the writes that turn the records in etcd into the wanted
// ones. It is pure: no I/O, so every rule here is a table test.
//
// Layout: the name kuard.gateway.cluster-a.dev-team.clusters.xcc.test has
// its records under /skydns/test/xcc/clusters/dev-team/cluster-a/gateway/,
// one key per record. The last path element, the leaf, is derived from the
// record's owner and host, so the same input always gives the same key and
// an unchanged input writes nothing.
package skydnsrecord
