package lab

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GatewayAPIGVR is the resource of a Gateway API kind (lowercase plural).
func GatewayAPIGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: resource}
}

// EastWestGatewayYAML is an operator's east-west Gateway of class that
// admits ListenerSets of every namespace, with one listener of its own
// on port (a Gateway needs one) that no route uses. In the lab's bare
// API servers no implementation runs: GatewayProgrammed and
// ListenerSetAccepted write what one would.
func EastWestGatewayYAML(namespace, name, class string, port int) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: %s
  namespace: %s
spec:
  gatewayClassName: %s
  allowedListeners:
    namespaces:
      from: All
  listeners:
  - name: own
    hostname: %s.invalid
    port: %d
    protocol: HTTP
`, name, namespace, class, name, port)
}

// ClusterSetWithNetworks is ClusterSetSelecting with spec.networks: the
// east-west Gateway namespace/gateway, HTTP listeners on httpPort and TCP
// listeners from first to last.
func ClusterSetWithNetworks(name, key, value, namespace, gateway string, httpPort, first, last int) string {
	return ClusterSetSelecting(name, key, value) + fmt.Sprintf(`  networks:
    gateway: {namespace: %s, name: %s}
    httpPort: %d
    tcpPorts: {first: %d, last: %d}
`, namespace, gateway, httpPort, first, last)
}

// condition is a status condition as an implementation writes it.
func condition(typ string, status bool, gen int64) map[string]any {
	s, reason := "False", "Pending"
	if status {
		s, reason = "True", typ
	}
	if typ == "Conflicted" && !status {
		reason = "NoConflicts"
	}
	return map[string]any{"type": typ, "status": s, "reason": reason, "message": "written by the lab",
		"observedGeneration": gen, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
}

// GatewayProgrammed writes the status of the Gateway namespace/name of w
// as its implementation would: Programmed (or not) at address.
func GatewayProgrammed(ctx context.Context, w *Cluster, namespace, name string, programmed bool, address string) error {
	res := w.Dynamic.Resource(GatewayAPIGVR("gateways")).Namespace(namespace)
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get Gateway %s/%s of %s: %w", namespace, name, w.Name, err)
	}
	status := map[string]any{"conditions": []any{condition("Accepted", true, u.GetGeneration()), condition("Programmed", programmed, u.GetGeneration())}}
	if address != "" {
		status["addresses"] = []any{map[string]any{"type": "IPAddress", "value": address}}
	}
	u.Object["status"] = status
	if _, err := res.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write the status of Gateway %s/%s of %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// ListenerSetAccepted writes the status of the ListenerSet namespace/name
// of w as an implementation would: Accepted, each listener Accepted,
// Programmed and not Conflicted.
func ListenerSetAccepted(ctx context.Context, w *Cluster, namespace, name string) error {
	return ListenerSetListenersAccepted(ctx, w, namespace, name, nil)
}

// ListenerSetListenersAccepted is ListenerSetAccepted with the listeners
// of only (nil: all) in the status, the others left without one.
func ListenerSetListenersAccepted(ctx context.Context, w *Cluster, namespace, name string, only map[string]bool) error {
	res := w.Dynamic.Resource(GatewayAPIGVR("listenersets")).Namespace(namespace)
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ListenerSet %s/%s of %s: %w", namespace, name, w.Name, err)
	}
	gen := u.GetGeneration()
	listeners, _, _ := unstructured.NestedSlice(u.Object, "spec", "listeners")
	var statuses []any
	for _, l := range listeners {
		m, _ := l.(map[string]any)
		if only != nil && !only[fmt.Sprint(m["name"])] {
			continue
		}
		kind := map[string]any{"HTTP": "HTTPRoute", "TLS": "TLSRoute", "TCP": "TCPRoute"}[fmt.Sprint(m["protocol"])]
		statuses = append(statuses, map[string]any{"name": m["name"], "attachedRoutes": int64(1),
			"supportedKinds": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": kind}},
			"conditions":     []any{condition("Accepted", true, gen), condition("Programmed", true, gen), condition("Conflicted", false, gen)}})
	}
	u.Object["status"] = map[string]any{"conditions": []any{condition("Accepted", true, gen), condition("Programmed", true, gen)}, "listeners": statuses}
	if _, err := res.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write the status of ListenerSet %s/%s of %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// GatewayAPIObject gets the Gateway API object resource namespace/name of
// w; nil when there is none.
func GatewayAPIObject(ctx context.Context, w *Cluster, resource, namespace, name string) (*unstructured.Unstructured, error) {
	u, err := w.Dynamic.Resource(GatewayAPIGVR(resource)).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get %s %s/%s of %s: %w", resource, namespace, name, w.Name, err)
	}
	return u, nil
}

// TenantListenerSetYAML is a tenant's own ListenerSet namespace/name on
// the Gateway gwNamespace/gateway, holding a TCP listener on port.
func TenantListenerSetYAML(namespace, name, gwNamespace, gateway string, port int) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata:
  name: %s
  namespace: %s
spec:
  parentRef:
    name: %s
    namespace: %s
  listeners:
  - name: mine
    port: %d
    protocol: TCP
`, name, namespace, gateway, gwNamespace, port)
}
