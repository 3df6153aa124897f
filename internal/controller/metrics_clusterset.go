package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// timedWrite runs write, a write into cluster by writer, and records its
// duration and error in the cluster's write metrics.
func timedWrite(cluster *workload.Cluster, writer workload.Writer, write func() error) error {
	start := time.Now()
	err := write()
	cluster.NoteWrite(writer, time.Since(start), err)
	return err
}

// observeClusterSet sets the gauges of the ClusterSet key from its sync:
// st is the status it wrote, refused the selected Clusters that are not
// members, and the rest what clusterSetStatus was given. Each member
// counts in the first state its status entry tells. An export whose
// import this sync finds written into every member is timed.
func (m *Metrics) observeClusterSet(key string, st xccv1alpha1.ClusterSetStatus, refused int, members []setMember,
	reads map[string]memberRead, agg aggregate.Result, written memberWrites) {
	m.ClusterSetReady.WithLabelValues(key).Set(oneIf(meta.IsStatusConditionTrue(st.Conditions, xccv1alpha1.ConditionReady)))
	states := map[string]int{memberOK: 0, memberUnreachable: 0, memberWriteFailed: 0, memberWriting: 0, memberRefused: refused}
	for _, mb := range members {
		switch {
		case mb.cluster == nil || mb.cluster.Unreachable() != "" || mb.cluster.CutOff() != "" || !reads[mb.ClusterID].synced:
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
