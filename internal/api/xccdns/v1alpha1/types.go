package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, version and resource of ClusterSet. The controller reads and
// writes it through the dynamic client, as GatewayDNS, so no generated
// clientset is needed.
var (
	SchemeGroupVersion = schema.GroupVersion{Group: "xcc-dns.io", Version: "v1alpha1"}
	ClusterSetResource = SchemeGroupVersion.WithResource("clustersets")
	ClusterSetKind     = SchemeGroupVersion.WithKind("ClusterSet")
)

// Condition types of a ClusterSet.
const (
	// ConditionReady is True when every member's imports are written in
	// every reachable member, and False with the reason while they are not.
	ConditionReady = "Ready"
	// ReasonAPIDiscoveryFailed is the Ready reason of every ClusterSet
	// and GatewayDNS while the API discovery at the controller's start
	// fails: nothing is reconciled until it answers; the message holds
	// its last error.
	ReasonAPIDiscoveryFailed = "APIDiscoveryFailed"
)

// MemberReason says whether a selected Cluster takes part in the
// clusterset, and why not. A Cluster refused for any reason exports
// nothing and receives no import.
type MemberReason string

const (
	// ReasonMember: the Cluster takes part, under its cluster id.
	ReasonMember MemberReason = "Member"
	// ReasonConflict: an older ClusterSet of the namespace selects the
	// Cluster too and has it (a Cluster is in one clusterset at a time).
	ReasonConflict MemberReason = "Conflict"
	// ReasonNotInstalled: the workload chart is not installed in the
	// Cluster (its slice namespace does not exist).
	ReasonNotInstalled MemberReason = "NotInstalled"
	// ReasonInvalidClusterID: the Cluster's id (its ClusterProperty
	// cluster.clusterset.k8s.io, else its name) is not one DNS label, or
	// is "any". The id is refused, never rewritten.
	ReasonInvalidClusterID MemberReason = "InvalidClusterID"
	// ReasonClusterIDConflict: an older member has the same cluster id.
	ReasonClusterIDConflict MemberReason = "ClusterIDConflict"
	// ReasonSharedAPIServer: another Cluster, of an older ClusterSet (or
	// of this one, first by name), reaches the same API server and slice
	// namespace and is the member there; two writers of one API server
	// would each delete the other's imports.
	ReasonSharedAPIServer MemberReason = "SharedAPIServer"
)

// MaxMemberStatuses bounds status.clusters: the ClusterSet is one etcd
// value, as a GatewayDNS is.
const MaxMemberStatuses = 1000

// ClusterSetSpec is what the operator asks for.
type ClusterSetSpec struct {
	// ClusterSelector selects the Cluster API Clusters, in the namespace
	// of this ClusterSet only, that form the clusterset. An empty selector
	// selects every Cluster of the namespace. A Cluster selected by two
	// ClusterSets belongs to the older (creationTimestamp, then name).
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`
	// Networks, when set, lets members in networks that do not route to
	// each other import each other's exports through the exporter's
	// east-west Gateway. A member's network is the label
	// xcc-dns.io/network of its Cluster (LabelNetwork); unset, every
	// member is in one network and gets every source's pod addresses.
	// +optional
	Networks *NetworksSpec `json:"networks,omitempty"`
}

// LabelNetwork on a Cluster API Cluster names its network: members of
// one network reach each other's pods, members of two only through the
// exporter's east-west gateway. A Cluster without it is in network "".
const LabelNetwork = "xcc-dns.io/network"

// NetworksSpec names the east-west Gateway the operator runs in every
// member that exports across networks, and its listener ports.
type NetworksSpec struct {
	// Gateway is the operator's Gateway API Gateway, the same namespace
	// and name in every member. It must admit the controller's
	// ListenerSets from the exporting namespaces
	// (spec.allowedListeners.namespaces).
	Gateway GatewayRef `json:"gateway"`
	// HTTPPort is the listener port of every export's HTTP ports (an
	// appProtocol of http or kubernetes.io/h2c), routed by Host.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=80
	// +optional
	HTTPPort int32 `json:"httpPort,omitempty"`
	// TLSPort is the listener port of every export's TLS ports (an
	// appProtocol of tls or https), passed through by SNI.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=443
	// +optional
	TLSPort int32 `json:"tlsPort,omitempty"`
	// TCPPorts is the range from which each other exported TCP port gets
	// a listener port of its own, kept for as long as its listener lives.
	TCPPorts PortRange `json:"tcpPorts"`
}

// GatewayRef names a Gateway in each member.
type GatewayRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// PortRange is a range of ports, both ends in.
// +kubebuilder:validation:XValidation:rule="self.first <= self.last",message="first must not be above last"
type PortRange struct {
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	First int32 `json:"first"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Last int32 `json:"last"`
}

// MemberStatus reports one selected Cluster: its cluster id, or why it
// takes no part.
type MemberStatus struct {
	// Name of the Cluster.
	Name string `json:"name"`
	// ClusterID is the id the Cluster has in the clusterset (the value of
	// its ClusterProperty cluster.clusterset.k8s.io, else its name), or
	// the one it asked for when that is another member's. Unset for the
	// other reasons; an invalid id is quoted in the message.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// Reason is Member, or why not: Conflict (an older ClusterSet has
	// it), NotInstalled, InvalidClusterID, ClusterIDConflict,
	// SharedAPIServer.
	Reason MemberReason `json:"reason"`
	// Message says what is wrong in words: the refused value, the older
	// ClusterSet, the Cluster that owns the id.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterSetStatus is what the controller observed and did.
type ClusterSetStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SelectedClusters counts the Clusters the selector matches.
	// +optional
	SelectedClusters int32 `json:"selectedClusters"`
	// Members counts the selected Clusters that take part (reason Member).
	// +optional
	Members int32 `json:"members"`
	// Exports counts the ServiceExports of the members that are valid.
	// +optional
	Exports int32 `json:"exports"`
	// Imports counts the namespace/names imported into the members.
	// +optional
	Imports int32 `json:"imports"`
	// Clusters has one entry per selected Cluster, at most 1000: those
	// refused first, then members, each by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []MemberStatus `json:"clusters,omitempty"`
	// OmittedClusters counts the selected Clusters left out of Clusters.
	// +optional
	OmittedClusters int32 `json:"omittedClusters,omitempty"`
}

// ClusterSet makes the Cluster API Clusters it selects, in its own
// namespace, one Multi-Cluster Services clusterset: a ServiceExport in
// one member is imported into every member.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clustersets,scope=Namespaced
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.members`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selectedClusters`,priority=1
// +kubebuilder:printcolumn:name="Imports",type=integer,JSONPath=`.status.imports`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSetSpec   `json:"spec,omitempty"`
	Status ClusterSetStatus `json:"status,omitempty"`
}

// ClusterSetList is a list of ClusterSet.
//
// +kubebuilder:object:root=true
type ClusterSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSet `json:"items"`
}

// AddToScheme registers ClusterSet with a scheme (used by tests and fakes).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &ClusterSet{}, &ClusterSetList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
