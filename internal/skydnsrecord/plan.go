package skydnsrecord

import (
	"maps"
	"slices"
)

// Set holds records by etcd key.
type Set map[string]Record

// Put is one key to write.
type Put struct {
	Key    string
	Record Record
}

// Plan is what turns the current records into the desired ones.
type Plan struct {
	Puts    []Put    // sorted by key
	Deletes []string // sorted
}

// Empty reports whether the plan writes nothing.
func (p Plan) Empty() bool { return len(p.Puts) == 0 && len(p.Deletes) == 0 }

// Diff plans the writes that make current equal to desired: a put for every
// desired key that is missing or differs, a delete for every current key
// that is not desired. current must hold only records the syncer owns, so
// a record put by hand can never be planned for deletion; Diff drops any
// unowned record from current to keep that true whatever the caller passes.
// The plan is sorted, so the same input gives the same writes.
func Diff(desired, current Set) Plan {
	var p Plan
	for key, want := range desired {
		if have, ok := current[key]; !ok || have != want {
			p.Puts = append(p.Puts, Put{Key: key, Record: want})
		}
	}
	for key, have := range current {
		if !have.Owned() {
			continue
		}
		if _, ok := desired[key]; !ok {
			p.Deletes = append(p.Deletes, key)
		}
	}
	slices.SortFunc(p.Puts, func(a, b Put) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	slices.Sort(p.Deletes)
	return p
}

// Keys returns the keys of s, sorted.
func (s Set) Keys() []string {
	return slices.Sorted(maps.Keys(s))
}
