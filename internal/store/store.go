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
	"slices"
	"strings"
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
	// extra are more key directories the store owns records in (reverse
	// zones), each with a trailing slash; see WithNames.
	extra []string

	mu sync.Mutex
	// owned mirrors the owned records in etcd as of the last Reconcile and
	// every write since, so a per-owner sync needs no read.
	owned  *mirror
	loaded bool
}

// New returns a store for the records of zone (for example "xcc.test").
func New(kv KV, zone string) *Store {
	return &Store{kv: kv, prefix: skydnsrecord.Key(zone) + "/", owned: newMirror(nil, nil)}
}

// Result tells what a sync or reconcile wrote.
type Result struct {
	Puts, Deletes int
	// Skipped lists the keys a plan wanted to write that hold a record the
	// syncer did not write (put by hand): they are left as they are.
	Skipped []string
	// Revision is the etcd revision after the last write; 0 if nothing was
	// written.
	Revision int64
}

// Current reads every record under the zone and returns the owned ones.
// Values that are not record JSON are not ours: they are skipped.
func (s *Store) Current(ctx context.Context) (skydnsrecord.Set, error) {
	owned, _, _, err := s.read(ctx)
	return owned, err
}

// read returns the owned records under the zone and the extra directories
// (WithNames) with their mod revisions, and the keys that hold anything else.
func (s *Store) read(ctx context.Context) (owned skydnsrecord.Set, revs map[string]int64, foreign map[string]bool, err error) {
	owned, revs, foreign = skydnsrecord.Set{}, map[string]int64{}, map[string]bool{}
	for _, prefix := range append([]string{s.prefix}, s.extra...) {
		resp, err := s.kv.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("etcd get prefix %q: %w", prefix, err)
		}
		for _, kv := range resp.Kvs {
			r, err := skydnsrecord.Unmarshal(kv.Value)
			if err != nil || !r.Owned() {
				foreign[string(kv.Key)] = true
				continue
			}
			owned[string(kv.Key)] = r
			revs[string(kv.Key)] = kv.ModRevision
		}
	}
	return owned, revs, foreign, nil
}

// WithNames makes the store own records below the names too (reverse
// zones such as 0.0.10.in-addr.arpa), beside its zone: Current and so
// Reconcile read them, and a full reconcile deletes owned records there
// that are not desired. Keys it did not write are never touched. Call it
// before the first Reconcile.
func (s *Store) WithNames(names ...string) *Store {
	dirs := slices.Clone(s.extra)
	for _, n := range names {
		dirs = append(dirs, skydnsrecord.Key(n)+"/")
	}
	// A directory inside another, or inside the zone, would be read twice.
	s.extra = nil
	for _, d := range dirs {
		inside := strings.HasPrefix(d, s.prefix) || slices.ContainsFunc(dirs, func(o string) bool { return o != d && strings.HasPrefix(d, o) })
		if !inside && !slices.Contains(s.extra, d) {
			s.extra = append(s.extra, d)
		}
	}
	slices.Sort(s.extra)
	return s
}

// Reconcile reads what is in etcd and makes the owned records equal
// desired, repairing drift both ways: a missing or changed record is put
// back, an owned record that is not desired is deleted. A desired key that
// holds a record put by hand is skipped. Every desired record must carry an
// Owner.
func (s *Store) Reconcile(ctx context.Context, desired skydnsrecord.Set) (Result, error) {
	if err := checkOwned(desired); err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	current, revs, foreign, err := s.read(ctx)
	if err != nil {
		return Result{}, err
	}
	s.owned, s.loaded = newMirror(current, revs), true
	plan := skydnsrecord.Diff(desired, current)
	var skipped []string
	plan.Puts = slices.DeleteFunc(plan.Puts, func(p skydnsrecord.Put) bool {
		if foreign[p.Key] {
			skipped = append(skipped, p.Key)
			return true
		}
		return false
	})
	res, err := s.apply(ctx, plan)
	res.Skipped = append(skipped, res.Skipped...)
	return res, err
}

// SyncOwner makes the records of owner equal desired, which must all carry
// that owner. It plans against the store's mirror of etcd, so an unchanged
// input costs no etcd call at all. Reconcile must have run first.
func (s *Store) SyncOwner(ctx context.Context, owner string, desired skydnsrecord.Set) (Result, error) {
	return s.SyncOwners(ctx, map[string]skydnsrecord.Set{owner: desired})
}

// SyncOwners is SyncOwner for several owners at once (desired by owner),
// in one plan: the writes of all of them share transactions, so records
// that belong together (a name's leaves and its name record) cost one
// etcd round trip, not one per owner. Two owners writing one key are
// synced one after the other instead, as SyncOwner would.
func (s *Store) SyncOwners(ctx context.Context, desired map[string]skydnsrecord.Set) (Result, error) {
	for owner, set := range desired {
		for key, r := range set {
			if r.Owner != owner {
				return Result{}, fmt.Errorf("record %q has owner %q, want %q", key, r.Owner, owner)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		return Result{}, fmt.Errorf("sync %q before the first reconcile", slices.Sorted(maps.Keys(desired)))
	}
	var all skydnsrecord.Plan
	plans := make([]skydnsrecord.Plan, 0, len(desired))
	keys := map[string]bool{}
	shared := false
	for _, owner := range slices.Sorted(maps.Keys(desired)) {
		p := skydnsrecord.Diff(desired[owner], s.ownedBy(owner))
		plans = append(plans, p)
		all.Puts, all.Deletes = append(all.Puts, p.Puts...), append(all.Deletes, p.Deletes...)
		for _, put := range p.Puts {
			shared = shared || keys[put.Key]
			keys[put.Key] = true
		}
		for _, key := range p.Deletes {
			shared = shared || keys[key]
			keys[key] = true
		}
	}
	if !shared {
		return s.apply(ctx, all)
	}
	// etcd refuses a transaction that names one key twice.
	var res Result
	for _, p := range plans {
		r, err := s.apply(ctx, p)
		res = res.add(r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// add is the result of two writes one after the other.
func (r Result) add(o Result) Result {
	r.Puts, r.Deletes, r.Skipped = r.Puts+o.Puts, r.Deletes+o.Deletes, append(r.Skipped, o.Skipped...)
	r.Revision = max(r.Revision, o.Revision)
	return r
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

// OwnedWithHost returns the owned records whose host is host (an address
// or a target name), of every owner and name.
func (s *Store) OwnedWithHost(host string) skydnsrecord.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owned.host(host)
}

// OwnedUnder returns the owned records whose keys lie directly in the key
// directory dir (one level, not deeper).
func (s *Store) OwnedUnder(dir string) skydnsrecord.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owned.under(dir)
}

// maxGuardRetries bounds how often a batch is re-read and retried after
// someone else changed one of its keys.
const maxGuardRetries = 3

// write is one planned operation on a key: a put of record, or a delete.
type write struct {
	key    string
	record *skydnsrecord.Record // nil: delete
}

// apply writes plan in transactions of at most MaxOpsPerTxn operations and
// updates the mirror after each one that landed. Puts go before deletes,
// so while a plan spans several transactions (or stops half way) a name
// answers with at least its old or its new addresses, never fewer. Every
// operation is guarded: a put of a new key only if the key does not exist,
// a put or delete of an owned key only if it is unchanged since the syncer
// last saw it. So a record put by hand, at any key and at any time, is
// never overwritten or deleted. s.mu must be held.
func (s *Store) apply(ctx context.Context, plan skydnsrecord.Plan) (Result, error) {
	var res Result
	batch := make([]write, 0, min(MaxOpsPerTxn, len(plan.Puts)+len(plan.Deletes)))
	flush := func() error {
		err := s.commit(ctx, batch, &res)
		batch = batch[:0]
		return err
	}
	for _, put := range plan.Puts {
		batch = append(batch, write{key: put.Key, record: &put.Record})
		if len(batch) == MaxOpsPerTxn {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	for _, key := range plan.Deletes {
		batch = append(batch, write{key: key})
		if len(batch) == MaxOpsPerTxn {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	return res, flush()
}

// commit writes one batch in one guarded transaction. When a guard fails,
// it reads the batch's keys again, drops what is no longer the syncer's to
// write, and tries again.
func (s *Store) commit(ctx context.Context, batch []write, res *Result) error {
	for attempt := 0; len(batch) > 0; attempt++ {
		if attempt > maxGuardRetries {
			return fmt.Errorf("etcd txn of %d operations: keys kept changing under it", len(batch))
		}
		cmps := make([]clientv3.Cmp, 0, len(batch))
		ops := make([]clientv3.Op, 0, len(batch))
		for _, w := range batch {
			if rev, ok := s.owned.revs[w.key]; ok {
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(w.key), "=", rev))
			} else {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(w.key), "=", 0))
			}
			if w.record == nil {
				ops = append(ops, clientv3.OpDelete(w.key))
				continue
			}
			value, err := w.record.Marshal()
			if err != nil {
				return err
			}
			ops = append(ops, clientv3.OpPut(w.key, string(value)))
		}
		resp, err := s.kv.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("etcd txn of %d operations: %w", len(ops), err)
		}
		if resp.Succeeded {
			for _, w := range batch {
				if w.record == nil {
					s.owned.delete(w.key)
					res.Deletes++
				} else {
					s.owned.put(w.key, *w.record, resp.Header.Revision)
					res.Puts++
				}
			}
			res.Revision = resp.Header.Revision
			return nil
		}
		if batch, err = s.refresh(ctx, batch, res); err != nil {
			return err
		}
	}
	return nil
}

// refresh reads the keys of a batch whose guard failed, brings the mirror
// up to date with them, and returns the writes still to do: none to a key
// that holds a record the syncer did not write (counted in res.Skipped),
// none that etcd already reflects.
func (s *Store) refresh(ctx context.Context, batch []write, res *Result) ([]write, error) {
	gets := make([]clientv3.Op, len(batch))
	for i, w := range batch {
		gets[i] = clientv3.OpGet(w.key)
	}
	resp, err := s.kv.Txn(ctx).Then(gets...).Commit()
	if err != nil {
		return nil, fmt.Errorf("etcd read of %d guarded keys: %w", len(gets), err)
	}
	var again []write
	for i, w := range batch {
		kvs := resp.Responses[i].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			s.owned.delete(w.key)
			if w.record != nil {
				again = append(again, w)
			}
			continue
		}
		r, err := skydnsrecord.Unmarshal(kvs[0].Value)
		if err != nil || !r.Owned() {
			s.owned.delete(w.key)
			res.Skipped = append(res.Skipped, w.key)
			continue
		}
		s.owned.put(w.key, r, kvs[0].ModRevision)
		if w.record == nil || r != *w.record {
			again = append(again, w)
		}
	}
	return again, nil
}

func checkOwned(set skydnsrecord.Set) error {
	for key, r := range set {
		if !r.Owned() {
			return fmt.Errorf("record %q has no owner", key)
		}
	}
	return nil
}
