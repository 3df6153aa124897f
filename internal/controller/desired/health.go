package desired

import (
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// health is whether a cluster's gateway (or pods, or a Service claiming a
// name) counts for a multi-cluster name, and if not, the first check that
// failed.
type health struct {
	healthy         bool
	reason, message string
}

// health checks, in order, that the Cluster is not being deleted, is
// available, and that the gateway Service (which has an address, or this
// is not called) has a ready endpoint. While the EndpointSlices of the
// Service have not been listed, the last health in status stands, as
// an unreachable cluster keeps its last slices; a cluster never seen
// healthy counts as not.
func (c Input) health(svc string, last v1alpha1.ClusterStatus) health {
	switch {
	case c.Deleting:
		return health{reason: v1alpha1.HealthReasonClusterDeleting, message: "the Cluster is being deleted"}
	case c.Unavailable != "":
		return health{reason: v1alpha1.HealthReasonClusterNotAvailable, message: "Cluster " + c.Unavailable}
	case !c.EndpointsSynced:
		if last.HealthReason == v1alpha1.HealthReasonHealthy || last.HealthReason == v1alpha1.HealthReasonNoReadyEndpoints {
			return health{healthy: last.Healthy, reason: last.HealthReason, message: "EndpointSlices of Service " + svc + " not listed yet; last health kept"}
		}
		return health{reason: v1alpha1.HealthReasonNoReadyEndpoints,
			message: "EndpointSlices of Service " + svc + " not listed yet (the kubeconfig needs list and watch on EndpointSlices in its namespace)"}
	case c.ReadyEndpoints == 0:
		return health{reason: v1alpha1.HealthReasonNoReadyEndpoints, message: "Service " + svc + " has no ready endpoint"}
	}
	return health{healthy: true, reason: v1alpha1.HealthReasonHealthy}
}

// headlessHealth is whether a cluster's ready pods count for the name
// across clusters: the Cluster is available (Deleting is handled before
// this is called) and has at least one ready pod.
func (c Input) headlessHealth(pods int, svc string) health {
	switch {
	case c.Deleting:
		return health{reason: v1alpha1.HealthReasonClusterDeleting, message: "the Cluster is being deleted"}
	case c.Unavailable != "":
		return health{reason: v1alpha1.HealthReasonClusterNotAvailable, message: "Cluster " + c.Unavailable}
	case pods == 0:
		return health{reason: v1alpha1.HealthReasonNoReadyEndpoints, message: "Service " + svc + " has no ready endpoint"}
	}
	return health{healthy: true, reason: v1alpha1.HealthReasonHealthy}
}

// Availability reads whether a Cluster API Cluster (v1beta2 or v1beta1,
// as the informer serves it) counts as available for the multi-cluster
// name. It looks, in this order, for the condition Available in
// status.conditions (v1beta2), Available in status.v1beta2.conditions
// (v1beta1 Clusters of Cluster API 1.9 and later) and Ready in
// status.conditions (v1beta1). Only a condition whose status is False
// makes the Cluster unavailable; why is then its type, reason and message.
//
// A Cluster with neither condition yet (Cluster API has not reconciled
// it, or a provider that sets none) or with Unknown counts as available:
// only Cluster API saying that the cluster is not available takes its
// gateway away. The gateway must still have an address and a ready
// endpoint, which the controller sees for itself; and Unknown is what a
// Cluster reports while its control plane is merely unreachable from the
// management cluster, which says nothing of the gateway's data path.
func Availability(cluster map[string]any) (available bool, why string) {
	for _, c := range []struct {
		path []string
		typ  string
	}{
		{[]string{"status", "conditions"}, "Available"},
		{[]string{"status", "v1beta2", "conditions"}, "Available"},
		{[]string{"status", "conditions"}, "Ready"},
	} {
		conds, _, _ := unstructured.NestedSlice(cluster, c.path...)
		for _, o := range conds {
			m, ok := o.(map[string]any)
			if !ok || m["type"] != c.typ {
				continue
			}
			status, _ := m["status"].(string)
			if status != "False" {
				return true, ""
			}
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			why = fmt.Sprintf("condition %s is False", c.typ)
			if reason != "" {
				why += " (" + reason + ")"
			}
			if msg != "" {
				why += ": " + msg
			}
			return false, why
		}
	}
	return true, ""
}

// ReadyEndpoints counts the endpoints of a Service's EndpointSlices that
// take traffic (contract.ReadyEndpointCount).
func ReadyEndpoints(slices []*discoveryv1.EndpointSlice) int {
	return contract.ReadyEndpointCount(slices)
}
