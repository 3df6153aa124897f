package aggregate

import (
	"maps"
	"slices"
	"time"
)

// ServiceType is a Service's spec.type. Only ExternalName changes what an
// export is: a NodePort or LoadBalancer Service is exported as the
// ClusterIP Service it also is.
type ServiceType string

// Service types, as the Kubernetes API spells them.
const (
	ServiceTypeClusterIP    ServiceType = "ClusterIP"
	ServiceTypeNodePort     ServiceType = "NodePort"
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
	ServiceTypeExternalName ServiceType = "ExternalName"
)

// ClusterIPNone is spec.clusterIP of a headless Service.
const ClusterIPNone = "None"

// DefaultProtocol is the protocol of a port that names none, as the API
// server defaults it; applied here so an input that skipped defaulting
// does not conflict with one that did not.
const DefaultProtocol = "TCP"

// ImportType is a ServiceImport's spec.type.
type ImportType string

// Import types of the MCS API.
const (
	ImportClusterSetIP ImportType = "ClusterSetIP"
	ImportHeadless     ImportType = "Headless"
)

// Port is one port of a Service as an import sees it: the fields a
// client uses. targetPort and nodePort stay in each member.
type Port struct {
	Name        string
	Protocol    string
	Port        int32
	AppProtocol string
}

// SessionAffinityConfig is the ClientIP config of a Service's
// sessionAffinity; nil when the Service has none.
type SessionAffinityConfig struct {
	TimeoutSeconds int32
}

// Service is what the aggregator reads of an exported Service.
type Service struct {
	Type                  ServiceType
	ClusterIP             string
	Ports                 []Port
	SessionAffinity       string
	SessionAffinityConfig *SessionAffinityConfig
	InternalTrafficPolicy string
	TrafficDistribution   string
}

// Export is one ServiceExport as seen in one member: its cluster id,
// namespace and name, its creation time and its Service (nil when the
// member has no Service of that name).
type Export struct {
	Cluster   string
	Namespace string
	Name      string
	// Created is the creationTimestamp the member's API server reports:
	// the member's word, which it can set to any time.
	Created time.Time
	// Seen is the earliest time the controller itself vouches for: when
	// it first saw the export, or, for one it found in its first read of
	// the member, the management cluster's creation time of the member's
	// Cluster. Precedence never ranks the export older (Since); zero
	// bounds nothing.
	Seen    time.Time
	Service *Service
	// OverLimit: the member exports more than it may, and this export is
	// one of the newest past the limit; it is invalid.
	OverLimit bool
	// Labels and Annotations are the ServiceExport's spec.exportedLabels
	// and spec.exportedAnnotations, as read: the aggregator keeps those
	// an import may carry (exportedMetadata).
	Labels      map[string]string
	Annotations map[string]string
	// Cut is how many entries of both ReadBound cut before they were read.
	Cut int
	// left are the notes on entries of Labels and Annotations left out.
	left []string
}

// Key is the namespace/name that namespace sameness makes one service in
// every member.
type Key struct {
	Namespace string
	Name      string
}

func (e Export) key() Key { return Key{Namespace: e.Namespace, Name: e.Name} }

// Since is the time precedence ranks e by: its creation time as reported,
// but no earlier than Seen, so a member cannot make an export older than
// the controller saw it by claiming an old creationTimestamp. A time in
// the future is kept: it only makes the export younger.
func (e Export) Since() time.Time {
	if e.Seen.After(e.Created) {
		return e.Seen
	}
	return e.Created
}

// Import is what every member gets for one namespace/name that at least
// one valid export names.
type Import struct {
	Key
	Type                  ImportType
	Ports                 []Port
	SessionAffinity       string
	SessionAffinityConfig *SessionAffinityConfig
	InternalTrafficPolicy string
	TrafficDistribution   string
	// Labels and Annotations are the exported ones of the export with
	// precedence, to be set on the ServiceImport.
	Labels      map[string]string
	Annotations map[string]string
	// Served are, per cluster id of Clusters, the ports of the import
	// that the cluster's Service declares alike (name, protocol and
	// number): its endpoints take the traffic of those ports only, so a
	// client of a port reaches only Services that expose it (the
	// conformance suite's StrictPortConflict).
	Served map[string][]Port
	// Created are, per cluster id of Clusters, the time its export is
	// ranked by (Export.Since): a member's caps in the others keep its
	// oldest exports.
	Created map[string]time.Time
	// Winner is the cluster id of the export with precedence.
	Winner string
	// Clusters are the cluster ids of the valid exports, sorted.
	Clusters []string
}

// ConditionType is the type of a ServiceExport condition.
type ConditionType string

// ServiceExport conditions of the MCS API.
const (
	ConditionValid    ConditionType = "Valid"
	ConditionConflict ConditionType = "Conflict"
	ConditionReady    ConditionType = "Ready"
	// ConditionCrossNetwork is the controller's, not the aggregator's:
	// whether members of other networks reach the export through its
	// member's east-west gateway (objects.Networks).
	ConditionCrossNetwork ConditionType = "CrossNetwork"
)

// ConditionStatus is a condition's status.
type ConditionStatus string

// Condition statuses; the aggregator always knows, so never Unknown.
const (
	StatusTrue  ConditionStatus = "True"
	StatusFalse ConditionStatus = "False"
)

// Condition is one condition of an export: type, status, reason, message.
type Condition struct {
	Type    ConditionType
	Status  ConditionStatus
	Reason  Reason
	Message string
}

// ExportStatus is what the aggregator says of one export: its conditions
// in the order Valid, Conflict, Ready, and the fields it conflicts in.
type ExportStatus struct {
	Cluster string
	Key
	Conditions     []Condition
	ConflictFields []Field
}

// Result is the output of Aggregate: imports sorted by namespace/name,
// export statuses sorted by namespace/name then cluster id.
type Result struct {
	Imports []Import
	Exports []ExportStatus
}

// Equal reports whether i and o are the same import in every field. It
// is what a memo of what was built from an import compares, once per
// import and member at every write: several times cheaper than
// reflect.DeepEqual.
func (i Import) Equal(o Import) bool {
	return i.Key == o.Key && i.Type == o.Type && i.SessionAffinity == o.SessionAffinity &&
		i.InternalTrafficPolicy == o.InternalTrafficPolicy && i.TrafficDistribution == o.TrafficDistribution &&
		i.Winner == o.Winner && slices.Equal(i.Ports, o.Ports) && slices.Equal(i.Clusters, o.Clusters) &&
		(i.SessionAffinityConfig == nil) == (o.SessionAffinityConfig == nil) &&
		(i.SessionAffinityConfig == nil || *i.SessionAffinityConfig == *o.SessionAffinityConfig) &&
		maps.Equal(i.Labels, o.Labels) && maps.Equal(i.Annotations, o.Annotations) &&
		maps.EqualFunc(i.Served, o.Served, slices.Equal) && maps.EqualFunc(i.Created, o.Created, time.Time.Equal)
}
