package controller

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the controller, registered on the registry served at /metrics.
type Metrics struct {
	ClustersWatched prometheus.Gauge
	SlicesWritten   *prometheus.CounterVec
	SyncErrors      prometheus.Counter
	Syncs           prometheus.Counter
	// ServiceToSlices is the time from a gateway Service event in a workload
	// cluster to the EndpointSlices being written everywhere: the part of DNS
	// propagation this controller owns.
	ServiceToSlices prometheus.Histogram
}

// NewMetrics creates the metrics and registers them on reg (nil: unregistered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ClustersWatched: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "workload_clusters_watched",
			Help: "Workload clusters with an open client and informers.",
		}),
		SlicesWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "endpointslices_written_total",
			Help: "EndpointSlices created, updated or deleted in workload clusters.",
		}, []string{"operation"}),
		SyncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "sync_errors_total",
			Help: "GatewayDNS syncs that failed and were requeued.",
		}),
		Syncs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "syncs_total",
			Help: "GatewayDNS syncs.",
		}),
		ServiceToSlices: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "service_to_endpointslices_seconds",
			Help:    "Time from a gateway Service change in a workload cluster to the EndpointSlices written.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.ClustersWatched, m.SlicesWritten, m.SyncErrors, m.Syncs, m.ServiceToSlices)
	}
	return m
}
