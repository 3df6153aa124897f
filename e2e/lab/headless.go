package lab

import (
	"context"
	"fmt"

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

// SetHeadlessEndpoints makes the postgres Service of w have the pods
// db-0, db-1, ... at addrs, as a StatefulSet's endpoints: each with its
// hostname, ready unless its address is in notReady.
func SetHeadlessEndpoints(ctx context.Context, w *Cluster, addrs []string, notReady ...string) error {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: HeadlessEndpointsName, Namespace: HeadlessNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: HeadlessService,
			discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
			corev1.IsHeadlessService:     "",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("pg"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr(int32(5432))}},
	}
	for i, a := range addrs {
		ready := true
		for _, n := range notReady {
			ready = ready && n != a
		}
		pod := fmt.Sprintf("db-%d", i)
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Hostname: ptr(pod),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: HeadlessNamespace, Name: pod},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready), Serving: ptr(ready), Terminating: ptr(false)}})
	}
	api := w.Client.DiscoveryV1().EndpointSlices(HeadlessNamespace)
	old, err := api.Get(ctx, s.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, s, metav1.CreateOptions{})
	case err == nil:
		s.ResourceVersion = old.ResourceVersion
		_, err = api.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpoints of %s/%s on %s: %w", HeadlessNamespace, HeadlessService, w.Name, err)
	}
	return nil
}

// DeleteHeadless removes what CreateHeadlessService and
// SetHeadlessEndpoints wrote, but the namespace (no namespace controller
// runs in the lab to finish deleting one).
func DeleteHeadless(ctx context.Context, w *Cluster) error {
	err := w.Client.DiscoveryV1().EndpointSlices(HeadlessNamespace).Delete(ctx, HeadlessEndpointsName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete endpoints of %s/%s on %s: %w", HeadlessNamespace, HeadlessService, w.Name, err)
	}
	err = w.Client.CoreV1().Services(HeadlessNamespace).Delete(ctx, HeadlessService, metav1.DeleteOptions{})
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
