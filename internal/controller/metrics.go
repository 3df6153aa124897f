package controller

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xcc-dns/xcc-dns/internal/controller/clusterset"
	"github.com/xcc-dns/xcc-dns/internal/controller/gatewaydns"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
)

// Metrics of the controller, registered on the registry served at /metrics.
// docs/metrics.md lists them with the alerts they serve. Labels are
// bounded: a workload cluster or ClusterSet label has one value per
// Cluster API Cluster or ClusterSet object, never one per DNS name.
// These are the shared ones; each reconciler has its own besides.
type Metrics struct {
	ClustersWatched prometheus.Gauge
	SyncErrors      prometheus.Counter
	Syncs           prometheus.Counter
	// TargetWrites is the time of each write into a workload cluster, by
	// writer (workload.Writer): one histogram for all clusters, as a
	// histogram per cluster would be buckets times clusters series.
	TargetWrites *prometheus.HistogramVec
	// StateBytes is the size of the last state ConfigMap written, by
	// kind (package state): a ConfigMap holds at most 1 MiB.
	StateBytes *prometheus.GaugeVec
	// WorkloadRequests counts the requests to workload clusters by
	// method and answer class (workload.AnswerClass), all clusters
	// together; RateLimitWait is the time they waited for their
	// cluster's client rate limit. Together they say whether writes are
	// held by the controller's rate (the wait grows) or by the clusters
	// (429s, 5xx, no answer).
	WorkloadRequests *prometheus.CounterVec
	RateLimitWait    prometheus.Counter
	// DiscoveryFailures counts the failed tries of the API discovery at
	// the controller's start (discoverAPIs); the controller runs once
	// one answers.
	DiscoveryFailures prometheus.Counter
	// GatewayDNS and ClusterSet are the reconcilers' own (packages
	// gatewaydns and clusterset).
	GatewayDNS *gatewaydns.Metrics
	ClusterSet *clusterset.Metrics

	// live reads the workload clusters at scrape time, from the
	// connections attached to it.
	live *liveCollector
}

// Label names. The workload cluster label is "<namespace>/<name>"; not
// called namespace or cluster, which a scrape's own target labels and a
// federation's external labels often take (the ClusterSet label is
// package clusterset's, named the same way).
const (
	labelWorkloadCluster = "workload_cluster"
	labelWriter          = "writer"
)

// NewMetrics creates the metrics and registers them on reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ClustersWatched: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "workload_clusters_watched",
			Help: "Workload clusters with an open client and informers.",
		}),
		SyncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "sync_errors_total",
			Help: "GatewayDNS and ClusterSet syncs that failed and were requeued.",
		}),
		Syncs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "syncs_total",
			Help: "GatewayDNS and ClusterSet syncs.",
		}),
		TargetWrites: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "target_write_duration_seconds",
			Help:    "Time of each write into a workload cluster (all its slices, or all of a ClusterSet member's objects), by writer.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{labelWriter}),
		StateBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "state_configmap_bytes",
			Help: "Bytes stored by the last write of a state ConfigMap, by kind (headless, clusterset).",
		}, []string{"kind"}),
		WorkloadRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "workload_requests_total",
			Help: "Requests to workload clusters, by method and answer class (2xx, 3xx, 4xx, 429, 5xx, none).",
		}, []string{"method", "answer"}),
		RateLimitWait: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "workload_rate_limit_wait_seconds_total",
			Help: "Time requests to workload clusters waited for their cluster's client rate limit, summed over requests.",
		}),
		DiscoveryFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "api_discovery_failures_total",
			Help: "Failed tries of the management cluster's API discovery at the controller's start; the controller waits for an answer.",
		}),
		GatewayDNS: gatewaydns.NewMetrics(),
		ClusterSet: clusterset.NewMetrics(),
		live:       newLiveCollector(),
	}
	if reg != nil {
		reg.MustRegister(m.ClustersWatched, m.SyncErrors, m.Syncs, m.TargetWrites, m.StateBytes, m.WorkloadRequests, m.RateLimitWait, m.DiscoveryFailures, m.live)
		reg.MustRegister(m.GatewayDNS.Collectors()...)
		reg.MustRegister(m.ClusterSet.Collectors()...)
	}
	return m
}

// stateWritten is the state package's ConfigMaps.Written.
func (m *Metrics) stateWritten(kind string, bytes int) {
	m.StateBytes.WithLabelValues(kind).Set(float64(bytes))
}

// requests observes the workload clients' requests.
func (m *Metrics) requests() workload.Requests {
	return workload.Requests{
		Done:      func(method, class string) { m.WorkloadRequests.WithLabelValues(method, class).Inc() },
		Throttled: func(d time.Duration) { m.RateLimitWait.Add(d.Seconds()) },
	}
}

// targetWritten is the workload Set's Config.Written.
func (m *Metrics) targetWritten(writer workload.Writer, took time.Duration, _ error) {
	m.TargetWrites.WithLabelValues(writer.String()).Observe(took.Seconds())
}

// liveCollector reads, at each scrape, what the workload connections
// attached to it know now: each workload cluster's reachability, cut-off
// state and writes. Reading at scrape time keeps no copy to go stale and
// needs no hook where a cluster changes or goes.
type liveCollector struct {
	source atomic.Pointer[workload.Set]

	reachable, cutOff, writeFailures, lastWrite *prometheus.Desc
}

func newLiveCollector() *liveCollector {
	name := func(n string) string { return prometheus.BuildFQName("xcc", "controller", n) }
	perCluster := []string{labelWorkloadCluster}
	perWrite := []string{labelWriter, labelWorkloadCluster}
	return &liveCollector{
		reachable: prometheus.NewDesc(name("workload_cluster_reachable"),
			"0 once every read of the workload cluster has failed for the unreachable period (20 s), else 1.", perCluster, nil),
		cutOff: prometheus.NewDesc(name("workload_cluster_cut_off"),
			"1 while the workload cluster's reads are cut off for passing a read limit (ClusterCutOff), else 0.", perCluster, nil),
		writeFailures: prometheus.NewDesc(name("target_write_failures_total"),
			"Writes into the workload cluster that failed, by writer, since the controller connected to it.", perWrite, nil),
		lastWrite: prometheus.NewDesc(name("target_last_write_duration_seconds"),
			"Duration of the last write into the workload cluster, by writer.", perWrite, nil),
	}
}

// attach makes the collector read w from now on.
func (m *Metrics) attach(w *workload.Set) { m.live.source.Store(w) }

func (l *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{l.reachable, l.cutOff, l.writeFailures, l.lastWrite} {
		ch <- d
	}
}

func (l *liveCollector) Collect(ch chan<- prometheus.Metric) {
	w := l.source.Load()
	if w == nil {
		return
	}
	for _, c := range w.Clusters() {
		key := c.Key()
		ch <- prometheus.MustNewConstMetric(l.reachable, prometheus.GaugeValue, oneIf(c.Unreachable() == ""), key)
		ch <- prometheus.MustNewConstMetric(l.cutOff, prometheus.GaugeValue, oneIf(c.CutOff() != ""), key)
		for _, writer := range workload.Writers {
			s := c.Writes(writer)
			if !s.Written {
				continue
			}
			ch <- prometheus.MustNewConstMetric(l.writeFailures, prometheus.CounterValue, float64(s.Failures), writer.String(), key)
			ch <- prometheus.MustNewConstMetric(l.lastWrite, prometheus.GaugeValue, s.Last.Seconds(), writer.String(), key)
		}
	}
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
