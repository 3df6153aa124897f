package store

import (
	"maps"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

func TestMirrorIndexes(t *testing.T) {
	rec := func(owner, host string) skydnsrecord.Record {
		return skydnsrecord.Record{Host: host, TTL: skydnsrecord.DefaultTTL, Owner: owner}
	}
	const dirA, dirB = "/skydns/test/xcc/a", "/skydns/test/xcc/b"
	m := newMirror(skydnsrecord.Set{
		dirA + "/x1": rec("s1", "192.0.2.1"),
		dirA + "/x2": rec("s2", "192.0.2.2"),
		dirB + "/x3": rec("s1", "192.0.2.3"),
	}, nil)
	m.put(dirA+"/x2", rec("s1", "192.0.2.2"), 0) // owner changes: s2 has none left
	m.put(dirA+"/x1", rec("s1", "192.0.2.9"), 0) // host changes: 192.0.2.1 has none left
	m.put(dirA+"/x1", rec("s1", "192.0.2.1"), 0)
	m.put(dirA+"/x4", rec("s3", "192.0.2.9"), 0)
	m.delete(dirA + "/x4")
	m.delete(dirB + "/x3")
	m.delete(dirB + "/nosuch")

	for _, tc := range []struct {
		what      string
		got, want skydnsrecord.Set
	}{
		{"owner s1", m.owner("s1"), skydnsrecord.Set{dirA + "/x1": rec("s1", "192.0.2.1"), dirA + "/x2": rec("s1", "192.0.2.2")}},
		{"owner s2", m.owner("s2"), skydnsrecord.Set{}},
		{"under a", m.under(dirA), skydnsrecord.Set{dirA + "/x1": rec("s1", "192.0.2.1"), dirA + "/x2": rec("s1", "192.0.2.2")}},
		{"under b", m.under(dirB), skydnsrecord.Set{}},
		{"host 192.0.2.1", m.host("192.0.2.1"), skydnsrecord.Set{dirA + "/x1": rec("s1", "192.0.2.1")}},
		{"host 192.0.2.3", m.host("192.0.2.3"), skydnsrecord.Set{}},
		{"host 192.0.2.9", m.host("192.0.2.9"), skydnsrecord.Set{}},
	} {
		if !maps.Equal(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if len(m.byOwner) != 1 || len(m.byDir) != 1 || len(m.byHost) != 2 {
		t.Errorf("empty index entries kept: by owner %v, by dir %v, by host %v", m.byOwner, m.byDir, m.byHost)
	}
}
