package store

import "github.com/xcc-dns/xcc-dns/internal/skydnsrecord"

// mirror holds the owned records in etcd, indexed by owner and by key
// directory (the name), so that syncing one EndpointSlice reads only its
// own records and those of its names. Scanning every record instead made
// filling a store with n slices cost n².
type mirror struct {
	records skydnsrecord.Set
	// revs holds each record's etcd mod revision: a write to the key is
	// guarded by it, so a key someone else changed since is never
	// overwritten or deleted blindly.
	revs    map[string]int64
	byOwner map[string]map[string]struct{} // owner -> keys
	byDir   map[string]map[string]struct{} // key directory -> keys
	byHost  map[string]map[string]struct{} // host -> keys (reverse records)
}

func newMirror(set skydnsrecord.Set, revs map[string]int64) *mirror {
	m := &mirror{
		records: make(skydnsrecord.Set, len(set)),
		revs:    make(map[string]int64, len(set)),
		byOwner: map[string]map[string]struct{}{},
		byDir:   map[string]map[string]struct{}{},
		byHost:  map[string]map[string]struct{}{},
	}
	for k, r := range set {
		m.put(k, r, revs[k])
	}
	return m
}

func (m *mirror) put(key string, r skydnsrecord.Record, rev int64) {
	m.revs[key] = rev
	if old, ok := m.records[key]; ok && old.Owner != r.Owner {
		unindex(m.byOwner, old.Owner, key)
	}
	if old, ok := m.records[key]; ok && old.Host != r.Host {
		unindex(m.byHost, old.Host, key)
	}
	m.records[key] = r
	index(m.byOwner, r.Owner, key)
	index(m.byDir, skydnsrecord.ParentKey(key), key)
	index(m.byHost, r.Host, key)
}

func (m *mirror) delete(key string) {
	old, ok := m.records[key]
	if !ok {
		return
	}
	delete(m.records, key)
	delete(m.revs, key)
	unindex(m.byOwner, old.Owner, key)
	unindex(m.byDir, skydnsrecord.ParentKey(key), key)
	unindex(m.byHost, old.Host, key)
}

// owner returns a copy of the records of owner.
func (m *mirror) owner(owner string) skydnsrecord.Set { return m.pick(m.byOwner[owner]) }

// host returns a copy of the records whose host is host.
func (m *mirror) host(host string) skydnsrecord.Set { return m.pick(m.byHost[host]) }

// under returns a copy of the records directly in the key directory dir.
func (m *mirror) under(dir string) skydnsrecord.Set { return m.pick(m.byDir[dir]) }

func (m *mirror) pick(keys map[string]struct{}) skydnsrecord.Set {
	out := make(skydnsrecord.Set, len(keys))
	for k := range keys {
		out[k] = m.records[k]
	}
	return out
}

func index(idx map[string]map[string]struct{}, by, key string) {
	if idx[by] == nil {
		idx[by] = map[string]struct{}{}
	}
	idx[by][key] = struct{}{}
}

func unindex(idx map[string]map[string]struct{}, by, key string) {
	delete(idx[by], key)
	if len(idx[by]) == 0 {
		delete(idx, by)
	}
}
