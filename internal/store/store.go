// Package store is the only writer of SkyDNS records in etcd. It keeps the
// records the syncer owns equal to the desired ones and never touches a key
// it did not write.
//
// Ownership is recorded in the value itself (skydnsrecord.Record.Owner), so
// it is read back from etcd without guessing: a record put by hand with
// `etcdctl put` has no owner and is left alone by every plan.
package store

import (
	"context"
	"fmt"
	"maps"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// MaxOpsPerTxn is the most operations the store puts in one etcd
// transaction. etcd refuses more than its --max-txn-ops (default 128).
const MaxOpsPerTxn = 128

// KV is the part of the etcd client the store uses.
type KV interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Txn(ctx context.Context) clientv3.Txn
}

var _ KV = (*clientv3.Client)(nil)

// Store writes the owned records under one zone.
type Store struct {
	kv     KV
	prefix string // the zone's key directory with a trailing slash

	mu sync.Mutex
	// owned mirrors the owned records in etcd as of the last Reconcile and
	// every write since, so a per-owner sync needs no read.
	owned  *mirror
	loaded bool
}

// New returns a store for the records of zone (for example "xcc.test").
func New(kv KV, zone string) *Store {
	return &Store{kv: kv, prefix: skydnsrecord.Key(zone) + "/", owned: newMirror(nil)}
}

// Result tells what a sync or reconcile wrote.
type Result struct {
	Puts, Deletes int
	// Revision is the etcd revision after the last write; 0 if nothing was
	// written.
	Revision int64
}

// Current reads every record under the zone and returns the owned ones.
// Values that are not record JSON are not ours: they are skipped.
func (s *Store) Current(ctx context.Context) (skydnsrecord.Set, error) {
	resp, err := s.kv.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd get prefix %q: %w", s.prefix, err)
	}
	owned := make(skydnsrecord.Set, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		r, err := skydnsrecord.Unmarshal(kv.Value)
		if err != nil || !r.Owned() {
			continue
		}
		owned[string(kv.Key)] = r
	}
	return owned, nil
}

// Reconcile reads what is in etcd and makes the owned records equal
// desired, repairing drift both ways: a missing or changed record is put
// back, an owned record that is not desired is deleted. Every desired
// record must carry an Owner.
func (s *Store) Reconcile(ctx context.Context, desired skydnsrecord.Set) (Result, error) {
	if err := checkOwned(desired); err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	current, err := s.Current(ctx)
	if err != nil {
		return Result{}, err
	}
	s.owned, s.loaded = newMirror(current), true
	return s.apply(ctx, skydnsrecord.Diff(desired, current))
}

// SyncOwner makes the records of owner equal desired, which must all carry
// that owner. It plans against the store's mirror of etcd, so an unchanged
// input costs no etcd call at all. Reconcile must have run first.
func (s *Store) SyncOwner(ctx context.Context, owner string, desired skydnsrecord.Set) (Result, error) {
	for key, r := range desired {
		if r.Owner != owner {
			return Result{}, fmt.Errorf("record %q has owner %q, want %q", key, r.Owner, owner)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		return Result{}, fmt.Errorf("sync %q before the first reconcile", owner)
	}
	return s.apply(ctx, skydnsrecord.Diff(desired, s.ownedBy(owner)))
}

// Owned returns a copy of the store's mirror of the owned records.
func (s *Store) Owned() skydnsrecord.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.owned.records)
}

// Len returns how many records the store owns. Unlike len(Owned()) it
// copies nothing: serve reports it after every slice's sync.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owned.records)
}

// OwnedBy returns the owned records of owner.
func (s *Store) OwnedBy(owner string) skydnsrecord.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ownedBy(owner)
}

// ownedBy is OwnedBy with s.mu held.
func (s *Store) ownedBy(owner string) skydnsrecord.Set { return s.owned.owner(owner) }

// OwnedUnder returns the owned records whose keys lie directly in the key
// directory dir (one level, not deeper).
func (s *Store) OwnedUnder(dir string) skydnsrecord.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owned.under(dir)
}

// apply writes plan in transactions of at most MaxOpsPerTxn operations and
// updates the mirror after each one that landed. s.mu must be held.
func (s *Store) apply(ctx context.Context, plan skydnsrecord.Plan) (Result, error) {
	var res Result
	ops := make([]clientv3.Op, 0, min(MaxOpsPerTxn, len(plan.Puts)+len(plan.Deletes)))
	var pending []func()
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		resp, err := s.kv.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("etcd txn of %d operations: %w", len(ops), err)
		}
		for _, f := range pending {
			f()
		}
		res.Revision = resp.Header.Revision
		ops, pending = ops[:0], pending[:0]
		return nil
	}
	for _, key := range plan.Deletes {
		ops = append(ops, clientv3.OpDelete(key))
		pending = append(pending, func() { s.owned.delete(key); res.Deletes++ })
		if len(ops) == MaxOpsPerTxn {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	for _, put := range plan.Puts {
		value, err := put.Record.Marshal()
		if err != nil {
			return res, err
		}
		ops = append(ops, clientv3.OpPut(put.Key, string(value)))
		pending = append(pending, func() { s.owned.put(put.Key, put.Record); res.Puts++ })
		if len(ops) == MaxOpsPerTxn {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	return res, flush()
}

func checkOwned(set skydnsrecord.Set) error {
	for key, r := range set {
		if !r.Owned() {
			return fmt.Errorf("record %q has no owner", key)
		}
	}
	return nil
}
