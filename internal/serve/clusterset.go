package serve

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

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
// record per distinct target and port of the SRV records of name's SRV
// names in records: SRV of the import's name itself. An RRset holds no
// record twice, and a port of one number in TCP and UDP is two SRV names
// with the same target and port. At most contract.MaxRecordsPerName, in
// order of target and port.
func srvOfName(records skydnsrecord.Set, name, owner string, ttl uint32) {
	type target struct {
		host string
		port int
	}
	seen := map[target]bool{}
	for _, r := range records {
		if r.Port > 0 && r.Owner == owner {
			seen[target{r.Host, r.Port}] = true
		}
	}
	targets := slices.SortedFunc(maps.Keys(seen), func(a, b target) int {
		return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.port, b.port))
	})
	at := contract.ClusterSetSRVName(name)
	for _, t := range targets[:min(len(targets), contract.MaxRecordsPerName)] {
		records[skydnsrecord.RecordKey(at, owner, t.host+":"+strconv.Itoa(t.port))] = skydnsrecord.Record{Host: t.host, Port: t.port, TTL: ttl, Owner: owner}
	}
}
