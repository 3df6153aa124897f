package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, version and resource of GatewayDNS. The controller reads and writes
// GatewayDNS through the dynamic client with GroupVersionResource, so no
// generated clientset is needed.
var (
	SchemeGroupVersion = schema.GroupVersion{Group: "connectivity.tanzu.vmware.com", Version: "v1alpha1"}
	GatewayDNSResource = SchemeGroupVersion.WithResource("gatewaydns")
	GatewayDNSKind     = SchemeGroupVersion.WithKind("GatewayDNS")
)

// ResolutionType says which addresses of the Service a GatewayDNS
// publishes: what its names resolve to.
// +kubebuilder:validation:Enum=loadBalancer;headless
type ResolutionType string

const (
	// ResolutionTypeLoadBalancer publishes status.loadBalancer.ingress of
	// the gateway Service: its IPs as A/AAAA and its hostnames as CNAME.
	ResolutionTypeLoadBalancer ResolutionType = "loadBalancer"
	// ResolutionTypeHeadless publishes the ready pod addresses of a
	// headless Service (clusterIP None), as the cluster's own DNS resolves
	// it, under <name>.<namespace>.services.<domain>: across the selected
	// clusters by the locality policy, per cluster, per pod, and SRV
	// records of its named ports. Only useful where pod addresses are
	// routable between the clusters.
	ResolutionTypeHeadless ResolutionType = "headless"
)

// Bounds of spec.ttl. Below MinTTL a resolver would hammer the DNS server;
// above MaxTTL a moved gateway would stay wrong in caches for too long.
const (
	MinTTL = 5
	MaxTTL = 3600
)

// DefaultGatewaysTTL is the TTL in seconds of the multi-cluster name
// *.<gatewaydns>.<ns>.gateways.<domain> when spec.gatewaysTTL is unset:
// a gateway that goes unhealthy leaves every answer within detection +
// propagation + this TTL, since the caches on the way (ours and the
// cluster DNS's) count the one TTL down.
const DefaultGatewaysTTL = MinTTL

// MaxFailoverOrder bounds spec.locality.failoverOrder.
const MaxFailoverOrder = 100

// LocalityPolicy says which healthy gateways the DNS of each cluster
// answers for the multi-cluster name.
// +kubebuilder:validation:Enum=All;Local;Failover
type LocalityPolicy string

const (
	// LocalityAll answers every healthy gateway, in every cluster alike.
	LocalityAll LocalityPolicy = "All"
	// LocalityLocal answers, in each cluster, that cluster's own gateway
	// while it is healthy, and every healthy gateway otherwise.
	LocalityLocal LocalityPolicy = "Local"
	// LocalityFailover answers the first healthy gateway of failoverOrder,
	// in every cluster alike.
	LocalityFailover LocalityPolicy = "Failover"
)

// Locality says how the multi-cluster name picks among healthy gateways.
// +kubebuilder:validation:XValidation:rule="(has(self.policy) && self.policy == 'Failover') == (has(self.failoverOrder) && size(self.failoverOrder) > 0)",message="failoverOrder is required with policy Failover and only allowed with it"
type Locality struct {
	// Policy is All (every healthy gateway), Local (the asking cluster's
	// own gateway while it is healthy, else every healthy one) or Failover
	// (the first healthy gateway of failoverOrder; when none of those is
	// healthy, every healthy gateway it does not list). When no selected
	// cluster's gateway is healthy, every published gateway is answered.
	// +kubebuilder:default=All
	// +optional
	Policy LocalityPolicy `json:"policy,omitempty"`
	// FailoverOrder lists Cluster names of this namespace, first choice
	// first. Only with policy Failover.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	FailoverOrder []string `json:"failoverOrder,omitempty"`
}

// Health reasons of a selected Cluster's gateway (ClusterStatus.HealthReason).
const (
	HealthReasonHealthy             = "Healthy"
	HealthReasonClusterDeleting     = "ClusterDeleting"
	HealthReasonClusterNotAvailable = "ClusterNotAvailable"
	HealthReasonNoAddress           = "NoAddress"
	HealthReasonNoReadyEndpoints    = "NoReadyEndpoints"
)

// Condition types and reasons of a GatewayDNS.
const (
	// ConditionReady is True when every selected cluster that this
	// GatewayDNS owns has its names published in every opted-in cluster.
	ConditionReady = "Ready"
	// ConditionConflict is True when an older GatewayDNS in the same
	// namespace selects some of the same clusters and so owns their names.
	ConditionConflict = "Conflict"
)

// Names opts a GatewayDNS in to the names Services claim with the
// annotation connectivity.tanzu.vmware.com/fqdn.
type Names struct {
	// Enabled publishes, for every selected cluster, the load-balancer
	// addresses of each of its LoadBalancer Services annotated
	// connectivity.tanzu.vmware.com/fqdn: <name>, under that name: a
	// single label is <label>.<namespace>.names.<domain>; a full name must
	// lie one label below a suffix the operator granted this namespace.
	// The same name from several clusters is one name, with the health
	// and locality rules of the gateways name. It needs list and watch on
	// Services of every namespace in each workload cluster.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// MaxNameStatuses bounds status.names: the GatewayDNS is one etcd value.
const MaxNameStatuses = 200

// NameStatus reports one name claimed with the fqdn annotation.
type NameStatus struct {
	// Name is the published name, or the annotation's value when it is
	// not one.
	Name string `json:"name"`
	// Reason is Published, NameRefused (outside the namespace's grants),
	// InvalidName (not a name that can be claimed) or Conflict (an older
	// GatewayDNS of the namespace publishes it).
	Reason string `json:"reason"`
	// Message says what is wrong in words.
	// +optional
	Message string `json:"message,omitempty"`
	// Sources are the Services that claim it, as <cluster>/<namespace>/<service>
	// (at most 10 listed).
	// +optional
	Sources []string `json:"sources,omitempty"`
	// HealthySources counts the sources answered while healthy.
	// +optional
	HealthySources int32 `json:"healthySources,omitempty"`
}

// GatewayDNSSpec is what the user asks for.
// +kubebuilder:validation:XValidation:rule="!has(self.resolutionType) || self.resolutionType != 'headless' || !has(self.gatewaysTTL)",message="gatewaysTTL is for the gateways name of resolutionType loadBalancer; a headless export's names all use ttl (default 5 s)"
// +kubebuilder:validation:XValidation:rule="!has(self.resolutionType) || self.resolutionType != 'headless' || !has(self.names) || !self.names.enabled",message="names are published by a GatewayDNS of resolutionType loadBalancer"
type GatewayDNSSpec struct {
	// ClusterSelector selects the Cluster API Clusters, in the namespace of
	// this GatewayDNS, whose gateway Service gets the name
	// *.gateway.<cluster>.<namespace>.clusters.<domain>.
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`

	// Service is the Service in each selected workload cluster, as
	// namespace/name: the gateway (for example projectcontour/envoy) or,
	// with resolutionType headless, the headless Service to export.
	// +kubebuilder:validation:MaxLength=127
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	Service string `json:"service"`

	// ResolutionType says which addresses of the Service are published:
	// loadBalancer (the default), the load-balancer addresses of a gateway
	// Service; headless, the ready pod addresses of a headless Service.
	// +kubebuilder:default=loadBalancer
	// +optional
	ResolutionType ResolutionType `json:"resolutionType,omitempty"`

	// TTL in seconds of the published records; unset, the DNS server's
	// default (30 s), and 5 s for resolutionType headless, whose pods come
	// and go more often than load balancers.
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=3600
	// +optional
	TTL *int32 `json:"ttl,omitempty"`

	// Locality says which healthy gateways the multi-cluster name
	// *.<name>.<namespace>.gateways.<domain> answers, per asking cluster.
	// Unset: policy All.
	// +optional
	Locality *Locality `json:"locality,omitempty"`

	// GatewaysTTL in seconds of the multi-cluster name; unset, 5 s, chosen
	// for failover: a gateway that goes unhealthy leaves the answers of
	// every cluster's DNS within detection + propagation + this TTL.
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=3600
	// +optional
	GatewaysTTL *int32 `json:"gatewaysTTL,omitempty"`

	// Names publishes the names LoadBalancer Services of the selected
	// clusters claim with the annotation connectivity.tanzu.vmware.com/fqdn.
	// Unset: none (the controller then watches no Service but the gateway).
	// +optional
	Names *Names `json:"names,omitempty"`
}

// ClusterStatus reports one selected Cluster: the addresses published for
// its gateway, or the reason there are none.
type ClusterStatus struct {
	// Name of the Cluster.
	Name string `json:"name"`
	// Ready is true when the gateway name of this cluster is published:
	// written to every target.
	Ready bool `json:"ready"`
	// Addresses published for the gateway name (IPs and hostnames).
	// +optional
	Addresses []string `json:"addresses,omitempty"`
	// Pods counts the ready pods published for this cluster by a
	// resolutionType headless export (their addresses are in the
	// workload cluster, not here: pods come and go too often for status).
	// +optional
	Pods int32 `json:"pods,omitempty"`
	// APIAddresses published for api.<cluster>... from spec.controlPlaneEndpoint.host.
	// +optional
	APIAddresses []string `json:"apiAddresses,omitempty"`
	// Reason is a CamelCase word for the state of the gateway name
	// (Published, ServiceNotFound, ClusterUnreachable, ...).
	Reason string `json:"reason"`
	// Message says what is wrong in words, and what was refused.
	// +optional
	Message string `json:"message,omitempty"`
	// Healthy is true when this cluster's gateway counts for the
	// multi-cluster name: the Cluster is available and not being deleted,
	// the gateway Service has an address and a ready endpoint.
	// +optional
	Healthy bool `json:"healthy"`
	// HealthReason is Healthy or why not (ClusterDeleting,
	// ClusterNotAvailable, NoAddress, NoReadyEndpoints, ...).
	// +optional
	HealthReason string `json:"healthReason,omitempty"`
	// Answered is true when the DNS of at least one cluster answers this
	// gateway for the multi-cluster name under the locality policy.
	// +optional
	Answered bool `json:"answered"`
	// Since is when this cluster stopped being Ready; it does not move
	// while the cluster stays not Ready, whatever its reason. Unset while
	// Ready.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// TargetStatus reports a target cluster (one of the namespace with the
// slice namespace) that does not hold the latest records of this
// GatewayDNS.
type TargetStatus struct {
	// Name of the Cluster.
	Name string `json:"name"`
	// Reason is WriteFailed (its API server refused the write or did not
	// answer; it is tried again), Writing (a write is still in flight) or
	// TargetUnreachable (its API server has answered no read for a while;
	// its DNS serves the records it last got).
	Reason string `json:"reason"`
	// Message says what failed.
	// +optional
	Message string `json:"message,omitempty"`
	// Since is when the target stopped holding the latest records; it
	// does not move while it keeps failing.
	Since metav1.Time `json:"since"`
}

// GatewayDNSStatus is what the controller observed and did.
type GatewayDNSStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions Ready and Conflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SelectedClusters counts the Clusters the selector matches.
	// +optional
	SelectedClusters int32 `json:"selectedClusters"`
	// ReadyClusters counts the selected Clusters whose gateway name is
	// published: written to every target.
	// +optional
	ReadyClusters int32 `json:"readyClusters"`
	// HealthyClusters counts the selected Clusters whose gateway is
	// healthy, so answered for the multi-cluster name.
	// +optional
	HealthyClusters int32 `json:"healthyClusters"`
	// Clusters has one entry per selected Cluster, sorted by name, at most
	// 1000: those not Ready first, then Ready ones by name. The whole
	// GatewayDNS is one etcd value (1.5 MiB at most by default).
	// +optional
	Clusters []ClusterStatus `json:"clusters,omitempty"`
	// OmittedClusters counts the selected Clusters left out of Clusters.
	// +optional
	OmittedClusters int32 `json:"omittedClusters,omitempty"`
	// Targets has one entry per target cluster that does not hold the
	// latest records, sorted by name, at most 1000; none when every
	// target holds them. While one is listed, no cluster is Ready: its
	// records are not everywhere.
	// +optional
	Targets []TargetStatus `json:"targets,omitempty"`
	// OmittedTargets counts the targets left out of Targets.
	// +optional
	OmittedTargets int32 `json:"omittedTargets,omitempty"`
	// Names has one entry per name claimed with the fqdn annotation
	// (spec.names), at most 200: those not Published first, then by name.
	// +optional
	Names []NameStatus `json:"names,omitempty"`
	// OmittedNames counts the names left out of Names.
	// +optional
	OmittedNames int32 `json:"omittedNames,omitempty"`
}

// GatewayDNS publishes the gateway Service of every selected workload
// cluster under a DNS name that every cluster in the namespace can resolve.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=gatewaydns,scope=Namespaced,shortName=gdns
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.spec.service`
// +kubebuilder:printcolumn:name="Resolution",type=string,JSONPath=`.spec.resolutionType`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyClusters`
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.healthyClusters`
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selectedClusters`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Locality",type=string,JSONPath=`.spec.locality.policy`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="name must be at most 63 characters: it is the kubernetes.io/service-name label of the EndpointSlices"
type GatewayDNS struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewayDNSSpec   `json:"spec,omitempty"`
	Status GatewayDNSStatus `json:"status,omitempty"`
}

// GatewayDNSList is a list of GatewayDNS.
//
// +kubebuilder:object:root=true
type GatewayDNSList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayDNS `json:"items"`
}

// AddToScheme registers GatewayDNS with a scheme (used by tests and fakes).
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &GatewayDNS{}, &GatewayDNSList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
