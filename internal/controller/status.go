package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
)

// Condition reasons.
const (
	CondReasonPublished          = "Published"
	CondReasonNoClustersSelected = "NoClustersSelected"
	CondReasonNotAllPublished    = "NotAllClustersPublished"
	CondReasonWriteFailed        = "WriteFailed"
	CondReasonNamesOwnedByOlder  = "NamesOwnedByOlderGatewayDNS"
	CondReasonNoConflict         = "NoConflict"
)

// maxConditionMessage keeps a condition message readable in kubectl describe.
const maxConditionMessage = 1024

// maxStatusClusters bounds status.clusters: the GatewayDNS, status and
// all, is one etcd value of at most 1.5 MiB by default (sizes measured in
// docs/benchmarks.md, section 4).
const maxStatusClusters = 1000

// buildStatus is the status a GatewayDNS should have after a sync: the
// per-cluster entries of d, and Ready and Conflict conditions. writeErrs
// holds, by target cluster, writes that failed. Condition transition times
// change only when a condition's status does.
func buildStatus(gd *v1alpha1.GatewayDNS, d desired.State, writeErrs map[string]error) v1alpha1.GatewayDNSStatus {
	st := v1alpha1.GatewayDNSStatus{
		ObservedGeneration: gd.Generation,
		Conditions:         append([]metav1.Condition(nil), gd.Status.Conditions...),
		SelectedClusters:   int32(len(d.Clusters)),
	}
	st.Clusters, st.OmittedClusters = listedClusters(d.Clusters, maxStatusClusters)
	st.Names, st.OmittedNames = listedNames(d.Names, v1alpha1.MaxNameStatuses)
	var notReady []string
	for _, c := range d.Clusters {
		if c.Healthy {
			st.HealthyClusters++
		}
		switch {
		case c.Ready:
			st.ReadyClusters++
		case c.Reason != desired.ReasonConflict:
			notReady = append(notReady, c.Name+": "+c.Reason)
		}
	}
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: gd.Generation}
	switch {
	case len(writeErrs) > 0:
		var msgs []string
		for cluster, err := range writeErrs {
			msgs = append(msgs, fmt.Sprintf("%s: %s", cluster, strings.ReplaceAll(err.Error(), "\n", "; ")))
		}
		sort.Strings(msgs)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, CondReasonWriteFailed,
			"EndpointSlices not written to: "+strings.Join(msgs, "; ")
	case len(d.Clusters) == 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, CondReasonNoClustersSelected,
			"clusterSelector matches no Cluster in namespace "+gd.Namespace
	case st.ReadyClusters == 0 && len(d.ConflictOwners) > 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, CondReasonNamesOwnedByOlder,
			"every selected cluster's names are published by an older GatewayDNS"
	case len(notReady) > 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, CondReasonNotAllPublished,
			strings.Join(notReady, ", ")
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, CondReasonPublished,
			fmt.Sprintf("%d cluster(s) published", st.ReadyClusters)
	}
	ready.Message = truncate(ready.Message, maxConditionMessage)
	meta.SetStatusCondition(&st.Conditions, ready)

	conflict := metav1.Condition{Type: v1alpha1.ConditionConflict, ObservedGeneration: gd.Generation,
		Status: metav1.ConditionFalse, Reason: CondReasonNoConflict}
	if len(d.ConflictOwners) > 0 {
		var msgs []string
		for cluster, owner := range d.ConflictOwners {
			msgs = append(msgs, fmt.Sprintf("%s (owned by %s)", cluster, owner))
		}
		sort.Strings(msgs)
		conflict.Status, conflict.Reason = metav1.ConditionTrue, CondReasonNamesOwnedByOlder
		conflict.Message = truncate("names not published for clusters an older GatewayDNS selects: "+strings.Join(msgs, ", "), maxConditionMessage)
	}
	meta.SetStatusCondition(&st.Conditions, conflict)
	return st
}

// listedClusters returns at most max entries of all (sorted by name), the
// ones not Ready first since they are the ones to act on, and how many
// were left out.
func listedClusters(all []v1alpha1.ClusterStatus, max int) ([]v1alpha1.ClusterStatus, int32) {
	if len(all) <= max {
		return all, 0
	}
	out := make([]v1alpha1.ClusterStatus, 0, max)
	for _, ready := range []bool{false, true} {
		for _, c := range all {
			if c.Ready == ready && len(out) < max {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, int32(len(all) - len(out))
}

// statusEqual tells whether writing st would change anything.
func statusEqual(a, b v1alpha1.GatewayDNSStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// updateStatus writes status when it differs from what the object has.
func (c *Controller) updateStatus(ctx context.Context, gd *v1alpha1.GatewayDNS, st v1alpha1.GatewayDNSStatus) error {
	if statusEqual(gd.Status, st) {
		return nil
	}
	cp := gd.DeepCopy()
	cp.Status = st
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cp)
	if err != nil {
		return fmt.Errorf("convert GatewayDNS %s/%s: %w", gd.Namespace, gd.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(v1alpha1.GatewayDNSKind)
	_, err = c.cfg.Dynamic.Resource(v1alpha1.GatewayDNSResource).Namespace(gd.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status of GatewayDNS %s/%s: %w", gd.Namespace, gd.Name, err)
	}
	return nil
}

// toGatewayDNS converts an informer object into the typed GatewayDNS.
func toGatewayDNS(obj any) (*v1alpha1.GatewayDNS, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("GatewayDNS informer delivered %T", obj)
	}
	gd := &v1alpha1.GatewayDNS{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, gd); err != nil {
		return nil, fmt.Errorf("convert GatewayDNS %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return gd, nil
}
