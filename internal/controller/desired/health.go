package desired

import (
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
// take traffic: conditions.ready true or unset (the EndpointSlice API reads
// unset as ready) and not terminating.
func ReadyEndpoints(slices []*discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if ep.Conditions.Terminating != nil && *ep.Conditions.Terminating {
				continue
			}
			n++
		}
	}
	return n
}
