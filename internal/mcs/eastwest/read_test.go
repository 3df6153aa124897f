package eastwest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

var (
	gwRef = Ref{Namespace: "xcc-dns-east-west", Name: "east-west"}
	cart  = aggregate.Key{Namespace: "shop", Name: "cart"}
	ports = []aggregate.Port{
		{Name: "web", Protocol: "TCP", Port: 80, AppProtocol: "http"},
		{Name: "db", Protocol: "TCP", Port: 5432},
		{Name: "dns", Protocol: "UDP", Port: 53},
	}
)

func cond(t string, s metav1.ConditionStatus, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, ObservedGeneration: gen, Reason: t}
}

func gateway(edit ...func(*gatewayv1.Gateway)) *gatewayv1.Gateway {
	g := &gatewayv1.Gateway{}
	g.Namespace, g.Name, g.Generation = gwRef.Namespace, gwRef.Name, 3
	g.Status.Conditions = []metav1.Condition{cond("Accepted", "True", 3), cond("Programmed", "True", 3)}
	g.Status.Addresses = []gatewayv1.GatewayStatusAddress{
		{Type: ptr.To(gatewayv1.IPAddressType), Value: "203.0.113.10"},
		{Value: "2001:db8::10"},
		{Type: ptr.To(gatewayv1.HostnameAddressType), Value: "gw.example.com"},
	}
	for _, f := range edit {
		f(g)
	}
	return g
}

// listenerSet is the controller's ListenerSet of shop/cart, its listeners
// http-80 on 80 and tcp-5432 on 31000, all ready.
func listenerSet(edit ...func(*gatewayv1.ListenerSet)) *gatewayv1.ListenerSet {
	s := &gatewayv1.ListenerSet{}
	s.Namespace, s.Name, s.Generation = cart.Namespace, SetName(cart.Name), 1
	s.Labels = SetLabels(cart.Name)
	s.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(gwRef.Name), Namespace: ptr.To(gatewayv1.Namespace(gwRef.Namespace))}
	s.Spec.Listeners = []gatewayv1.ListenerEntry{
		{Name: "http-80", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
		{Name: "tcp-5432", Port: 31000, Protocol: gatewayv1.TCPProtocolType},
	}
	s.Status.Conditions = []metav1.Condition{cond("Accepted", "True", 1), cond("Programmed", "True", 1)}
	for _, l := range s.Spec.Listeners {
		s.Status.Listeners = append(s.Status.Listeners, gatewayv1.ListenerEntryStatus{Name: l.Name, Conditions: []metav1.Condition{
			cond("Accepted", "True", 1), cond("Programmed", "True", 1), cond("Conflicted", "False", 1)}})
	}
	for _, f := range edit {
		f(s)
	}
	return s
}

func view(g objects.Gateway) string {
	v := fmt.Sprintf("programmed=%v addresses=%s", g.Programmed, strings.Join(g.Addresses, ","))
	for _, p := range g.Ports[cart] {
		v += fmt.Sprintf(" %s/%s:%d", p.Name, p.Protocol, p.Port)
	}
	return v
}

func listenerCond(name, typ string, s metav1.ConditionStatus) func(*gatewayv1.ListenerSet) {
	return func(ls *gatewayv1.ListenerSet) {
		for i := range ls.Status.Listeners {
			if string(ls.Status.Listeners[i].Name) != name {
				continue
			}
			for j := range ls.Status.Listeners[i].Conditions {
				if ls.Status.Listeners[i].Conditions[j].Type == typ {
					ls.Status.Listeners[i].Conditions[j].Status = s
					ls.Status.Listeners[i].Conditions[j].Message = "port taken by tenant/squat"
				}
			}
		}
	}
}

// TestRead: the importers of other networks get the gateway's IP
// addresses while it is Programmed for its generation, and per export
// the ports of the listeners of its own ListenerSet that are accepted,
// programmed and not conflicted; what is not used is said.
func TestRead(t *testing.T) {
	ready := "programmed=true addresses=203.0.113.10,2001:db8::10 db/TCP:31000 web/TCP:80"
	cases := []struct {
		name    string
		gw      *gatewayv1.Gateway
		sets    []*gatewayv1.ListenerSet
		want    string
		refused string // a part of the export's refusal, if any
	}{
		{"ready", gateway(), []*gatewayv1.ListenerSet{listenerSet()}, ready, "port dns (UDP 53)"},
		{"no Gateway", nil, []*gatewayv1.ListenerSet{listenerSet()}, "programmed=false addresses= db/TCP:31000 web/TCP:80", ""},
		{"Programmed False", gateway(func(g *gatewayv1.Gateway) { g.Status.Conditions[1].Status = "False" }),
			[]*gatewayv1.ListenerSet{listenerSet()}, "programmed=false addresses=203.0.113.10,2001:db8::10 db/TCP:31000 web/TCP:80", ""},
		{"Programmed of an older generation", gateway(func(g *gatewayv1.Gateway) { g.Generation = 4 }),
			[]*gatewayv1.ListenerSet{listenerSet()}, "programmed=false addresses=203.0.113.10,2001:db8::10 db/TCP:31000 web/TCP:80", ""},
		{"an address that is no IP is not taken", gateway(func(g *gatewayv1.Gateway) {
			g.Status.Addresses = append(g.Status.Addresses, gatewayv1.GatewayStatusAddress{Value: "not-an-ip"})
		}), []*gatewayv1.ListenerSet{listenerSet()}, ready, ""},
		{"no ListenerSet", gateway(), nil, "programmed=true addresses=203.0.113.10,2001:db8::10", "no ListenerSet"},
		{"ListenerSet not Accepted", gateway(), []*gatewayv1.ListenerSet{listenerSet(func(s *gatewayv1.ListenerSet) {
			s.Status.Conditions[0].Status = "False"
			s.Status.Conditions[0].Message = "namespace shop not allowed"
		})}, "programmed=true addresses=203.0.113.10,2001:db8::10", "namespace shop not allowed"},
		{"a listener Conflicted: that port only", gateway(), []*gatewayv1.ListenerSet{listenerSet(listenerCond("tcp-5432", "Conflicted", "True"))},
			"programmed=true addresses=203.0.113.10,2001:db8::10 web/TCP:80", "listener tcp-5432: Conflicted: True (Conflicted: port taken by tenant/squat)"},
		{"a listener not Programmed: that port only", gateway(), []*gatewayv1.ListenerSet{listenerSet(listenerCond("http-80", "Programmed", "False"))},
			"programmed=true addresses=203.0.113.10,2001:db8::10 db/TCP:31000", "listener http-80: not Programmed"},
		{"a listener without status: not used", gateway(), []*gatewayv1.ListenerSet{listenerSet(func(s *gatewayv1.ListenerSet) { s.Status.Listeners = s.Status.Listeners[:1] })},
			"programmed=true addresses=203.0.113.10,2001:db8::10 web/TCP:80", "listener tcp-5432: no status"},
		{"a ListenerSet of another parent is not the export's", gateway(), []*gatewayv1.ListenerSet{listenerSet(func(s *gatewayv1.ListenerSet) {
			s.Spec.ParentRef.Name = "other"
		})}, "programmed=true addresses=203.0.113.10,2001:db8::10", "no ListenerSet"},
		{"a tenant's ListenerSet (not labelled the controller's) is not used", gateway(), []*gatewayv1.ListenerSet{listenerSet(func(s *gatewayv1.ListenerSet) {
			s.Labels = nil
		})}, "programmed=true addresses=203.0.113.10,2001:db8::10", "no ListenerSet"},
		{"a listener of the wrong protocol for its name is not used", gateway(), []*gatewayv1.ListenerSet{listenerSet(func(s *gatewayv1.ListenerSet) {
			s.Spec.Listeners[0].Protocol = gatewayv1.TCPProtocolType
		})}, "programmed=true addresses=203.0.113.10,2001:db8::10 db/TCP:31000", "listener http-80: protocol TCP, want HTTP"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Read(gwRef, tc.gw, tc.sets, map[aggregate.Key][]aggregate.Port{cart: ports})
			if v := view(got.Gateway); v != tc.want {
				t.Errorf("got  %s\nwant %s", v, tc.want)
			}
			refused := strings.Join(got.Refused[cart], "; ")
			if tc.refused != "" && !strings.Contains(refused, tc.refused) {
				t.Errorf("refused %q: want it to say %q", refused, tc.refused)
			}
		})
	}
}

// TestKindOf: appProtocol picks the listener; UDP crosses no network.
func TestKindOf(t *testing.T) {
	var got []string
	for _, p := range []aggregate.Port{
		{Protocol: "TCP", AppProtocol: "http"}, {Protocol: "TCP", AppProtocol: "kubernetes.io/h2c"},
		{Protocol: "TCP", AppProtocol: "tls"}, {Protocol: "TCP", AppProtocol: "https"},
		{Protocol: "TCP"}, {Protocol: "TCP", AppProtocol: "grpc"}, {Protocol: "UDP"}, {Protocol: "SCTP"},
	} {
		got = append(got, string(KindOf(p)))
	}
	if want := []string{"http", "http", "tls", "tls", "tcp", "tcp", "", ""}; !slices.Equal(got, want) {
		t.Errorf("kinds %q, want %q", got, want)
	}
}

// A member's gateway writes its conditions: a message of a megabyte with
// terminal escapes is quoted as one printable line within maxMessage.
func TestMessageOfHostileCondition(t *testing.T) {
	c := metav1.Condition{Status: "False", Reason: "Refused", Message: "\x1b[2J" + strings.Repeat("x", 1<<20)}
	got := message(&c)
	if strings.ContainsRune(got, '\x1b') || len(got) > maxMessage+len("False ()") {
		t.Errorf("message of %d bytes, escape kept %v: %.80q", len(got), strings.ContainsRune(got, '\x1b'), got)
	}
}
