package serve

import (
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
		if isNameOwner(r.Owner) {
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
	aTarget, bTarget := isTarget(a.Host), isTarget(b.Host)
	if aTarget != bTarget {
		return aTarget
	}
	return a.Host < b.Host
}

func isTarget(host string) bool {
	_, err := netip.ParseAddr(host)
	return err != nil
}

// WithNameRecords adds the name record of every name in leaves: the set
// serve writes for those leaves.
func WithNameRecords(leaves skydnsrecord.Set) skydnsrecord.Set {
	byDir := map[string]skydnsrecord.Set{}
	for k, r := range leaves {
		dir := skydnsrecord.ParentKey(k)
		if byDir[dir] == nil {
			byDir[dir] = skydnsrecord.Set{}
		}
		byDir[dir][k] = r
	}
	out := make(skydnsrecord.Set, len(leaves)+len(byDir))
	for k, r := range leaves {
		out[k] = r
	}
	for dir, set := range byDir {
		if k, r, ok := nameRecord(dir, set); ok {
			out[k] = r
		}
	}
	return out
}
