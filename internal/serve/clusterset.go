package serve

import (
	"fmt"
	"maps"
	"slices"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// The clusterset zone (--clusterset-zone) holds the names of the MCS DNS
// specification. An import's name X is a multi-cluster name like a
// headless one (contract.KindClusterSet.MultiCluster): all of its records,
// the per-cluster and per-endpoint names too, are made from every slice of
// X together by MultiRecords, under the owner MultiOwner(X), so that none
// of them claims a PTR (the specification has none) and the queue key of
// X covers them all. The zone's only other record is dns-version.

// versionOwner is the owner of the dns-version record of zone.
func versionOwner(zone string) string { return "Version " + zone }

// versionRecords is the TXT record dns-version.<clusterset zone>, there
// whenever the zone is served, imports or none; nil without the zone.
func (s *Syncer) versionRecords() skydnsrecord.Set {
	if s.clusterSetZone == "" {
		return nil
	}
	owner := versionOwner(s.clusterSetZone)
	return skydnsrecord.Set{
		skydnsrecord.RecordKey(contract.DNSVersionName(s.clusterSetZone), owner, contract.DNSVersion): {
			Text: contract.DNSVersion, TTL: skydnsrecord.DefaultTTL, Owner: owner,
		},
	}
}

// oneImportType keeps the slices of one import type: while an import
// changes type, its slices of both reach serve one by one. The
// ClusterSetIP ones answer until the others are gone.
func oneImportType(name string, parsed []contract.Parsed) ([]contract.Parsed, []error) {
	ip := slices.ContainsFunc(parsed, func(p contract.Parsed) bool { return p.ClusterSetIP })
	headless := slices.ContainsFunc(parsed, func(p contract.Parsed) bool { return !p.ClusterSetIP })
	if !ip || !headless {
		return parsed, nil
	}
	return slices.DeleteFunc(slices.Clone(parsed), func(p contract.Parsed) bool { return !p.ClusterSetIP }),
		[]error{fmt.Errorf("name %s: slices of a ClusterSetIP and of a Headless import; answering the ClusterSetIP until they agree", name)}
}

// clusterSetSourceRecords adds to records the names of each source of a
// Headless import, <clusterid>.X and <hostname>.<clusterid>.X, as a
// headless slice gives them, under owner.
func clusterSetSourceRecords(records skydnsrecord.Set, parsed []contract.Parsed, owner string) {
	for _, p := range parsed {
		if !p.ClusterSetIP {
			maps.Copy(records, headlessSliceRecords(p, owner))
		}
	}
}

// canonicalOrEmpty is skydnsrecord.CanonicalName, keeping "" for none.
func canonicalOrEmpty(zone string) string {
	if zone == "" {
		return ""
	}
	return skydnsrecord.CanonicalName(zone)
}

// srvOfName adds to records, at contract.ClusterSetSRVName(name), one
// SRV record per distinct target and port of name's SRV names (targets,
// as srvRecords answers them), stored as they are (putTarget): SRV of the
// import's name itself. An RRset holds no record twice, and a port of one
// number in TCP and UDP is two SRV names with the same target and port.
// As an SRV name, it holds what fits in one DNS message with the
// targets' addresses, at most contract.MaxRecordsPerName, taken from the
// SRV names in turn, each in its own order (fair to the sources).
func srvOfName(records skydnsrecord.Set, name, owner string, ttl uint32, targets map[string][]srvTarget, addresses map[string][]string) []error {
	lists := make([][]srvTarget, 0, len(targets))
	for _, srv := range slices.Sorted(maps.Keys(targets)) {
		lists = append(lists, targets[srv])
	}
	seen := map[srvTarget]bool{}
	var distinct []srvTarget
	for _, t := range interleave(lists) {
		if !seen[t] {
			seen[t] = true
			distinct = append(distinct, t)
		}
	}
	at := contract.ClusterSetSRVName(name)
	kept := fitTargets(name, name, distinct, addresses)
	for _, t := range kept {
		putTarget(records, at, name, t, addresses[t.name], owner, ttl)
	}
	if len(kept) < len(distinct) {
		return []error{fmt.Errorf("name %s: %d SRV records of the name itself, more than fit in one DNS message with their addresses or than %d; answering %d, taken from its SRV names in turn", name, len(distinct), contract.MaxRecordsPerName, len(kept))}
	}
	return nil
}
