package workload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Writer says which half of the controller wrote into a cluster: the
// metrics of writes are kept apart per half.
type Writer int

const (
	// WriterGatewayDNS: the EndpointSlices of GatewayDNS (package publish).
	WriterGatewayDNS Writer = iota
	// WriterClusterSet: the Multi-Cluster Services objects and slices of
	// a ClusterSet member.
	WriterClusterSet
	writers
)

// Writers are every Writer, for the metrics.
var Writers = []Writer{WriterGatewayDNS, WriterClusterSet}

// String is the Writer's metric label value.
func (k Writer) String() string {
	if k == WriterClusterSet {
		return "clusterset"
	}
	return "gatewaydns"
}

// writeStats are the writes into one cluster by one Writer.
type writeStats struct {
	written  atomic.Bool
	failures atomic.Uint64
	// last is the duration of the last write in nanoseconds.
	last atomic.Int64
}

// WriteStats is what the writes of one Writer into a cluster came to
// since the controller connected to it.
type WriteStats struct {
	// Written: at least one write ended (Last and Failures say how).
	Written  bool
	Failures uint64
	Last     time.Duration
}

// NoteWrite records a write of writer into w that took took and ended
// with err; a write the controller cancelled (it stopped waiting, the
// object is gone) says nothing of the cluster and is not counted. The
// Set's Config.Written is told of it too.
func (w *Cluster) NoteWrite(writer Writer, took time.Duration, err error) {
	if errors.Is(err, context.Canceled) || writer < 0 || writer >= writers {
		return
	}
	s := &w.writes[writer]
	s.last.Store(int64(took))
	if err != nil {
		s.failures.Add(1)
	}
	s.written.Store(true)
	if w.onWrite != nil {
		w.onWrite(writer, took, err)
	}
}

// Writes returns what the writes of writer into w came to.
func (w *Cluster) Writes(writer Writer) WriteStats {
	if writer < 0 || writer >= writers {
		return WriteStats{}
	}
	s := &w.writes[writer]
	if !s.written.Load() {
		return WriteStats{}
	}
	return WriteStats{Written: true, Failures: s.failures.Load(), Last: time.Duration(s.last.Load())}
}

// Clusters returns the clusters the Set is connected to, by key: what
// the metrics read at scrape time.
func (m *Set) Clusters() []*Cluster {
	m.mu.Lock()
	out := make([]*Cluster, 0, len(m.clusters))
	for _, w := range m.clusters {
		out = append(out, w)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Cluster) int { return strings.Compare(a.key, b.key) })
	return out
}
