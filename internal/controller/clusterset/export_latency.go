package clusterset

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// exportLatency times each ServiceExport of a ClusterSet until its import
// is written into every member: from the export's creation (the member's
// clock, never ahead of the controller's), or from the sync that saw its
// last change, to the first sync that finds every member written. Only
// an export new in a member read by an earlier sync is timed: one seen
// in a member read for the first time (at the start, when it joins) may
// have been written long before.
type exportLatency struct {
	mu   sync.Mutex
	sets map[string]*setExports
}

// setExports is what exportLatency knows of one ClusterSet at its last
// sync: the members read by a sync so far, and their exports.
type setExports struct {
	read    map[string]bool
	exports map[exportID]exportSeen
}

// exportID is one export: its member's cluster id and namespace/name.
type exportID struct {
	cluster string
	aggregate.Key
}

// exportSeen is an export's fingerprint as last seen, and since when it
// waits for its import written everywhere (pending).
type exportSeen struct {
	print   [sha256.Size]byte
	start   time.Time
	pending bool
}

func newExportLatency() *exportLatency {
	return &exportLatency{sets: map[string]*setExports{}}
}

// observe takes a sync of the ClusterSet key at now: the members'
// exports, whether it read each member (by cluster id), the aggregation, and
// whether every member was read and written. It returns the latencies
// of the exports whose imports this sync finds written everywhere for
// the first time.
func (l *exportLatency) observe(key string, now time.Time, exports []aggregate.Export, read map[string]bool, agg aggregate.Result, allWritten bool) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sets[key]
	if s == nil {
		s = &setExports{}
		l.sets[key] = s
	}
	imported := map[exportID]bool{}
	for _, imp := range agg.Imports {
		for _, c := range imp.Clusters {
			imported[exportID{cluster: c, Key: imp.Key}] = true
		}
	}
	var out []time.Duration
	seen := make(map[exportID]exportSeen, len(exports))
	for _, e := range exports {
		id := exportID{cluster: e.Cluster, Key: aggregate.Key{Namespace: e.Namespace, Name: e.Name}}
		fp := fingerprint(e)
		prev, ok := s.exports[id]
		switch {
		case !ok && !s.read[e.Cluster]:
			prev = exportSeen{print: fp}
		case !ok:
			start := e.Created
			if start.After(now) {
				start = now
			}
			prev = exportSeen{print: fp, start: start, pending: true}
		case prev.print != fp:
			prev = exportSeen{print: fp, start: now, pending: true}
		}
		if prev.pending && allWritten && imported[id] {
			out = append(out, now.Sub(prev.start))
			prev.pending = false
		}
		if prev.pending && !imported[id] {
			// Invalid: no import to wait for; a change that makes it valid
			// starts it again.
			prev.pending = false
		}
		seen[id] = prev
	}
	// A member read once stays so (an unsynced read keeps its last
	// exports); one that left is forgotten.
	everRead := map[string]bool{}
	for id, synced := range read {
		everRead[id] = synced || s.read[id]
	}
	s.exports, s.read = seen, everRead
	return out
}

// forget drops what is known of the ClusterSet key, which is gone.
func (l *exportLatency) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sets, key)
}

// fingerprint is what of an export makes its import: a change of it is
// a change to time.
func fingerprint(e aggregate.Export) [sha256.Size]byte {
	data, _ := json.Marshal(struct {
		Service     *aggregate.Service
		OverLimit   bool
		Labels      map[string]string
		Annotations map[string]string
	}{e.Service, e.OverLimit, e.Labels, e.Annotations})
	return sha256.Sum256(data)
}
