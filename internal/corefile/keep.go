package corefile

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Finalizer is on the Service the block forwards to (the workload chart
// sets it). While it is there the Service, and so its ClusterIP, cannot go
// away: the address the block forwards to is never free for another
// Service. Keep removes it only after the block is out; the chart's
// pre-delete hook (patch-corefile --remove --forward-to-service) removes it
// first, which tells the serve replicas to stop re-adding the block.
const Finalizer = "xcc-dns.io/cluster-dns-forward"

// KeepOptions say which block Keep keeps, and where.
type KeepOptions struct {
	// Namespace and ConfigMap hold the cluster DNS Corefile.
	Namespace, ConfigMap string
	// Service is namespace/name of the Service the block forwards to.
	Service string
	// Zone and ReverseCIDRs as in Options.
	Options
}

// Keep makes the cluster DNS Corefile agree with the Service once, by what
// the Service says:
//   - it exists, carries Finalizer and is not being deleted: the block is
//     there and forwards to its ClusterIP (re-added when an addon manager or
//     a person dropped it, its target replaced when the ClusterIP changed);
//   - it is being deleted: the block goes (when it names this Service or
//     none), then Finalizer, so the ClusterIP is released only once nothing
//     forwards to it;
//   - it is gone: the block goes when it names this Service;
//   - it exists without Finalizer (an uninstall under way, or an operator
//     who took the block over): nothing is touched.
func Keep(ctx context.Context, client kubernetes.Interface, o KeepOptions) (Action, error) {
	namespace, name, err := SplitRef(o.Service)
	if err != nil {
		return "", fmt.Errorf("service: %w", err)
	}
	svc, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return removeIfNamed(ctx, client, o, false)
	case err != nil:
		return "", fmt.Errorf("get Service %s: %w", o.Service, err)
	case svc.DeletionTimestamp != nil:
		action, err := removeIfNamed(ctx, client, o, true)
		if err != nil {
			return "", err
		}
		if !slices.Contains(svc.Finalizers, Finalizer) {
			return action, nil
		}
		return action, RemoveFinalizer(ctx, client, o.Service)
	case !slices.Contains(svc.Finalizers, Finalizer):
		return Unchanged, nil
	}
	target, err := serviceAddress(svc)
	if err != nil {
		return "", err
	}
	add := o.Options
	add.ForwardTo, add.Service, add.Remove = target, o.Service, false
	return ApplyToConfigMap(ctx, client, o.Namespace, o.ConfigMap, add)
}

// removeIfNamed takes the block out when it names o.Service (or, with
// unnamed, names no Service at all).
func removeIfNamed(ctx context.Context, client kubernetes.Interface, o KeepOptions, unnamed bool) (Action, error) {
	cm, err := client.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.ConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Unchanged, nil
	}
	if err != nil {
		return "", fmt.Errorf("get ConfigMap %s/%s: %w", o.Namespace, o.ConfigMap, err)
	}
	svc, found, err := BlockService(cm.Data[CorefileKey])
	if err != nil {
		return "", fmt.Errorf("ConfigMap %s/%s: %w", o.Namespace, o.ConfigMap, err)
	}
	ours := svc == o.Service || (unnamed && svc == "")
	if !found || !ours {
		return Unchanged, nil
	}
	rm := o.Options
	rm.Remove = true
	return ApplyToConfigMap(ctx, client, o.Namespace, o.ConfigMap, rm)
}

// RemoveFinalizer takes Finalizer off the Service ref (namespace/name); a
// Service that is gone or has none is left alone.
func RemoveFinalizer(ctx context.Context, client kubernetes.Interface, ref string) error {
	namespace, name, err := SplitRef(ref)
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get Service %s: %w", ref, err)
		}
		i := slices.Index(svc.Finalizers, Finalizer)
		if i < 0 {
			return nil
		}
		svc = svc.DeepCopy()
		svc.Finalizers = slices.Delete(svc.Finalizers, i, i+1)
		_, err = client.CoreV1().Services(namespace).Update(ctx, svc, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("update Service %s: %w", ref, err)
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
