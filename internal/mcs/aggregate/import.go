package aggregate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// aggregateOne computes the import of one namespace/name (nil when no
// export of it is valid) and the status of each of its exports, sorted
// by cluster id.
func aggregateOne(k Key, group []Export) (*Import, []ExportStatus) {
	slices.SortFunc(group, comparePrecedence)
	var valid []Export
	var statuses []ExportStatus
	for _, e := range group {
		if reason, msg := validity(e); reason != ReasonValid {
			statuses = append(statuses, invalidStatus(e, reason, msg))
			continue
		}
		valid = append(valid, e)
	}
	var imp *Import
	if len(valid) > 0 {
		ports, lost := mergePorts(valid)
		imp = newImport(k, valid, ports)
		statuses = append(statuses, validStatuses(imp, valid, ownConflicts(valid, lost))...)
	}
	slices.SortFunc(statuses, func(a, b ExportStatus) int { return strings.Compare(a.Cluster, b.Cluster) })
	return imp, statuses
}

// newImport takes the global fields from the export with precedence
// (valid[0]); ports are the merged ports of all.
func newImport(k Key, valid []Export, ports []Port) *Import {
	w := valid[0].Service
	imp := &Import{
		Key:                   k,
		Type:                  importType(w),
		SessionAffinity:       w.SessionAffinity,
		InternalTrafficPolicy: w.InternalTrafficPolicy,
		TrafficDistribution:   w.TrafficDistribution,
		Labels:                maps.Clone(valid[0].Labels),
		Annotations:           maps.Clone(valid[0].Annotations),
		Winner:                valid[0].Cluster,
	}
	// A copy: the import must not share memory with its input.
	if c := w.SessionAffinityConfig; c != nil {
		imp.SessionAffinityConfig = &SessionAffinityConfig{TimeoutSeconds: c.TimeoutSeconds}
	}
	imp.Ports = ports
	imp.Served = map[string][]Port{}
	imp.Created = map[string]time.Time{}
	for _, e := range valid {
		imp.Clusters = append(imp.Clusters, e.Cluster)
		imp.Served[e.Cluster] = served(ports, e.Service.Ports)
		imp.Created[e.Cluster] = e.Since()
	}
	slices.Sort(imp.Clusters)
	return imp
}

// served are the ports of an import that a Service declares alike: name,
// protocol and number (appProtocol is the import's).
func served(ports, own []Port) []Port {
	var out []Port
	for _, p := range ports {
		if slices.ContainsFunc(own, func(o Port) bool { return o.Name == p.Name && o.Protocol == p.Protocol && o.Port == p.Port }) {
			out = append(out, p)
		}
	}
	return out
}

// ownConflicts lists, per valid export, the fields in which its values
// lost to those of an export with precedence; lostPorts is mergePorts'.
func ownConflicts(valid []Export, lostPorts map[int]bool) [][]Field {
	w := valid[0].Service
	own := make([][]Field, len(valid))
	for i, e := range valid {
		s := e.Service
		differs := map[Field]bool{
			FieldType:                  importType(s) != importType(w),
			FieldPorts:                 lostPorts[i] || !samePorts(s.Ports, w.Ports),
			FieldSessionAffinity:       s.SessionAffinity != w.SessionAffinity,
			FieldSessionAffinityConfig: !sameAffinityConfig(s.SessionAffinityConfig, w.SessionAffinityConfig),
			FieldInternalTrafficPolicy: s.InternalTrafficPolicy != w.InternalTrafficPolicy,
			FieldTrafficDistribution:   s.TrafficDistribution != w.TrafficDistribution,
			FieldExportedLabels:        !maps.Equal(e.Labels, valid[0].Labels),
			FieldExportedAnnotations:   !maps.Equal(e.Annotations, valid[0].Annotations),
		}
		for _, f := range fieldOrder {
			if differs[f] {
				own[i] = append(own[i], f)
			}
		}
	}
	return own
}

// samePorts reports whether two exports declare the same ports, in any
// order. The KEP raises PortConflict on a union too: an export that adds
// a port the oldest does not declare differs from it.
func samePorts(a, b []Port) bool {
	return slices.Equal(slices.SortedFunc(slices.Values(a), comparePorts), slices.SortedFunc(slices.Values(b), comparePorts))
}

func sameAffinityConfig(a, b *SessionAffinityConfig) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// validStatuses gives each valid export its conditions. Conflict is True
// on every one of them when any conflicts (the KEP's rule): an export
// whose values lost names its own fields, the others every field.
func validStatuses(imp *Import, valid []Export, own [][]Field) []ExportStatus {
	all := map[Field]bool{}
	var losers []string
	for i, fields := range own {
		for _, f := range fields {
			all[f] = true
		}
		if len(fields) > 0 {
			losers = append(losers, valid[i].Cluster)
		}
	}
	var allFields []Field
	for _, f := range fieldOrder {
		if all[f] {
			allFields = append(allFields, f)
		}
	}
	statuses := make([]ExportStatus, 0, len(valid))
	for i, e := range valid {
		conflict := Condition{Type: ConditionConflict, Status: StatusFalse, Reason: ReasonNoConflicts,
			Message: "every export of the service agrees"}
		fields := own[i]
		switch {
		case len(fields) > 0:
			conflict = conflictCondition(fields, fmt.Sprintf("%s of this export differ from those of the oldest export, of cluster %s, which the import uses", names(fields), imp.Winner))
		case len(allFields) > 0:
			fields = allFields
			conflict = conflictCondition(fields, fmt.Sprintf("%s of the exports of cluster(s) %s differ; the import uses those of the oldest export, of cluster %s", names(fields), strings.Join(losers, ", "), imp.Winner))
		}
		statuses = append(statuses, ExportStatus{
			Cluster: e.Cluster,
			Key:     e.key(),
			Conditions: []Condition{
				{Type: ConditionValid, Status: StatusTrue, Reason: ReasonValid, Message: withNotes("the Service can be exported", e.left)},
				conflict,
				{Type: ConditionReady, Status: StatusTrue, Reason: ReasonExported,
					Message: fmt.Sprintf("part of the import %s/%s", e.Namespace, e.Name)},
			},
			ConflictFields: fields,
		})
	}
	return statuses
}

func conflictCondition(fields []Field, msg string) Condition {
	return Condition{Type: ConditionConflict, Status: StatusTrue, Reason: fieldReasons[fields[0]], Message: msg}
}

func names(fields []Field) string {
	s := make([]string, len(fields))
	for i, f := range fields {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// invalidStatus: an invalid export is neither in conflict nor ready; it
// takes no part in the import.
func invalidStatus(e Export, reason Reason, msg string) ExportStatus {
	return ExportStatus{
		Cluster: e.Cluster,
		Key:     e.key(),
		Conditions: []Condition{
			{Type: ConditionValid, Status: StatusFalse, Reason: reason, Message: msg},
			{Type: ConditionConflict, Status: StatusFalse, Reason: ReasonNotValid, Message: "an invalid export takes no part in conflicts"},
			{Type: ConditionReady, Status: StatusFalse, Reason: ReasonNotValid, Message: "an invalid export takes no part in the import"},
		},
	}
}
