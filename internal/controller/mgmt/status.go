package mgmt

import (
	"context"
	"fmt"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// MaxConditionMessage keeps a condition message readable in kubectl describe.
const MaxConditionMessage = 1024

// Truncate cuts s to at most n bytes, the last three "...", when it is
// longer; never inside a UTF-8 sequence, which the API server would
// refuse to store.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Object is a typed object of the management cluster (a GatewayDNS, a
// ClusterSet) as its reconciler holds it.
type Object interface {
	runtime.Object
	metav1.Object
}

// WriteStatus sends obj, holding its new status, to the status
// subresource of resource (of kind) through dyn; one that is gone
// meanwhile is no error.
func WriteStatus(ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, kind schema.GroupVersionKind, obj Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("convert %s %s/%s: %w", kind.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetGroupVersionKind(kind)
	_, err = dyn.Resource(resource).Namespace(obj.GetNamespace()).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status of %s %s/%s: %w", kind.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
