package eastwest

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// Config is the ClusterSet's east-west gateway: the operator's Gateway in
// each exporting member, the clusterset zone (the Host and SNI a client
// sends), and the listener ports.
type Config struct {
	Gateway           Ref
	Zone              string
	HTTPPort, TLSPort int32
	TCP               Range
}

// Objects are the controller's Gateway API objects of one export in its
// member, all in the export's namespace.
type Objects struct {
	ListenerSet *gatewayv1.ListenerSet
	HTTPRoutes  []*gatewayv1.HTTPRoute
	TLSRoutes   []*gatewayv1.TLSRoute
	TCPRoutes   []*gatewayv1.TCPRoute
}

// Hostname is the clusterset name of export k, the Host or SNI its HTTP
// and TLS listeners match.
func Hostname(k aggregate.Key, zone string) string {
	return k.Name + "." + k.Namespace + ".svc." + zone
}

// Desired are the objects of export k with import ports ports, its TCP
// listeners on the ports tcp gives them (Allocate): one ListenerSet whose
// one parent is cfg.Gateway, a listener per port that admits routes of
// its own namespace only, and a route per listener attached to it alone,
// whose one backend is the exported Service at that port. A TCP port tcp
// has none of gets neither; a UDP or SCTP port neither.
func Desired(cfg Config, k aggregate.Key, ports []aggregate.Port, tcp map[string]int32) Objects {
	set := &gatewayv1.ListenerSet{ObjectMeta: objectMeta(k, SetName(k.Name))}
	set.Spec.ParentRef = gatewayv1.ParentGatewayReference{
		Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")),
		Name: gatewayv1.ObjectName(cfg.Gateway.Name), Namespace: ptr.To(gatewayv1.Namespace(cfg.Gateway.Namespace)),
	}
	out := Objects{ListenerSet: set}
	host := gatewayv1.Hostname(Hostname(k, cfg.Zone))
	sorted := slices.SortedFunc(slices.Values(ports), func(a, b aggregate.Port) int {
		return cmp.Compare(ListenerName(a), ListenerName(b))
	})
	for _, p := range sorted {
		name := ListenerName(p)
		l := gatewayv1.ListenerEntry{
			Name:          gatewayv1.SectionName(name),
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromSame)}},
		}
		parent := []gatewayv1.ParentReference{{
			Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("ListenerSet")),
			Name: gatewayv1.ObjectName(set.Name), SectionName: ptr.To(gatewayv1.SectionName(name)),
		}}
		// Every field the CRDs default is set as they default it: what
		// the member gives back then equals what was written, and the
		// next write has nothing to update.
		backend := gatewayv1.BackendRef{Weight: ptr.To(int32(1)), BackendObjectReference: gatewayv1.BackendObjectReference{
			Group: ptr.To(gatewayv1.Group("")), Kind: ptr.To(gatewayv1.Kind("Service")),
			Name: gatewayv1.ObjectName(k.Name), Port: ptr.To(p.Port),
		}}
		routeMeta := objectMeta(k, SetName(k.Name)+"-"+name)
		switch KindOf(p) {
		case KindHTTP:
			l.Protocol, l.Port, l.Hostname = gatewayv1.HTTPProtocolType, cfg.HTTPPort, ptr.To(host)
			r := &gatewayv1.HTTPRoute{ObjectMeta: routeMeta}
			r.Spec.ParentRefs, r.Spec.Hostnames = parent, []gatewayv1.Hostname{host}
			r.Spec.Rules = []gatewayv1.HTTPRouteRule{{
				Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/")}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: backend}},
			}}
			out.HTTPRoutes = append(out.HTTPRoutes, r)
		case KindTLS:
			l.Protocol, l.Port, l.Hostname = gatewayv1.TLSProtocolType, cfg.TLSPort, ptr.To(host)
			l.TLS = &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModePassthrough)}
			r := &gatewayv1.TLSRoute{ObjectMeta: routeMeta}
			r.Spec.ParentRefs, r.Spec.Hostnames = parent, []gatewayv1.Hostname{host}
			r.Spec.Rules = []gatewayv1.TLSRouteRule{{BackendRefs: []gatewayv1.BackendRef{backend}}}
			out.TLSRoutes = append(out.TLSRoutes, r)
		case KindTCP:
			port, ok := tcp[name]
			if !ok {
				continue
			}
			l.Protocol, l.Port = gatewayv1.TCPProtocolType, port
			r := &gatewayv1.TCPRoute{ObjectMeta: routeMeta}
			r.Spec.ParentRefs = parent
			r.Spec.Rules = []gatewayv1.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{backend}}}
			out.TCPRoutes = append(out.TCPRoutes, r)
		default:
			continue
		}
		set.Spec.Listeners = append(set.Spec.Listeners, l)
	}
	return out
}

// objectMeta is the metadata of the controller's object name of export k.
func objectMeta(k aggregate.Key, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: k.Namespace, Name: name, Labels: SetLabels(k.Name)}
}
