package store_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

const zone = "xcc.test"

func record(name, owner, host string) (string, skydnsrecord.Record) {
	return skydnsrecord.RecordKey(name, owner, host), skydnsrecord.Record{Host: host, TTL: skydnsrecord.DefaultTTL, Owner: owner}
}

func set(records ...[3]string) skydnsrecord.Set {
	s := skydnsrecord.Set{}
	for _, r := range records {
		k, v := record(r[0], r[1], r[2])
		s[k] = v
	}
	return s
}

func revision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), "/")
	if err != nil {
		t.Fatalf("get revision: %v", err)
	}
	return resp.Header.Revision
}

func get(t *testing.T, cli *clientv3.Client, key string) (string, bool) {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false
	}
	return string(resp.Kvs[0].Value), true
}

func TestReconcileWritesNothingWhenUnchanged(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	desired := set(
		[3]string{"gateway.cluster-a.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/a", "192.0.2.10"},
		[3]string{"gateway.cluster-a.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/a", "192.0.2.11"},
	)
	res, err := s.Reconcile(ctx, desired)
	if err != nil || res.Puts != 2 || res.Deletes != 0 {
		t.Fatalf("first reconcile: %+v, %v; want 2 puts", res, err)
	}
	before := revision(t, cli)
	for i := 0; i < 3; i++ {
		if res, err := s.Reconcile(ctx, desired); err != nil || res.Puts+res.Deletes != 0 {
			t.Fatalf("reconcile %d of unchanged input: %+v, %v; want no writes", i, res, err)
		}
		if res, err := s.SyncOwner(ctx, "EndpointSlice xcc-dns/a", desired); err != nil || res.Puts+res.Deletes != 0 {
			t.Fatalf("sync %d of unchanged input: %+v, %v; want no writes", i, res, err)
		}
	}
	if after := revision(t, cli); after != before {
		t.Fatalf("etcd revision moved from %d to %d on unchanged input", before, after)
	}
}

func TestReconcileRepairsDriftAndKeepsHandRecords(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	desired := set(
		[3]string{"gateway.cluster-a.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/a", "192.0.2.10"},
		[3]string{"api.cluster-a.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/api-a", "192.0.2.20"},
	)
	if _, err := s.Reconcile(ctx, desired); err != nil {
		t.Fatal(err)
	}
	// An operator's own record, as `etcdctl put` would write it.
	const handKey = "/skydns/test/xcc/custom/db"
	const handValue = `{"host":"192.0.2.99","ttl":60}`
	if _, err := cli.Put(ctx, handKey, handValue); err != nil {
		t.Fatal(err)
	}
	// Drift: one owned record deleted, one stale owned record added, one
	// owned record changed behind the syncer's back.
	keys := desired.Keys()
	if _, err := cli.Delete(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	staleKey, stale := record("gateway.cluster-z.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/z", "192.0.2.30")
	v, _ := stale.Marshal()
	if _, err := cli.Put(ctx, staleKey, string(v)); err != nil {
		t.Fatal(err)
	}
	changed := desired[keys[1]]
	changed.Host = "198.51.100.1"
	v, _ = changed.Marshal()
	if _, err := cli.Put(ctx, keys[1], string(v)); err != nil {
		t.Fatal(err)
	}

	res, err := s.Reconcile(ctx, desired)
	if err != nil {
		t.Fatal(err)
	}
	if res.Puts != 2 || res.Deletes != 1 {
		t.Fatalf("repair: %+v; want 2 puts (missing, changed) and 1 delete (stale)", res)
	}
	for _, k := range keys {
		got, ok := get(t, cli, k)
		want, _ := desired[k].Marshal()
		if !ok || got != string(want) {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if _, ok := get(t, cli, staleKey); ok {
		t.Errorf("stale owned record %s survived the reconcile", staleKey)
	}
	// Nothing the syncer did not write is ever deleted, even with nothing desired.
	if _, err := s.Reconcile(ctx, skydnsrecord.Set{}); err != nil {
		t.Fatal(err)
	}
	if got, ok := get(t, cli, handKey); !ok || got != handValue {
		t.Fatalf("hand record = %q, %v; want it untouched", got, ok)
	}
	if owned := s.Owned(); len(owned) != 0 {
		t.Fatalf("owned after reconciling to nothing: %v", owned)
	}
}

func TestSyncOwnerTouchesOnlyThatOwner(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	if _, err := s.SyncOwner(ctx, "x", nil); err == nil {
		t.Fatal("sync before the first reconcile: want an error")
	}
	a := set([3]string{"gateway.cluster-a.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/a", "192.0.2.10"})
	b := set([3]string{"gateway.cluster-b.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/b", "192.0.2.40"})
	all := skydnsrecord.Set{}
	for k, v := range a {
		all[k] = v
	}
	for k, v := range b {
		all[k] = v
	}
	if _, err := s.Reconcile(ctx, all); err != nil {
		t.Fatal(err)
	}
	newA := set([3]string{"gateway.cluster-a.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/a", "192.0.2.12"})
	res, err := s.SyncOwner(ctx, "EndpointSlice xcc-dns/a", newA)
	if err != nil || res.Puts != 1 || res.Deletes != 1 {
		t.Fatalf("sync a: %+v, %v; want 1 put and 1 delete", res, err)
	}
	for k := range b {
		if _, ok := get(t, cli, k); !ok {
			t.Fatalf("syncing owner a removed b's record %s", k)
		}
	}
	if _, err := s.SyncOwner(ctx, "EndpointSlice xcc-dns/a", b); err == nil {
		t.Fatal("sync with records of another owner: want an error")
	}
	if res, err := s.SyncOwner(ctx, "EndpointSlice xcc-dns/a", nil); err != nil || res.Deletes != 1 {
		t.Fatalf("sync a to nothing: %+v, %v; want 1 delete", res, err)
	}
	if n := s.Len(); n != len(b) || n != len(s.Owned()) {
		t.Fatalf("Len %d, want %d (b's records)", n, len(b))
	}
}

func TestLargeReconcileSplitsTransactions(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	const n = 3*store.MaxOpsPerTxn + 7
	desired := skydnsrecord.Set{}
	for i := 0; i < n; i++ {
		k, v := record(fmt.Sprintf("gateway.c%d.dev-team.clusters.xcc.test", i), fmt.Sprintf("EndpointSlice xcc-dns/c%d", i), fmt.Sprintf("192.0.2.%d", i%250+1))
		desired[k] = v
	}
	before := revision(t, cli)
	res, err := s.Reconcile(ctx, desired)
	if err != nil || res.Puts != n {
		t.Fatalf("reconcile %d records: %+v, %v", n, res, err)
	}
	// One revision per transaction: ceil(n/128) of them, never one txn over the limit.
	if got, want := revision(t, cli)-before, int64((n+store.MaxOpsPerTxn-1)/store.MaxOpsPerTxn); got != want {
		t.Fatalf("%d records took %d transactions, want %d", n, got, want)
	}
	resp, err := cli.Get(ctx, "/skydns/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != n {
		t.Fatalf("count under /skydns/ = %d, %v; want %d", resp.Count, err, n)
	}
}

func TestRecordsWithoutOwnerAreRefused(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	s := store.New(cli, zone)
	bad := skydnsrecord.Set{"/skydns/test/xcc/a/x1": {Host: "192.0.2.1", TTL: 30}}
	if _, err := s.Reconcile(context.Background(), bad); err == nil {
		t.Fatal("reconcile of a record without owner: want an error")
	}
}

// A record put by hand is never overwritten or deleted, whatever key it is
// at and whenever it arrives: before the first reconcile, at a key the
// syncer wrote since, or at a key the syncer is about to write.
func TestHandRecordsAtAnyKeyAreNeverWritten(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	const owner = "EndpointSlice xcc-dns/a"
	const name = "gateway.cluster-a.dev-team.clusters.xcc.test"
	hand := `{"host":"198.51.100.7","ttl":60}`
	put := func(key string) {
		t.Helper()
		if _, err := cli.Put(ctx, key, hand); err != nil {
			t.Fatal(err)
		}
	}
	check := func(key string) {
		t.Helper()
		if v, ok := get(t, cli, key); !ok || v != hand {
			t.Errorf("hand record at %q = %q, %v; want it untouched", key, v, ok)
		}
	}

	// Before the first reconcile, at a key the desired set holds.
	before := set([3]string{name, owner, "192.0.2.1"})
	beforeKey := before.Keys()[0]
	put(beforeKey)
	res, err := s.Reconcile(ctx, before)
	if err != nil || res.Puts != 0 || len(res.Skipped) != 1 {
		t.Fatalf("reconcile over a hand record: %+v, %v; want it skipped", res, err)
	}
	check(beforeKey)

	// At a key the syncer wrote, replaced by hand since: neither an update
	// nor a delete of that key touches it.
	k2, _ := record(name, owner, "192.0.2.2")
	if _, err := s.SyncOwner(ctx, owner, set([3]string{name, owner, "192.0.2.2"})); err != nil {
		t.Fatal(err)
	}
	put(k2)
	changed := set([3]string{name, owner, "192.0.2.2"})
	r := changed[k2]
	r.TTL = 99
	changed[k2] = r
	if res, err := s.SyncOwner(ctx, owner, changed); err != nil || res.Puts != 0 || len(res.Skipped) != 1 {
		t.Errorf("update over a hand record: %+v, %v; want it skipped", res, err)
	}
	check(k2)
	if res, err := s.SyncOwner(ctx, owner, nil); err != nil || res.Deletes != 0 {
		t.Errorf("delete of a hand record: %+v, %v; want none", res, err)
	}
	check(k2)

	// At a key the syncer is about to write for the first time.
	k3, _ := record(name, owner, "192.0.2.3")
	put(k3)
	if res, err := s.SyncOwner(ctx, owner, set([3]string{name, owner, "192.0.2.3"}, [3]string{name, owner, "192.0.2.4"})); err != nil || res.Puts != 1 || len(res.Skipped) != 1 {
		t.Errorf("put beside a new hand record: %+v, %v; want 1 put and 1 skipped", res, err)
	}
	check(k3)
	check(beforeKey)
}

// An owned record changed behind the syncer's back (still with an owner)
// fails the guard, is read again and repaired, not skipped.
func TestOwnedRecordChangedBehindTheMirrorIsRepaired(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	const owner = "EndpointSlice xcc-dns/a"
	desired := set([3]string{"gateway.cluster-a.dev-team.clusters.xcc.test", owner, "192.0.2.1"})
	if _, err := s.Reconcile(ctx, desired); err != nil {
		t.Fatal(err)
	}
	key := desired.Keys()[0]
	if _, err := cli.Put(ctx, key, `{"host":"192.0.2.1","ttl":5,"owner":"`+owner+`"}`); err != nil {
		t.Fatal(err)
	}
	changed := skydnsrecord.Set{key: desired[key]}
	r := changed[key]
	r.TTL = 77
	changed[key] = r
	res, err := s.SyncOwner(ctx, owner, changed)
	if err != nil || res.Puts != 1 || len(res.Skipped) != 0 {
		t.Fatalf("sync after an owned record changed: %+v, %v; want 1 put", res, err)
	}
	want, _ := r.Marshal()
	if v, _ := get(t, cli, key); v != string(want) {
		t.Errorf("record = %s, want %s", v, want)
	}
}

// A change that spans several transactions never leaves the name with
// fewer records than both its old and its new state: every revision etcd
// went through while the plan was written is checked.
func TestLargeChangeNeverAnswersPartially(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := store.New(cli, zone)
	const name = "gateway.cluster-a.dev-team.clusters.xcc.test"
	const owner = "EndpointSlice xcc-dns/a"
	gen := func(third int) skydnsrecord.Set {
		out := skydnsrecord.Set{}
		for i := range 3 * store.MaxOpsPerTxn {
			k, r := record(name, owner, fmt.Sprintf("10.%d.%d.%d", third, i/250, i%250+1))
			out[k] = r
		}
		return out
	}
	old, next := gen(1), gen(2)
	if _, err := s.Reconcile(ctx, old); err != nil {
		t.Fatal(err)
	}
	start := revision(t, cli)
	if _, err := s.SyncOwner(ctx, owner, next); err != nil {
		t.Fatal(err)
	}
	end := revision(t, cli)
	if end-start < 4 {
		t.Fatalf("the change took %d transactions; the test needs several", end-start)
	}
	dir := skydnsrecord.Key(name) + "/"
	for rev := start + 1; rev <= end; rev++ {
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithRev(rev))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count < int64(len(next)) {
			t.Errorf("at revision %d the name had %d records, fewer than its old and new %d", rev, resp.Count, len(next))
		}
	}
}

// SyncOwners writes the records of several owners in one transaction
// (one etcd revision), as SyncOwner would one by one, and touches no
// other owner.
func TestSyncOwnersWritesOneTransaction(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	a, b, c := "EndpointSlice xcc-dns/a", "Name /skydns/test/xcc/x", "EndpointSlice xcc-dns/c"
	if _, err := s.Reconcile(ctx, set([3]string{"x.xcc.test", a, "192.0.2.1"}, [3]string{"x.xcc.test", c, "192.0.2.3"})); err != nil {
		t.Fatal(err)
	}
	before := revision(t, cli)
	res, err := s.SyncOwners(ctx, map[string]skydnsrecord.Set{
		a: set([3]string{"x.xcc.test", a, "192.0.2.2"}),
		b: set([3]string{"x.xcc.test", b, "192.0.2.2"}),
	})
	if err != nil || res.Puts != 2 || res.Deletes != 1 {
		t.Fatalf("SyncOwners: %+v, %v; want 2 puts and 1 delete", res, err)
	}
	if after := revision(t, cli); after != before+1 {
		t.Errorf("revision %d after %d: %d transactions, want 1", after, before, after-before)
	}
	want := set([3]string{"x.xcc.test", a, "192.0.2.2"}, [3]string{"x.xcc.test", b, "192.0.2.2"}, [3]string{"x.xcc.test", c, "192.0.2.3"})
	if got, err := s.Current(ctx); err != nil || !maps.Equal(got, want) {
		t.Errorf("records %v (%v), want %v", got, err, want)
	}
	if _, err := s.SyncOwners(ctx, map[string]skydnsrecord.Set{a: set([3]string{"x.xcc.test", b, "192.0.2.9"})}); err == nil {
		t.Error("a record of another owner was accepted")
	}
}

// A key that one owner gives up and another takes in one SyncOwners
// (etcd refuses a transaction naming it twice) moves all the same.
func TestSyncOwnersMovesAKeyBetweenOwners(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	s := store.New(cli, zone)
	const key = "/skydns/test/xcc/x"
	r := func(owner string) skydnsrecord.Record {
		return skydnsrecord.Record{Host: "192.0.2.1", TTL: skydnsrecord.DefaultTTL, Owner: owner}
	}
	if _, err := s.Reconcile(ctx, skydnsrecord.Set{key: r("A")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SyncOwners(ctx, map[string]skydnsrecord.Set{"A": nil, "B": {key: r("B")}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Current(ctx); err != nil || !maps.Equal(got, skydnsrecord.Set{key: r("B")}) {
		t.Errorf("records %v (%v), want the key owned by B", got, err)
	}
}
