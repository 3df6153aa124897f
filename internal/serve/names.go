package serve

import (
	"maps"
	"net/netip"
	"strings"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// nameOwnerPrefix starts the owner of a name record.
const nameOwnerPrefix = "Name "

// A name's records live in leaves below its key, one per address. The
// etcd plugin reads that directory for most query types, but for a CNAME
// query it reads only the name's own key; with nothing there, a name that
// exists would answer NXDOMAIN. So every name with records also gets one
// record at its own key: the CNAME target if the name has one (the CNAME
// query then answers it), otherwise one of its addresses (the CNAME query
// then answers NODATA, as it should). A lookup of the leaves never sees it:
// it is not inside the directory.

func isNameOwner(owner string) bool { return strings.HasPrefix(owner, nameOwnerPrefix) }

// nameRecord returns the record kept at the key dir of a name whose leaf
// records are leaves, and whether there is one.
func nameRecord(dir string, leaves skydnsrecord.Set) (string, skydnsrecord.Record, bool) {
	var best skydnsrecord.Record
	found := false
	for _, r := range leaves {
		// A TXT record (dns-version) makes none: the etcd plugin would
		// answer its CNAME query with a CNAME to nothing.
		// Nor does an SRV target's address stored below its SRV name
		// (targetstrip): that name is none of the zone, and its record,
		// inside the SRV name's directory, would answer as a target.
		if isNameOwner(r.Owner) || r.Host == "" || r.TargetStrip > 0 {
			continue
		}
		if !found || better(r, best) {
			best, found = r, true
		}
	}
	if !found {
		return "", skydnsrecord.Record{}, false
	}
	best.Owner = nameOwnerPrefix + dir
	return dir, best, true
}

// better orders candidate name records: a CNAME target first, then by host,
// so the choice does not depend on map order.
func better(a, b skydnsrecord.Record) bool {
	aCNAME, bCNAME := isCNAME(a.Host), isCNAME(b.Host)
	if aCNAME != bCNAME {
		return aCNAME
	}
	return a.Host < b.Host
}

// isCNAME reports whether a record's host is a CNAME target, not an address.
func isCNAME(host string) bool {
	_, err := netip.ParseAddr(host)
	return err != nil
}

// WithNameRecords adds the name record of every name in leaves: the set
// serve writes for those leaves.
func WithNameRecords(leaves skydnsrecord.Set) skydnsrecord.Set {
	return withDerived(leaves, func(k string, _ skydnsrecord.Record) (string, bool) {
		return skydnsrecord.ParentKey(k), true
	}, nameRecord)
}

// withDerived returns records plus one record derived from each group of
// them: group says which group a record is in (if any), derive makes the
// group's record (if any). Name records and PTR records are both made so.
func withDerived[K comparable](records skydnsrecord.Set, group func(string, skydnsrecord.Record) (K, bool),
	derive func(K, skydnsrecord.Set) (string, skydnsrecord.Record, bool)) skydnsrecord.Set {
	groups := map[K]skydnsrecord.Set{}
	for k, r := range records {
		if g, ok := group(k, r); ok {
			if groups[g] == nil {
				groups[g] = skydnsrecord.Set{}
			}
			groups[g][k] = r
		}
	}
	out := make(skydnsrecord.Set, len(records)+len(groups))
	maps.Copy(out, records)
	for g, set := range groups {
		if k, r, ok := derive(g, set); ok {
			out[k] = r
		}
	}
	return out
}
