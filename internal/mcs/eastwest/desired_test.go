package eastwest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

var testConfig = Config{Gateway: gwRef, Zone: "clusterset.local", HTTPPort: 80, TLSPort: 443}

// TestDesired: an export gets one ListenerSet whose one parent is the
// operator's Gateway, a listener per port that admits routes of its own
// namespace only, and one route per port in the export's namespace,
// attached to that listener alone, whose one backend is the exported
// Service at that port.
func TestDesired(t *testing.T) {
	k := aggregate.Key{Namespace: "shop", Name: "cart"}
	ps := []aggregate.Port{
		{Name: "web", Protocol: "TCP", Port: 8080, AppProtocol: "http"},
		{Name: "secure", Protocol: "TCP", Port: 8443, AppProtocol: "tls"},
		{Name: "db", Protocol: "TCP", Port: 5432},
		{Name: "dns", Protocol: "UDP", Port: 53},
	}
	objs := Desired(testConfig, k, ps, map[string]int32{"tcp-5432": 31002})
	ls := objs.ListenerSet
	if ls.Namespace != "shop" || ls.Name != "xcc-cart" || ls.Labels[objects.LabelManagedBy] != objects.ManagedByValue {
		t.Errorf("ListenerSet %s/%s labels %v", ls.Namespace, ls.Name, ls.Labels)
	}
	if p := ls.Spec.ParentRef; string(p.Name) != gwRef.Name || p.Namespace == nil || string(*p.Namespace) != gwRef.Namespace {
		t.Errorf("ListenerSet parent %+v: want the operator's Gateway only", p)
	}
	var listeners []string
	for _, l := range ls.Spec.Listeners {
		h := ""
		if l.Hostname != nil {
			h = string(*l.Hostname)
		}
		mode := ""
		if l.TLS != nil && l.TLS.Mode != nil {
			mode = string(*l.TLS.Mode)
		}
		listeners = append(listeners, fmt.Sprintf("%s %s:%d %s %s", l.Name, l.Protocol, l.Port, h, mode))
		if l.AllowedRoutes == nil || l.AllowedRoutes.Namespaces == nil || *l.AllowedRoutes.Namespaces.From != gatewayv1.NamespacesFromSame {
			t.Errorf("listener %s admits routes of other namespaces: %+v", l.Name, l.AllowedRoutes)
		}
	}
	wantListeners := []string{
		"http-8080 HTTP:80 cart.shop.svc.clusterset.local ",
		"tcp-5432 TCP:31002  ",
		"tls-8443 TLS:443 cart.shop.svc.clusterset.local Passthrough",
	}
	if !slices.Equal(listeners, wantListeners) {
		t.Errorf("listeners\n got %q\nwant %q", listeners, wantListeners)
	}
	var routes []string
	check := func(kind, ns, name string, parents []gatewayv1.ParentReference, hosts []gatewayv1.Hostname, backends []gatewayv1.BackendRef) {
		if ns != "shop" {
			t.Errorf("%s %s in namespace %s: want the export's", kind, name, ns)
		}
		for _, p := range parents {
			routes = append(routes, fmt.Sprintf("%s %s -> %s/%s#%s hosts=%v", kind, name, *p.Kind, p.Name, *p.SectionName, hosts))
			if p.Namespace != nil && string(*p.Namespace) != "shop" {
				t.Errorf("%s %s parent in namespace %s", kind, name, *p.Namespace)
			}
		}
		for _, b := range backends {
			routes[len(routes)-1] += fmt.Sprintf(" backend=%s:%d", b.Name, *b.Port)
			if b.Namespace != nil || (b.Kind != nil && *b.Kind != "Service") || (b.Group != nil && *b.Group != "") {
				t.Errorf("%s %s backend %+v: want the exported Service of its namespace", kind, name, b)
			}
		}
	}
	for _, r := range objs.HTTPRoutes {
		var b []gatewayv1.BackendRef
		for _, rule := range r.Spec.Rules {
			for _, hb := range rule.BackendRefs {
				b = append(b, hb.BackendRef)
			}
		}
		check("HTTPRoute", r.Namespace, r.Name, r.Spec.ParentRefs, r.Spec.Hostnames, b)
	}
	for _, r := range objs.TLSRoutes {
		check("TLSRoute", r.Namespace, r.Name, r.Spec.ParentRefs, r.Spec.Hostnames, r.Spec.Rules[0].BackendRefs)
	}
	for _, r := range objs.TCPRoutes {
		check("TCPRoute", r.Namespace, r.Name, r.Spec.ParentRefs, nil, r.Spec.Rules[0].BackendRefs)
	}
	wantRoutes := []string{
		"HTTPRoute xcc-cart-http-8080 -> ListenerSet/xcc-cart#http-8080 hosts=[cart.shop.svc.clusterset.local] backend=cart:8080",
		"TLSRoute xcc-cart-tls-8443 -> ListenerSet/xcc-cart#tls-8443 hosts=[cart.shop.svc.clusterset.local] backend=cart:8443",
		"TCPRoute xcc-cart-tcp-5432 -> ListenerSet/xcc-cart#tcp-5432 hosts=[] backend=cart:5432",
	}
	if !slices.Equal(routes, wantRoutes) {
		t.Errorf("routes\n got %q\nwant %q", routes, wantRoutes)
	}
}

// TestDesiredTCPWithoutPort: a TCP port that got no listener port has no
// listener and no route; the others are written.
func TestDesiredTCPWithoutPort(t *testing.T) {
	k := aggregate.Key{Namespace: "shop", Name: "cart"}
	ps := []aggregate.Port{{Name: "web", Protocol: "TCP", Port: 8080, AppProtocol: "http"}, {Name: "db", Protocol: "TCP", Port: 5432}}
	objs := Desired(testConfig, k, ps, nil)
	if n := len(objs.ListenerSet.Spec.Listeners); n != 1 || len(objs.TCPRoutes) != 0 || len(objs.HTTPRoutes) != 1 {
		t.Errorf("listeners %d, tcp routes %d, http routes %d: want 1, 0, 1", n, len(objs.TCPRoutes), len(objs.HTTPRoutes))
	}
	if !strings.HasPrefix(string(objs.ListenerSet.Spec.Listeners[0].Name), "http-") {
		t.Errorf("listener %s", objs.ListenerSet.Spec.Listeners[0].Name)
	}
}
