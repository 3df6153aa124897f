package clusterset

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// Metrics of the ClusterSet reconciler, by clusterset
// ("<namespace>/<name>"), dropped when the ClusterSet is gone. The
// controller registers them with its own (docs/metrics.md lists them all).
type Metrics struct {
	// ExportToWritten is the time from a ServiceExport's creation (or the
	// sync that saw its last change) to its import written into every
	// member of its ClusterSet (exportLatency).
	ExportToWritten prometheus.Histogram
	// The state of each ClusterSet at its last sync.
	ClusterSetReady   *prometheus.GaugeVec
	ClusterSetMembers *prometheus.GaugeVec
	ClusterSetImports *prometheus.GaugeVec
	ClusterSetExports *prometheus.GaugeVec
	// MemberEventsHeld counts the events of members held back past
	// their syncs a second (memberRate); the log names the member.
	MemberEventsHeld prometheus.Counter
	// MemberWritesUnchanged counts the writes of a member skipped
	// because nothing they are computed from changed (changes.go).
	MemberWritesUnchanged prometheus.Counter

	// exports times the exports of each ClusterSet for ExportToWritten.
	exports *exportLatency
}

// labelClusterSet is the ClusterSet label, "<namespace>/<name>"; not
// called namespace or cluster, which a scrape's own target labels and a
// federation's external labels often take.
const labelClusterSet = "clusterset"

// Member states of xcc_controller_clusterset_members, as the ClusterSet's
// status tells them.
const (
	memberOK          = "ok"
	memberUnreachable = "unreachable"
	memberWriteFailed = "write_failed"
	memberWriting     = "writing"
	memberRefused     = "refused"
)

// NewMetrics creates the metrics, unregistered: Collectors are for the
// controller's registry.
func NewMetrics() *Metrics {
	return &Metrics{
		ExportToWritten: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "export_to_import_written_seconds",
			Help:    "Time from a ServiceExport's creation (or the sync that saw its last change) to its import written into every member.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}),
		ClusterSetReady: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "clusterset_ready",
			Help: "1 when the ClusterSet's Ready condition is True at its last sync, else 0.",
		}, []string{labelClusterSet}),
		ClusterSetMembers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "clusterset_members",
			Help: "Clusters the ClusterSet selects at its last sync, by state: ok, unreachable, write_failed, writing, refused (selected, not a member).",
		}, []string{labelClusterSet, "state"}),
		ClusterSetImports: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "clusterset_imports",
			Help: "ServiceImports the ClusterSet writes into each member, at its last sync.",
		}, []string{labelClusterSet}),
		ClusterSetExports: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "clusterset_exports",
			Help: "ServiceExports of the ClusterSet's members at its last sync, by condition (Valid, Conflict) and its status.",
		}, []string{labelClusterSet, "condition", "status"}),
		MemberEventsHeld: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "clusterset_member_events_held_total",
			Help: "Events of clusterset members held back because the member passed --member-syncs-per-second; held events are synced together.",
		}),
		MemberWritesUnchanged: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "xcc", Subsystem: "controller", Name: "clusterset_member_writes_unchanged_total",
			Help: "Writes of a clusterset member skipped because nothing they are computed from changed since its last write, which ended well: no import, export, namespace or object of the controller there.",
		}),
		exports: newExportLatency(),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ExportToWritten, m.ClusterSetReady, m.ClusterSetMembers, m.ClusterSetImports, m.ClusterSetExports, m.MemberEventsHeld,
		m.MemberWritesUnchanged}
}

// forget drops the series of the ClusterSet key, which is gone.
func (m *Metrics) forget(key string) {
	l := prometheus.Labels{labelClusterSet: key}
	m.ClusterSetReady.DeletePartialMatch(l)
	m.ClusterSetMembers.DeletePartialMatch(l)
	m.ClusterSetImports.DeletePartialMatch(l)
	m.ClusterSetExports.DeletePartialMatch(l)
	m.exports.forget(key)
}

// observe sets the gauges of the ClusterSet key from its sync:
// st is the status it wrote, refused the selected Clusters that are not
// members, and the rest what clusterSetStatus was given. Each member
// counts in the first state its status entry tells. An export whose
// import this sync finds written into every member is timed.
func (m *Metrics) observe(key string, st xccv1alpha1.ClusterSetStatus, refused int, members []setMember,
	reads map[string]memberRead, agg aggregate.Result, written memberWrites) {
	ready := 0.0
	if meta.IsStatusConditionTrue(st.Conditions, xccv1alpha1.ConditionReady) {
		ready = 1
	}
	m.ClusterSetReady.WithLabelValues(key).Set(ready)
	states := map[string]int{memberOK: 0, memberUnreachable: 0, memberWriteFailed: 0, memberWriting: 0, memberRefused: refused}
	for _, mb := range members {
		switch {
		case mb.cluster == nil || mb.cluster.Unreachable() != "" || mb.cluster.CutOff() != "" || !reads[mb.ClusterID].synced || mb.destUnknown:
			states[memberUnreachable]++
		case written.errs[mb.ClusterID] != nil:
			states[memberWriteFailed]++
		case written.writing[mb.ClusterID]:
			states[memberWriting]++
		default:
			states[memberOK]++
		}
	}
	allWritten := len(members) > 0 && states[memberOK] == len(members)
	read := map[string]bool{}
	for id, r := range reads {
		read[id] = r.synced
	}
	for _, d := range m.exports.observe(key, time.Now(), exportsOf(reads), read, agg, allWritten) {
		m.ExportToWritten.Observe(d.Seconds())
	}
	for state, n := range states {
		m.ClusterSetMembers.WithLabelValues(key, state).Set(float64(n))
	}
	m.ClusterSetImports.WithLabelValues(key).Set(float64(len(agg.Imports)))
	exports := map[aggregate.ConditionType]map[aggregate.ConditionStatus]int{}
	for _, t := range []aggregate.ConditionType{aggregate.ConditionValid, aggregate.ConditionConflict} {
		exports[t] = map[aggregate.ConditionStatus]int{aggregate.StatusTrue: 0, aggregate.StatusFalse: 0}
	}
	for _, e := range agg.Exports {
		for _, c := range e.Conditions {
			if byStatus, ok := exports[c.Type]; ok {
				if _, ok := byStatus[c.Status]; ok {
					byStatus[c.Status]++
				}
			}
		}
	}
	for t, byStatus := range exports {
		for s, n := range byStatus {
			m.ClusterSetExports.WithLabelValues(key, string(t), string(s)).Set(float64(n))
		}
	}
}
