package aggregate

// Reason is the one word of a condition's reason field: why the
// condition has its status. The words of an invalid Service and of a
// conflict are those of sigs.k8s.io/mcs-api, so tools that read other
// implementations' conditions read these too.
type Reason string

// Reasons of the Valid condition.
const (
	// ReasonValid: the Service can be exported.
	ReasonValid Reason = "Valid"
	// ReasonNoService: the ServiceExport names no Service in its member.
	ReasonNoService Reason = "NoService"
	// ReasonInvalidServiceType: an ExternalName Service has no endpoints
	// and no cluster IP to share; the KEP forbids exporting it.
	ReasonInvalidServiceType Reason = "InvalidServiceType"
	// ReasonNoServicePorts: a Service without ports would give an import
	// nothing to serve at its ClusterSetIP and no SRV records.
	ReasonNoServicePorts Reason = "NoServicePorts"
	// ReasonTooManyExports: the member exports more Services than the
	// operator allows one member; its newest exports are refused, so one
	// member cannot crowd the others out of every member's imports.
	ReasonTooManyExports Reason = "TooManyExports"
)

// Reasons of the Conflict condition. When an export conflicts in several
// fields the reason is that of the first in fieldOrder, and the message
// and ExportStatus.ConflictFields name them all.
const (
	ReasonNoConflicts                   Reason = "NoConflicts"
	ReasonTypeConflict                  Reason = "TypeConflict"
	ReasonPortConflict                  Reason = "PortConflict"
	ReasonSessionAffinityConflict       Reason = "SessionAffinityConflict"
	ReasonSessionAffinityConfigConflict Reason = "SessionAffinityConfigConflict"
	ReasonInternalTrafficPolicyConflict Reason = "InternalTrafficPolicyConflict"
	ReasonTrafficDistributionConflict   Reason = "TrafficDistributionConflict"
	ReasonLabelsConflict                Reason = "LabelsConflict"
	ReasonAnnotationsConflict           Reason = "AnnotationsConflict"
)

// Reasons of the Ready condition.
const (
	// ReasonExported: the export takes part in its import.
	ReasonExported Reason = "Exported"
)

// ReasonNotValid is the reason of Ready and Conflict on an invalid
// export: it takes no part in the import, so neither can be True.
const ReasonNotValid Reason = "NotValid"
