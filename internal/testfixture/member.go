package testfixture

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/typed/apis/v1beta1"
)

// Member is a clusterset member: the fake core clientset and the
// fake MCS clientset.
type Member struct {
	*fake.Clientset
	MCS *mcsfake.Clientset
	// ID is its ClusterProperty cluster.clusterset.k8s.io; nil: none.
	ID *string
	// Prop, when set, is the property as it is now, changed at run time.
	Prop *atomic.Pointer[string]
}

// ClusterIDProperty is the ClusterProperty cluster.clusterset.k8s.io of m
// (a workload.PropertyClient).
func (m Member) ClusterIDProperty(context.Context) (*string, error) {
	if m.Prop != nil {
		return m.Prop.Load(), nil
	}
	return m.ID, nil
}

// MulticlusterV1beta1 is the MCS client of m (a workload.MCSClient).
func (m Member) MulticlusterV1beta1() mcsclient.MulticlusterV1beta1Interface {
	return m.MCS.MulticlusterV1beta1()
}

// NewMember is an opted-in member with namespace shop; exports, when
// given, is the Service shop/web (port http 80) with one ready endpoint
// and its ServiceExport.
func NewMember(export bool, addr string) Member {
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SliceNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
	}
	var exports []runtime.Object
	if export {
		objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10",
				Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}})
		s := ServiceEndpoints("shop", "web", "web-1", Endpoint(addr, true))
		s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}
		objs = append(objs, s)
		exports = append(exports, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			CreationTimestamp: metav1.NewTime(time.Unix(100, 0))}})
	}
	rv := &atomic.Int64{}
	stamp(rv, append(slices.Clone(objs), exports...)...)
	m := Member{Clientset: fake.NewClientset(objs...), MCS: mcsfake.NewSimpleClientset(exports...)}
	exportStatusOnly(m.MCS)
	// Prepended after exportStatusOnly, so it runs first: the status
	// write it stores carries the resourceVersion stamped here.
	versioned(rv, map[*k8stesting.Fake]k8stesting.ObjectTracker{&m.Fake: m.Tracker(), &m.MCS.Fake: m.MCS.Tracker()})
	// The API server allocates a Service's ClusterIP; the fake does not.
	next := 100
	m.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		if ok && svc.Spec.ClusterIP == "" {
			next++
			svc.Spec.ClusterIP = fmt.Sprintf("10.96.7.%d", next)
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		return false, nil, nil
	})
	return m
}

// exportStatusOnly makes a ServiceExport's status write change only its
// status, as the API server's status subresource does. The fake writes
// the whole object, so the controller's status write, made from its
// cached copy, would undo a spec change the test made just before it.
func exportStatusOnly(c *mcsfake.Clientset) {
	gvr := mcsv1beta1.SchemeGroupVersion.WithResource("serviceexports")
	c.PrependReactor("update", "serviceexports", func(a k8stesting.Action) (bool, runtime.Object, error) {
		up, ok := a.(k8stesting.UpdateAction)
		if !ok || up.GetSubresource() != "status" {
			return false, nil, nil
		}
		sent, ok := up.GetObject().(*mcsv1beta1.ServiceExport)
		if !ok {
			return false, nil, nil
		}
		cur, err := c.Tracker().Get(gvr, sent.Namespace, sent.Name)
		if err != nil {
			return true, nil, err
		}
		next := cur.(*mcsv1beta1.ServiceExport).DeepCopy()
		next.Status = *sent.Status.DeepCopy()
		next.ResourceVersion = sent.ResourceVersion
		return true, next, c.Tracker().Update(gvr, next, sent.Namespace)
	})
}

// stamp gives each of objs what an API server gives an object it
// stores: the next resourceVersion of rv and, if it has none, a UID.
func stamp(rv *atomic.Int64, objs ...runtime.Object) {
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		if m.GetUID() == "" {
			m.SetUID(uuid.NewUUID())
		}
		m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
	}
}

// versioned makes the fakes (each with its tracker) keep the
// resourceVersions and UIDs of what is written through them as an API
// server does, from one counter as one API server would: the fake
// tracker sets neither and takes any update. Every object created or
// updated is stamped; an update sent with a resourceVersion other than
// the one stored is refused (a conflict). The controller tells its own
// write from an informer's older copy by the resourceVersion, and
// anyone's write of its objects by UID and resourceVersion: without them
// it writes again from a copy that has not caught up, and misses a write
// that replaced its own. Objects added to a tracker directly are not
// stamped.
func versioned(rv *atomic.Int64, fakes map[*k8stesting.Fake]k8stesting.ObjectTracker) {
	for f, tracker := range fakes {
		f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			switch a := a.(type) {
			case k8stesting.CreateActionImpl:
				stamp(rv, a.GetObject())
			case k8stesting.UpdateActionImpl:
				if err := updatable(tracker, a); err != nil {
					return true, nil, err
				}
				stamp(rv, a.GetObject())
			}
			return false, nil, nil
		})
	}
}

// updatable checks the update a as an API server does: an object sent
// with a resourceVersion must be the one stored; one sent without a UID
// keeps the stored one. One not stored is left to the tracker (NotFound).
func updatable(tracker k8stesting.ObjectTracker, a k8stesting.UpdateActionImpl) error {
	sent, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil
	}
	obj, err := tracker.Get(a.GetResource(), a.GetNamespace(), sent.GetName())
	if err != nil {
		return nil
	}
	stored, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	if rv := sent.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
		return apierrors.NewConflict(a.GetResource().GroupResource(), sent.GetName(),
			fmt.Errorf("resourceVersion %s sent, %s stored", rv, stored.GetResourceVersion()))
	}
	if sent.GetUID() == "" {
		sent.SetUID(stored.GetUID())
	}
	return nil
}

// ClusterSetObject is the ClusterSet name of dev-team selecting the
// Clusters labelled set=name.
func ClusterSetObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "xcc-dns.io/v1alpha1", "kind": "ClusterSet",
		"metadata": map[string]any{"name": name, "namespace": "dev-team"},
		"spec":     map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"set": name}}},
	}}
}

// DownableMember makes both clients of m (Kubernetes and MCS) stop
// answering while the returned downable is down.
func DownableMember(m Member) *Downable {
	d := NewDownable(m.Clientset)
	m.MCS.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		if d.IsDown() {
			return true, nil, ErrServerDown
		}
		return false, nil, nil
	})
	return d
}
