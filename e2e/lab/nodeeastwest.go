package lab

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Networks on the node lab (docs/mcs.md, "Networks"): Traefik is the
// east-west gateway of a member. Traefik v3.6 has no ListenerSet (nor
// has v3.7: its Gateway API conformance report skips the feature), so
// the lab stands in for that one part of an implementation: it copies
// the controller's ListenerSet's listeners onto a second Gateway of the
// same Traefik (EastWestMerged; the controller reads the operator's
// Gateway only, whose own listeners would hold the ports), attaches
// copies of the controller's routes to them, and once Traefik has
// accepted and programmed those listeners writes the ListenerSet's
// status. Everything else (the routing, the east-west Gateway's
// Programmed and its address in its status, the connections) is
// Traefik's.
const (
	// EastWestNamespace and EastWestGateway name the east-west Gateway.
	EastWestNamespace = "xcc-east-west"
	EastWestGateway   = "east-west"
	// EastWestMerged is the lab's Gateway of the ListenerSets' listeners.
	EastWestMerged = "east-west-listenersets"
	// EastWestHTTPPort is the ClusterSet's httpPort: Traefik's web entry
	// point, which the walkthrough's Gateway listens on too.
	EastWestHTTPPort = traefikHTTPPort
	// EastWestTCPPort is the ClusterSet's one TCP listener port (tcpPorts
	// first and last): Traefik has an entry point on it.
	EastWestTCPPort = 31000

	// mergedLabel marks the routes the lab copied onto the Gateway.
	mergedLabel = "xcc-dns.io/lab-merged-from"
)

// eastWestCRDs are the Gateway API kinds the controller writes that the
// lab's v1.4 CRDs lack (ListenerSet) or do not serve at v1 (TCPRoute,
// TLSRoute): their experimental channel CRDs of the main module's
// release serve v1 and still the v1alpha versions Traefik reads.
var eastWestCRDs = []string{"listenersets", "tcproutes", "tlsroutes"}

// installEastWestCRDs installs eastWestCRDs from the main module's
// sigs.k8s.io/gateway-api into c.
func (l *NodeLab) installEastWestCRDs(ctx context.Context, c *Cluster) error {
	dir, err := gatewayAPICRDDir(ctx, l.RepoRoot, "experimental")
	if err != nil {
		return err
	}
	return installGatewayAPIKinds(ctx, c, dir, eastWestCRDs)
}

// EastWestGatewayOfTraefik is the Gateway name in EastWestNamespace of
// class traefik (EastWestGatewayYAML), its own listener on Traefik's web
// entry point.
func EastWestGatewayOfTraefik(name string) string {
	return EastWestGatewayYAML(EastWestNamespace, name, GatewayClassName, EastWestHTTPPort)
}

// mergedName is the Gateway listener the lab makes of listener of the
// ListenerSet ns/set.
func mergedName(ns, set, listener string) string { return ns + "-" + set + "-" + listener }

// MergeListenerSet does for the ListenerSet ns/set of c what a gateway
// supporting ListenerSets does: its listeners become listeners of the
// Gateway EastWestMerged (routes of ns only, as the set's "Same" says),
// and every route of ns whose parent is a listener of the set gets a
// copy attached to the merged listener. It returns the merged listeners'
// names, by the set's listener names.
func MergeListenerSet(ctx context.Context, c *Cluster, ns, set string) (map[string]string, error) {
	ls, err := mustGatewayAPIObject(ctx, c, "listenersets", ns, set)
	if err != nil {
		return nil, err
	}
	listeners, _, _ := unstructured.NestedSlice(ls.Object, "spec", "listeners")
	merged := map[string]string{}
	var add []any
	for _, l := range listeners {
		m, _ := l.(map[string]any)
		name := fmt.Sprint(m["name"])
		entry := map[string]any{"name": mergedName(ns, set, name), "port": m["port"], "protocol": m["protocol"],
			"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "Selector",
				"selector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}}}
		for _, k := range []string{"hostname", "tls"} {
			if v, ok := m[k]; ok {
				entry[k] = v
			}
		}
		merged[name] = mergedName(ns, set, name)
		add = append(add, entry)
	}
	if err := setGatewayListeners(ctx, c, ns+"-"+set+"-", add); err != nil {
		return nil, err
	}
	for _, res := range []string{"httproutes", "tcproutes", "tlsroutes"} {
		if err := copyRoutes(ctx, c, res, ns, set, merged); err != nil {
			return nil, err
		}
	}
	return merged, nil
}

// setGatewayListeners replaces the listeners of EastWestMerged whose
// names begin with prefix by add.
func setGatewayListeners(ctx context.Context, c *Cluster, prefix string, add []any) error {
	res := c.Dynamic.Resource(GatewayAPIGVR("gateways")).Namespace(EastWestNamespace)
	gw, err := res.Get(ctx, EastWestMerged, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get Gateway %s/%s of %s: %w", EastWestNamespace, EastWestMerged, c.Name, err)
	}
	old, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	keep := slices.DeleteFunc(old, func(l any) bool {
		m, _ := l.(map[string]any)
		return strings.HasPrefix(fmt.Sprint(m["name"]), prefix)
	})
	if err := unstructured.SetNestedSlice(gw.Object, append(keep, add...), "spec", "listeners"); err != nil {
		return err
	}
	if _, err := res.Update(ctx, gw, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Gateway %s/%s of %s: %w", EastWestNamespace, EastWestMerged, c.Name, err)
	}
	return nil
}

// copyRoutes writes, for every route res of ns with a parent in the
// ListenerSet set, a copy "<name>-merged" whose parent is the merged
// listener of EastWestMerged instead.
func copyRoutes(ctx context.Context, c *Cluster, res, ns, set string, merged map[string]string) error {
	api := c.Dynamic.Resource(GatewayAPIGVR(res)).Namespace(ns)
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list %s in %s of %s: %w", res, ns, c.Name, err)
	}
	for _, r := range list.Items {
		if r.GetLabels()[mergedLabel] != "" {
			continue
		}
		parents, _, _ := unstructured.NestedSlice(r.Object, "spec", "parentRefs")
		var moved []any
		for _, p := range parents {
			m, _ := p.(map[string]any)
			if m["kind"] != "ListenerSet" || m["name"] != set || merged[fmt.Sprint(m["sectionName"])] == "" {
				continue
			}
			moved = append(moved, map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway",
				"namespace": EastWestNamespace, "name": EastWestMerged, "sectionName": merged[fmt.Sprint(m["sectionName"])]})
		}
		if len(moved) == 0 {
			continue
		}
		spec, _, _ := unstructured.NestedMap(r.Object, "spec")
		spec["parentRefs"] = moved
		cp := &unstructured.Unstructured{Object: map[string]any{"apiVersion": r.GetAPIVersion(), "kind": r.GetKind(),
			"metadata": map[string]any{"name": r.GetName() + "-merged", "namespace": ns, "labels": map[string]any{mergedLabel: r.GetName()}},
			"spec":     spec}}
		if _, err := api.Apply(ctx, cp.GetName(), cp, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %s/%s of %s: %w", res, ns, cp.GetName(), c.Name, err)
		}
	}
	return nil
}

// MergedListenersProgrammed says why the listeners names of
// EastWestMerged are not all Accepted and Programmed by Traefik for its
// generation with a route attached, or the east-west Gateway not
// Programmed, "" when all are; and the east-west Gateway's status
// addresses.
func MergedListenersProgrammed(ctx context.Context, c *Cluster, names []string) (string, []string, error) {
	gw, err := mustGatewayAPIObject(ctx, c, "gateways", EastWestNamespace, EastWestGateway)
	if err != nil {
		return "", nil, err
	}
	var addrs []string
	as, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
	for _, a := range as {
		m, _ := a.(map[string]any)
		addrs = append(addrs, fmt.Sprint(m["value"]))
	}
	conds, _, _ := unstructured.NestedSlice(gw.Object, "status", "conditions")
	if !currentTrue(conds, "Programmed", gw.GetGeneration()) {
		return fmt.Sprintf("Gateway %s not Programmed: %v", EastWestGateway, conds), addrs, nil
	}
	merged, err := mustGatewayAPIObject(ctx, c, "gateways", EastWestNamespace, EastWestMerged)
	if err != nil {
		return "", nil, err
	}
	gen := merged.GetGeneration()
	statuses, _, _ := unstructured.NestedSlice(merged.Object, "status", "listeners")
	for _, name := range names {
		i := slices.IndexFunc(statuses, func(s any) bool { m, _ := s.(map[string]any); return m["name"] == name })
		if i < 0 {
			return "no status of listener " + name, addrs, nil
		}
		m, _ := statuses[i].(map[string]any)
		lc, _, _ := unstructured.NestedSlice(m, "conditions")
		attached, _, _ := unstructured.NestedInt64(m, "attachedRoutes")
		if !currentTrue(lc, "Accepted", gen) || !currentTrue(lc, "Programmed", gen) || attached < 1 {
			return fmt.Sprintf("listener %s: %d routes, %v", name, attached, lc), addrs, nil
		}
	}
	return "", addrs, nil
}

// mustGatewayAPIObject is GatewayAPIObject, an error when there is none.
func mustGatewayAPIObject(ctx context.Context, c *Cluster, resource, ns, name string) (*unstructured.Unstructured, error) {
	u, err := GatewayAPIObject(ctx, c, resource, ns, name)
	if err == nil && u == nil {
		err = fmt.Errorf("no %s %s/%s in %s", resource, ns, name, c.Name)
	}
	return u, err
}

// currentTrue: condition typ of conds is True for generation gen.
func currentTrue(conds []any, typ string, gen int64) bool {
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		g, _ := m["observedGeneration"].(int64)
		return m["status"] == "True" && g == gen
	}
	return false
}

// IsolatePods makes the pod ranges of a and b unreachable from each
// other: the lab's router drops what goes between them, both ways, as if
// they were networks that do not route. Load-balancer and node addresses
// still route. undo removes the rules.
func IsolatePods(ctx context.Context, a, b *NodeCluster) (undo func(context.Context) error, err error) {
	rules := [][]string{{"-s", a.Net.PodCIDR(), "-d", b.Net.PodCIDR(), "-j", "DROP"}, {"-s", b.Net.PodCIDR(), "-d", a.Net.PodCIDR(), "-j", "DROP"}}
	iptables := func(ctx context.Context, op string) error {
		for _, r := range rules {
			if err := inNetns(ctx, routerNetns, "iptables", append([]string{op, "FORWARD"}, r...)...); err != nil {
				return fmt.Errorf("router: %w", err)
			}
		}
		return nil
	}
	undo = func(ctx context.Context) error { return iptables(ctx, "-D") }
	if err := iptables(ctx, "-I"); err != nil {
		_ = undo(ctx)
		return nil, err
	}
	return undo, nil
}
