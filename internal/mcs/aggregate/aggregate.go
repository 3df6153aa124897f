package aggregate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Field names a field of a Service in which exports can conflict, as the
// Service API spells it.
type Field string

// The fields a conflict names.
const (
	FieldType                  Field = "type"
	FieldPorts                 Field = "ports"
	FieldSessionAffinity       Field = "sessionAffinity"
	FieldSessionAffinityConfig Field = "sessionAffinityConfig"
	FieldInternalTrafficPolicy Field = "internalTrafficPolicy"
	FieldTrafficDistribution   Field = "trafficDistribution"
	// The ServiceExport's own fields, not the Service's.
	FieldExportedLabels      Field = "exportedLabels"
	FieldExportedAnnotations Field = "exportedAnnotations"
)

// fieldOrder is the order fields are named in, and the reason of a
// conflict is that of its first field: type first, as it changes most
// for a client (a virtual IP or none).
var fieldOrder = []Field{
	FieldType, FieldPorts, FieldSessionAffinity, FieldSessionAffinityConfig,
	FieldInternalTrafficPolicy, FieldTrafficDistribution, FieldExportedLabels, FieldExportedAnnotations,
}

var fieldReasons = map[Field]Reason{
	FieldType:                  ReasonTypeConflict,
	FieldPorts:                 ReasonPortConflict,
	FieldSessionAffinity:       ReasonSessionAffinityConflict,
	FieldSessionAffinityConfig: ReasonSessionAffinityConfigConflict,
	FieldInternalTrafficPolicy: ReasonInternalTrafficPolicyConflict,
	FieldTrafficDistribution:   ReasonTrafficDistributionConflict,
	FieldExportedLabels:        ReasonLabelsConflict,
	FieldExportedAnnotations:   ReasonAnnotationsConflict,
}

// Defaults the API server gives a Service, applied to the input so that a
// field left empty does not conflict with the same field defaulted.
const (
	DefaultSessionAffinity        = "None"
	SessionAffinityClientIP       = "ClientIP"
	DefaultClientIPTimeoutSeconds = 10800
	DefaultInternalTrafficPolicy  = "Cluster"
)

// Errors of an input no member can produce; the controller has a bug.
var (
	ErrIncompleteExport = errors.New("export without cluster id, namespace or name")
	ErrDuplicateExport  = errors.New("export seen twice in one cluster")
)

// Aggregate computes one import per namespace/name that has at least one
// valid export, and the conditions of every export. The order of exports
// does not matter; the output is sorted (Result).
func Aggregate(exports []Export) (Result, error) {
	groups := map[Key][]Export{}
	type id struct {
		cluster string
		key     Key
	}
	seen := map[id]bool{}
	for _, e := range exports {
		if e.Cluster == "" || e.Namespace == "" || e.Name == "" {
			return Result{}, fmt.Errorf("aggregate %q %s/%s: %w", e.Cluster, e.Namespace, e.Name, ErrIncompleteExport)
		}
		k := id{e.Cluster, e.key()}
		if seen[k] {
			return Result{}, fmt.Errorf("aggregate %s/%s of cluster %s: %w", e.Namespace, e.Name, e.Cluster, ErrDuplicateExport)
		}
		seen[k] = true
		groups[e.key()] = append(groups[e.key()], normalize(e))
	}
	keys := make([]Key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, CompareKeys)
	var out Result
	for _, k := range keys {
		imp, statuses := aggregateOne(k, groups[k])
		if imp != nil {
			out.Imports = append(out.Imports, *imp)
		}
		out.Exports = append(out.Exports, statuses...)
	}
	return out, nil
}

// CompareKeys orders keys by namespace, then name.
func CompareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// comparePrecedence orders exports oldest first (Since: never older than
// the controller saw them); exports of the same instant (timestamps have
// one-second resolution in the API) by cluster id, which is unique in a
// clusterset.
func comparePrecedence(a, b Export) int {
	return cmp.Or(a.Since().Compare(b.Since()), cmp.Compare(a.Cluster, b.Cluster))
}

// normalize applies the API server's defaults to a copy of the export's
// Service, so comparing two Services compares what the API holds, and
// keeps of its exported labels and annotations those an import may carry.
func normalize(e Export) Export {
	var labelNotes, annotationNotes []string
	e.Labels, labelNotes = exportedMetadata(e.Labels, true)
	e.Annotations, annotationNotes = exportedMetadata(e.Annotations, false)
	e.left = append(labelNotes, annotationNotes...)
	if e.Cut > 0 {
		e.left = append(e.left, fmt.Sprintf("%d entries of exportedLabels and exportedAnnotations not read: more than %d of either, or %d bytes",
			e.Cut, 2*MaxExportedEntries, 2*MaxExportedAnnotationBytes))
	}
	if e.Service == nil {
		return e
	}
	s := *e.Service
	s.Ports = slices.Clone(s.Ports)
	for i := range s.Ports {
		if s.Ports[i].Protocol == "" {
			s.Ports[i].Protocol = DefaultProtocol
		}
	}
	if s.SessionAffinity == "" {
		s.SessionAffinity = DefaultSessionAffinity
	}
	if s.SessionAffinity == SessionAffinityClientIP && s.SessionAffinityConfig == nil {
		s.SessionAffinityConfig = &SessionAffinityConfig{TimeoutSeconds: DefaultClientIPTimeoutSeconds}
	}
	if s.InternalTrafficPolicy == "" {
		s.InternalTrafficPolicy = DefaultInternalTrafficPolicy
	}
	e.Service = &s
	return e
}

// validity says whether an export can take part in an import, and why not.
func validity(e Export) (Reason, string) {
	switch {
	case e.OverLimit:
		return ReasonTooManyExports, fmt.Sprintf("cluster %s exports more valid Services than a member may; its namespaces share the limit equally, oldest first, and this export is past the share of %s", e.Cluster, e.Namespace)
	case e.Service == nil:
		return ReasonNoService, fmt.Sprintf("no Service %s/%s in cluster %s", e.Namespace, e.Name, e.Cluster)
	case e.Service.Type == ServiceTypeExternalName:
		return ReasonInvalidServiceType, "a Service of type ExternalName cannot be exported"
	case len(e.Service.Ports) == 0:
		return ReasonNoServicePorts, "a Service without ports cannot be exported"
	}
	return ReasonValid, "the Service can be exported"
}

func importType(s *Service) ImportType {
	if s.ClusterIP == ClusterIPNone {
		return ImportHeadless
	}
	return ImportClusterSetIP
}
