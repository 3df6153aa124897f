package lab

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// No endpoint slice controller runs in the lab (no kubelet, no controller
// manager): the tests write the EndpointSlices of the gateway and headless
// Services themselves, all through these two functions.

// WriteEndpointSlice writes s with client to cluster as the endpoint
// slice controller would: replaced whole, created when it is not there.
// The update names no resourceVersion (EndpointSlices allow that), so a
// change costs one request, and the client is the caller's: the churn
// benchmark's has no client-side rate limit.
func WriteEndpointSlice(ctx context.Context, client kubernetes.Interface, cluster string, s *discoveryv1.EndpointSlice) error {
	api := client.DiscoveryV1().EndpointSlices(s.Namespace)
	_, err := api.Update(ctx, s, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, s, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write EndpointSlice %s/%s on %s: %w", s.Namespace, s.Name, cluster, err)
	}
	return nil
}

// DeleteEndpointSlice deletes EndpointSlice namespace/name of w (gone
// already is fine).
func DeleteEndpointSlice(ctx context.Context, w *Cluster, namespace, name string) error {
	err := w.Client.DiscoveryV1().EndpointSlices(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete EndpointSlice %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	return nil
}
