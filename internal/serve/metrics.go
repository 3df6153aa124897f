package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
)

var everything = labels.Everything()

// Metrics are the syncer's Prometheus metrics.
type Metrics struct {
	Records           prometheus.Gauge
	Writes            prometheus.Counter
	SyncErrors        prometheus.Counter
	RefusedInputs     prometheus.Counter
	RefusedSlices     prometheus.Counter
	HandRecordsKept   prometheus.Counter
	ReconcileDuration prometheus.Histogram
	// LastReconcile is when the last full reconcile landed: one that
	// does not for several reconcile periods leaves etcd unrepaired.
	LastReconcile prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Records: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "xcc_serve_records", Help: "Records the syncer owns in etcd.",
		}),
		Writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xcc_serve_record_writes_total", Help: "Record puts and deletes written to etcd.",
		}),
		SyncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xcc_serve_sync_errors_total", Help: "Syncs and reconciles that failed and were retried.",
		}),
		RefusedInputs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xcc_serve_refused_inputs_total", Help: "Hostnames, addresses or TTLs in EndpointSlices that were refused.",
		}),
		RefusedSlices: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xcc_serve_refused_slices_total", Help: "EndpointSlices refused because their records would exceed --max-records.",
		}),
		HandRecordsKept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xcc_serve_hand_records_kept_total", Help: "Writes skipped because the key holds a record the syncer did not write.",
		}),
		ReconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "xcc_serve_reconcile_duration_seconds", Help: "Time of a full reconcile of every record.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		LastReconcile: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "xcc_serve_last_reconcile_timestamp_seconds", Help: "Unix time of the last full reconcile of every record that succeeded.",
		}),
	}
	reg.MustRegister(m.Records, m.Writes, m.SyncErrors, m.RefusedInputs, m.RefusedSlices, m.HandRecordsKept, m.ReconcileDuration, m.LastReconcile)
	return m
}
