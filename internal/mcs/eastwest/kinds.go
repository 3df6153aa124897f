package eastwest

import (
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// Kind is how an exported port crosses networks.
type Kind string

// The kinds of listener, by the import port's appProtocol.
const (
	// KindHTTP is an HTTP listener matching the clusterset name as Host,
	// with an HTTPRoute.
	KindHTTP Kind = "http"
	// KindTLS is a TLS passthrough listener matching it as SNI, with a
	// TLSRoute.
	KindTLS Kind = "tls"
	// KindTCP is a TCP listener on a port of its own, with a TCPRoute.
	KindTCP Kind = "tcp"
	// KindNone is a port that does not cross networks (UDP, SCTP).
	KindNone Kind = ""
)

// KindOf is the kind of listener of import port p.
func KindOf(p aggregate.Port) Kind {
	if p.Protocol != "TCP" {
		return KindNone
	}
	switch p.AppProtocol {
	case "http", "kubernetes.io/h2c":
		return KindHTTP
	case "tls", "https":
		return KindTLS
	}
	return KindTCP
}

// ListenerName is the name of the listener of import port p in its
// export's ListenerSet: its kind and port number, unique among the TCP
// ports of a Service, and a valid section name whatever the port's name.
func ListenerName(p aggregate.Port) string {
	return string(KindOf(p)) + "-" + strconv.Itoa(int(p.Port))
}

// gvkOf is the group, version and kind of one of the objects Desired
// makes, which typed objects do not carry.
func gvkOf(o runtime.Object) schema.GroupVersionKind {
	kind := "ListenerSet"
	switch o.(type) {
	case *gatewayv1.HTTPRoute:
		kind = "HTTPRoute"
	case *gatewayv1.TLSRoute:
		kind = "TLSRoute"
	case *gatewayv1.TCPRoute:
		kind = "TCPRoute"
	}
	return schema.GroupVersionKind{Group: gatewayv1.GroupVersion.Group, Version: gatewayv1.GroupVersion.Version, Kind: kind}
}
