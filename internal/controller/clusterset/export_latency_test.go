package clusterset

import (
	"maps"
	"testing"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// An export is timed from its creation, or from the sync that saw its
// last change, to the first sync that finds its import written into
// every member; exports already there at the first sync or seen in a
// member the sync before did not read, exports never imported and
// exports gone before they were written are not timed.
func TestExportLatency(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	web := func(cluster string, created time.Time, port int32) aggregate.Export {
		return aggregate.Export{Cluster: cluster, Namespace: "shop", Name: "web", Created: created,
			Service: &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: port}}}}
	}
	db := aggregate.Export{Cluster: "east", Namespace: "shop", Name: "db", Created: at(-100)} // no Service: invalid
	l := newExportLatency()
	read := map[string]bool{"east": true, "west": true, "south": true}
	step := func(now int, allWritten bool, want []time.Duration, exports ...aggregate.Export) {
		t.Helper()
		read := maps.Clone(read)
		agg, err := aggregate.Aggregate(exports)
		if err != nil {
			t.Fatal(err)
		}
		got := l.observe("dev-team/prod", at(now), exports, read, agg, allWritten)
		if len(got) != len(want) {
			t.Fatalf("at %ds: observed %v, want %v", now, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("at %ds: observed %v, want %v", now, got, want)
			}
		}
	}
	// First sync: what is there may have been written long ago.
	step(0, true, nil, web("east", at(-500), 80), db)
	// A new export in west, created at 10 s, seen at 12 s, a member not
	// yet written at 12 s, written at 15 s: 5 s.
	step(12, false, nil, web("east", at(-500), 80), web("west", at(10), 80), db)
	step(15, true, []time.Duration{5 * time.Second}, web("east", at(-500), 80), web("west", at(10), 80), db)
	// Timed once.
	step(16, true, nil, web("east", at(-500), 80), web("west", at(10), 80), db)
	// A change of east's ports, seen at 20 s, written at 21 s: 1 s.
	step(20, false, nil, web("east", at(-500), 8080), web("west", at(10), 80), db)
	step(21, true, []time.Duration{time.Second}, web("east", at(-500), 8080), web("west", at(10), 80), db)
	// An export seen in a member read for the first time (at the start,
	// back from an outage) may have been written before: not timed.
	read["north"] = true
	step(30, true, nil, web("east", at(-500), 8080), web("west", at(10), 80), db, web("north", at(-50), 80))
	step(31, true, nil, web("east", at(-500), 8080), web("west", at(10), 80), db, web("north", at(-50), 80))
	// Gone before it was written: not timed, and not later either.
	step(40, false, nil, web("east", at(-500), 8080), web("west", at(10), 80), db, web("south", at(39), 80))
	step(41, true, nil, web("east", at(-500), 8080), web("west", at(10), 80), db)
	// A creation time ahead of the controller's clock counts as now.
	step(50, true, []time.Duration{0}, web("east", at(-500), 8080), web("west", at(10), 80), db, web("south", at(60), 80))

	l.forget("dev-team/prod")
	step(60, true, nil, web("east", at(55), 80))
}
