package publish

import (
	"context"
	"fmt"
	"maps"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

// The self marker (contract.BuildSelf) of a target is written by the
// target's write, after its slices: Target.Self says what it should be.
// Every GatewayDNS of a namespace writes the same marker, which carries no
// gateway-dns-ref, so no plan of one of them ever deletes it; the last
// GatewayDNS of the namespace removes it with its slices (Remove with
// withSelf). A full list of the target finds it among the slices, so
// checking it costs no call; between lists, the target's state says what
// was written there.

// selfValue is what a marker says: the Clusters it lists.
func selfValue(s *discoveryv1.EndpointSlice) string {
	return s.Annotations[contract.AnnotationSelfClusters]
}

// writeSelf makes t hold t.Self unless had, the value last written there,
// says it does. listed is the marker as the target's list found it (nil:
// none) when read is false; with read true it is read first. It returns
// the value now there. An object of that name the controller did not
// write is never changed: that is an error.
func (w *Writer) writeSelf(ctx context.Context, t Target, had string, listed *discoveryv1.EndpointSlice, read bool) (string, int, error) {
	want := t.Self
	if want == nil || (read && had == selfValue(want)) {
		return had, 0, nil
	}
	existing := listed
	api := t.api
	if read {
		var err error
		existing, err = api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			existing = nil
		} else if err != nil {
			return "", 0, fmt.Errorf("get self marker %s: %w", want.Name, err)
		}
	}
	if existing == nil {
		s := want.DeepCopy()
		s.Namespace = w.cfg.SliceNamespace
		// A marker made since the list is compared as if listed.
		got, created, err := write.Create(ctx, api, s, ownSelf)
		if err != nil {
			return "", 0, fmt.Errorf("create self marker %s: %w", want.Name, err)
		}
		if created {
			w.cfg.Written.WithLabelValues("create").Inc()
			return selfValue(want), 1, nil
		}
		existing = got
	}
	n := 1
	switch {
	case !ownSelf(existing):
		return "", 0, fmt.Errorf("EndpointSlice %s/%s exists and was not written by xcc-dns, left alone: %w", w.cfg.SliceNamespace, want.Name, kubeclient.ErrNotOurs)
	case !sameSelf(existing, want):
		u := existing.DeepCopy()
		if u.Labels == nil {
			u.Labels = map[string]string{}
		}
		if u.Annotations == nil {
			u.Annotations = map[string]string{}
		}
		maps.Copy(u.Labels, want.Labels)
		maps.Copy(u.Annotations, want.Annotations)
		u.Endpoints, u.Ports = nil, nil
		if _, err := write.Update(ctx, api, u); err != nil {
			return "", 0, fmt.Errorf("update self marker %s: %w", want.Name, err)
		}
		w.cfg.Written.WithLabelValues("update").Inc()
	default:
		n = 0
	}
	klog.FromContext(ctx).V(2).Info("Self marker in place", "cluster", t.Name, "clusters", selfValue(want))
	return selfValue(want), n, nil
}

// ownSelf reports whether s is a self marker the controller wrote.
func ownSelf(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[contract.LabelManagedBy] == contract.ManagedByValue && s.Labels[contract.LabelRecord] == string(contract.KindSelf)
}

func sameSelf(existing, want *discoveryv1.EndpointSlice) bool {
	for k, v := range want.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Annotations {
		if existing.Annotations[k] != v {
			return false
		}
	}
	return len(existing.Endpoints) == 0 && len(existing.Ports) == 0
}

// removeSelf deletes the self marker of namespace from t, if the
// controller wrote it: no GatewayDNS of the namespace targets the cluster
// any more.
func (w *Writer) removeSelf(ctx context.Context, t Target, namespace string) error {
	name := contract.SelfSliceName(namespace)
	api := t.api
	existing, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get self marker %s: %w", name, err)
	}
	if !ownSelf(existing) {
		return nil
	}
	if err := write.Delete(ctx, api, existing); err != nil {
		return fmt.Errorf("delete self marker %s: %w", name, err)
	}
	w.cfg.Written.WithLabelValues("delete").Inc()
	return nil
}
