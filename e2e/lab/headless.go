package lab

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The headless Service the lab exports: a StatefulSet's Service
// databases/postgres with the named port pg (TCP 5432).
const (
	HeadlessNamespace = "databases"
	HeadlessService   = "postgres"
	// HeadlessEndpointsName is its EndpointSlice, written as the endpoint
	// slice controller would (nothing else writes one in the lab).
	HeadlessEndpointsName = "postgres-lab"
)

// HeadlessHost is the name of a headless export of GatewayDNS gd of
// ClusterNamespace: <gd>.<ns>.services.<zone>.
func HeadlessHost(gd string) string {
	return fmt.Sprintf("%s.%s.services.%s", gd, ClusterNamespace, Zone)
}

// CreateHeadlessService creates, in w, the namespace databases (if it is
// not there) and the headless Service postgres (clusterIP None, port pg).
func CreateHeadlessService(ctx context.Context, w *Cluster) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: HeadlessNamespace}}
	if _, err := w.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s on %s: %w", HeadlessNamespace, w.Name, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: HeadlessService, Namespace: HeadlessNamespace},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "postgres"},
			Ports: []corev1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}},
	}
	if _, err := w.Client.CoreV1().Services(HeadlessNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s/%s on %s: %w", HeadlessNamespace, HeadlessService, w.Name, err)
	}
	return nil
}

// HeadlessPod is one endpoint of the postgres Service: a StatefulSet
// pod with its name as hostname.
type HeadlessPod struct {
	Name, Address string
	Ready         bool
}

// SetHeadlessEndpoints makes the postgres Service of w have the pods
// db-0, db-1, ... at addrs, as a StatefulSet's endpoints: each with its
// hostname, ready unless its address is in notReady.
func SetHeadlessEndpoints(ctx context.Context, w *Cluster, addrs []string, notReady ...string) error {
	pods := make([]HeadlessPod, len(addrs))
	for i, a := range addrs {
		pods[i] = HeadlessPod{Name: fmt.Sprintf("db-%d", i), Address: a, Ready: !slices.Contains(notReady, a)}
	}
	return WriteEndpointSlice(ctx, w.Client, w.Name, HeadlessEndpointSlice(HeadlessEndpointsName, pods))
}

// HeadlessEndpointSlice is the EndpointSlice name of the postgres Service
// holding pods, as the endpoint slice controller writes one for a
// StatefulSet behind a headless Service (at most 100 endpoints a slice).
func HeadlessEndpointSlice(name string, pods []HeadlessPod) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: HeadlessNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: HeadlessService,
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
			corev1.IsHeadlessService:     "",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("pg"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr(int32(5432))}},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, p := range pods {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{p.Address}, Hostname: ptr(p.Name),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: HeadlessNamespace, Name: p.Name},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(p.Ready), Serving: ptr(p.Ready), Terminating: ptr(false)}})
	}
	return s
}

// DeleteHeadless removes what CreateHeadlessService and
// SetHeadlessEndpoints wrote, but the namespace (no namespace controller
// runs in the lab to finish deleting one).
func DeleteHeadless(ctx context.Context, w *Cluster) error {
	if err := DeleteEndpointSlice(ctx, w, HeadlessNamespace, HeadlessEndpointsName); err != nil {
		return err
	}
	err := w.Client.CoreV1().Services(HeadlessNamespace).Delete(ctx, HeadlessService, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s on %s: %w", HeadlessNamespace, HeadlessService, w.Name, err)
	}
	return nil
}

// HeadlessStatus is one cluster's entry of a headless export's status.
type HeadlessStatus struct {
	Reason            string
	Pods              int64
	Healthy, Answered bool
}

// GatewayDNSPods returns, by cluster, the status entries of a headless export.
func GatewayDNSPods(ctx context.Context, mgmt *Cluster, namespace, name string) (map[string]HeadlessStatus, error) {
	gd, err := mgmt.Dynamic.Resource(GatewayDNSGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get GatewayDNS %s/%s: %w", namespace, name, err)
	}
	entries, _, _ := unstructured.NestedSlice(gd.Object, "status", "clusters")
	out := map[string]HeadlessStatus{}
	for _, e := range entries {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		var s HeadlessStatus
		s.Reason, _ = m["reason"].(string)
		s.Pods, _ = m["pods"].(int64)
		s.Healthy, _ = m["healthy"].(bool)
		s.Answered, _ = m["answered"].(bool)
		out[n] = s
	}
	return out, nil
}
