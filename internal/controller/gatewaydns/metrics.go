package gatewaydns

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the GatewayDNS reconciler. The controller registers them
// with its own (docs/metrics.md lists them all).
type Metrics struct {
	SlicesWritten *prometheus.CounterVec
	// ServiceToSlices is the time from a gateway Service event in a workload
	// cluster to the EndpointSlices being written everywhere: the part of DNS
	// propagation this controller owns.
	ServiceToSlices prometheus.Histogram

	// behind reads the targets behind at scrape time, from the
	// reconciler attached to it.
	behind *behindCollector
}

// NewMetrics creates the metrics, unregistered: Collectors are for the
// controller's registry.
func NewMetrics() *Metrics {
	return &Metrics{
		SlicesWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "endpointslices_written_total",
			Help: "EndpointSlices created, updated or deleted in workload clusters.",
		}, []string{"operation"}),
		ServiceToSlices: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "service_to_endpointslices_seconds",
			Help:    "Time from a gateway Service change in a workload cluster to the EndpointSlices written.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
		behind: newBehindCollector(),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.SlicesWritten, m.ServiceToSlices, m.behind}
}

// behindCollector reads, at each scrape, the targets behind that the
// reconciler attached to it knows now. Reading at scrape time keeps no
// copy to go stale and needs no hook where a target catches up or goes.
type behindCollector struct {
	source atomic.Pointer[Reconciler]

	behind, behindMax *prometheus.Desc
}

func newBehindCollector() *behindCollector {
	name := func(n string) string { return prometheus.BuildFQName("xcc", "controller", n) }
	return &behindCollector{
		behind: prometheus.NewDesc(name("targets_behind"),
			"Targets of GatewayDNS that lack their latest EndpointSlices (write failed, still writing or unreachable), counted once per GatewayDNS.", nil, nil),
		behindMax: prometheus.NewDesc(name("targets_behind_max_seconds"),
			"How long the target behind the longest has lacked its GatewayDNS's latest EndpointSlices; 0 when none is behind.", nil, nil),
	}
}

// attach makes the collector read c from now on.
func (m *Metrics) attach(c *Reconciler) { m.behind.source.Store(c) }

func (l *behindCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.behind
	ch <- l.behindMax
}

func (l *behindCollector) Collect(ch chan<- prometheus.Metric) {
	c := l.source.Load()
	if c == nil {
		return
	}
	n, oldest := c.memory.targetsBehind()
	age := 0.0
	if n > 0 {
		age = max(time.Since(oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(l.behind, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(l.behindMax, prometheus.GaugeValue, age)
}

// targetsBehind counts, over every GatewayDNS, the targets its last sync
// found behind, and returns the oldest since-time among them.
func (m *memories) targetsBehind() (n int, oldest time.Time) {
	m.mu.Lock()
	mems := make([]*memory, 0, len(m.byKey))
	for _, mem := range m.byKey {
		mems = append(mems, mem)
	}
	m.mu.Unlock()
	for _, mem := range mems {
		mem.mu.Lock()
		if mem.since != nil {
			for _, t := range mem.since.targets {
				n++
				if oldest.IsZero() || t.Before(oldest) {
					oldest = t
				}
			}
		}
		mem.mu.Unlock()
	}
	return n, oldest
}
