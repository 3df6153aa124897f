package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/guard"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// TestConfigs derives the three servers from the shipped Corefile: a is
// it with pprof, b the same without the zone block's cache, c the
// baseline; a and b import the guard.
func TestConfigs(t *testing.T) {
	cfgs, err := configs(testfixture.ShippedCorefile(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 3 {
		t.Fatalf("%d servers, want 3", len(cfgs))
	}
	for _, c := range cfgs[:2] {
		for _, want := range []string{"import {$XCC_GUARD}", zoneBlock, "import " + guard.Snippet, "pprof 127.0.0.1:{$PPROF_PORT}"} {
			if !strings.Contains(c.corefile, want) {
				t.Errorf("server %s: no %q", c.id, want)
			}
		}
	}
	if n := strings.Count(cfgs[0].corefile, "cache {"); n != 1 {
		t.Errorf("server a: %d cache blocks, want 1", n)
	}
	if strings.Contains(cfgs[1].corefile, "cache {") {
		t.Error("server b has a cache block")
	}
	if strings.Contains(cfgs[2].corefile, "XCC_GUARD") || !strings.Contains(cfgs[2].corefile, "cache {") {
		t.Errorf("server c:\n%s", cfgs[2].corefile)
	}
}

// TestHostileQueries holds the rows to what they measure: the name
// grammar lets the baseline on to etcd and no hostile query, and the
// guard written for the zone has the snippet the Corefile imports.
func TestHostileQueries(t *testing.T) {
	ids := map[string]bool{}
	for i, q := range append([]hostileQuery{hostileBaseline}, hostileQueries...) {
		if ids[q.id] {
			t.Errorf("row %s twice", q.id)
		}
		ids[q.id] = true
		reads, err := q.readsEtcd()
		if err != nil {
			t.Fatal(err)
		}
		if reads != (i == 0) {
			t.Errorf("%s %q: reads etcd %t", q.id, q.name, reads)
		}
	}
	var b bytes.Buffer
	if err := guard.Write(&b, guard.Config{Zone: zone}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "("+guard.Snippet+")") {
		t.Errorf("guard file without (%s)", guard.Snippet)
	}
}
