package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/printable"
)

const (
	// discoveryStatusTimeout bounds the status writes of one failed
	// discovery: the API server that failed it may not answer them either.
	discoveryStatusTimeout = 10 * time.Second
	// discoveryStatusPage is the page size of the lists of those writes.
	discoveryStatusPage = 500
)

// discoveryStatus says in the Ready condition of every ClusterSet and
// GatewayDNS that the controller waits for the API discovery, with its
// last error: /readyz and a metric are seen by the operator, the status
// by whoever made the object (kubectl get, xcc-syncer status).
type discoveryStatus struct {
	dyn dynamic.Interface
}

// say writes the condition of err into every object whose Ready
// condition does not say it yet. It is best effort: a failed write is
// logged, and the next failed try writes again.
func (s discoveryStatus) say(ctx context.Context, err error) {
	ctx, cancel := context.WithTimeout(ctx, discoveryStatusTimeout)
	defer cancel()
	msg := printable.Cut("the controller reconciles nothing until the API discovery of the management cluster answers; it failed: "+
		kubeclient.Cut(err).Error(), mgmt.MaxConditionMessage)
	for _, r := range []schema.GroupVersionResource{xccv1alpha1.ClusterSetResource, v1alpha1.GatewayDNSResource} {
		if werr := s.sayIn(ctx, r, msg); werr != nil {
			klog.FromContext(ctx).V(2).Info("Could not say the failed API discovery in status", "resource", r.Resource, "err", werr)
		}
	}
}

// sayIn writes msg into the objects of resource, a page at a time.
func (s discoveryStatus) sayIn(ctx context.Context, resource schema.GroupVersionResource, msg string) error {
	opts := metav1.ListOptions{Limit: discoveryStatusPage}
	for {
		list, err := s.dyn.Resource(resource).List(ctx, opts)
		if apierrors.IsNotFound(err) {
			return nil // not served: there is nothing to tell
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", resource.Resource, err)
		}
		for i := range list.Items {
			if err := s.sayOne(ctx, resource, &list.Items[i], msg); err != nil {
				return err
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// sayOne sets u's Ready condition to msg, writing only a change.
func (s discoveryStatus) sayOne(ctx context.Context, resource schema.GroupVersionResource, u *unstructured.Unstructured, msg string) error {
	where := fmt.Sprintf("%s %s/%s", resource.Resource, u.GetNamespace(), u.GetName())
	raw, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return fmt.Errorf("%s: conditions: %w", where, err)
	}
	conds := make([]metav1.Condition, 0, len(raw)+1)
	for _, c := range raw {
		var cond metav1.Condition
		if m, ok := c.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			conds = append(conds, cond)
		}
	}
	if !meta.SetStatusCondition(&conds, metav1.Condition{Type: xccv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: xccv1alpha1.ReasonAPIDiscoveryFailed, Message: msg, ObservedGeneration: u.GetGeneration()}) {
		return nil
	}
	out := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return fmt.Errorf("%s: condition: %w", where, err)
		}
		out = append(out, m)
	}
	if err := unstructured.SetNestedSlice(u.Object, out, "status", "conditions"); err != nil {
		return fmt.Errorf("%s: conditions: %w", where, err)
	}
	_, err = s.dyn.Resource(resource).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("update status of %s: %w", where, err)
	}
	return nil
}
