package store_test

import (
	"context"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A store given reverse zones reconciles them as it does its zone: owned
// records there that are not desired go, records put by hand stay, and
// nothing outside its directories is read or touched.
func TestWithNamesReconcilesReverseZonesOnly(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx := context.Background()
	ptr := func(owner, host string) string {
		v, err := skydnsrecord.Record{Host: host, TTL: skydnsrecord.DefaultTTL, Owner: owner}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	const (
		stale     = "/skydns/arpa/in-addr/10/0/0/7"  // owned, inside 0.0.10.in-addr.arpa, no longer desired
		hand      = "/skydns/arpa/in-addr/10/0/0/8"  // put by hand, no owner
		elsewhere = "/skydns/arpa/in-addr/10/9/0/7"  // owned, but outside the store's directories
		kept      = "/skydns/arpa/in-addr/10/0/0/5"  // desired
		near      = "/skydns/arpa/in-addr/10/0/01/5" // a sibling whose name starts alike
	)
	for key, value := range map[string]string{
		stale:     ptr("Reverse "+stale, "gateway.old.dev-team.clusters.xcc.test"),
		hand:      `{"host":"mail.example.com","ttl":60}`,
		elsewhere: ptr("Reverse "+elsewhere, "gateway.x.dev-team.clusters.xcc.test"),
		near:      ptr("Reverse "+near, "gateway.y.dev-team.clusters.xcc.test"),
	} {
		if _, err := cli.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	s := store.New(cli, zone).WithNames("0.0.10.in-addr.arpa", "0.0.10.in-addr.arpa", "5.0.0.10.in-addr.arpa", "xcc.test")
	desired := skydnsrecord.Set{kept: {Host: "gateway.cluster-a.dev-team.clusters.xcc.test", TTL: 30, Owner: "Reverse " + kept}}
	res, err := s.Reconcile(ctx, desired)
	if err != nil || res.Puts != 1 || res.Deletes != 1 {
		t.Fatalf("reconcile: %+v, %v; want 1 put and the stale record deleted", res, err)
	}
	for key, want := range map[string]bool{stale: false, hand: true, elsewhere: true, kept: true, near: true} {
		if _, ok := get(t, cli, key); ok != want {
			t.Errorf("%s present %v, want %v", key, ok, want)
		}
	}
	if got := s.OwnedWithHost("gateway.cluster-a.dev-team.clusters.xcc.test"); len(got) != 1 {
		t.Errorf("OwnedWithHost = %v, want the PTR record", got)
	}
}
