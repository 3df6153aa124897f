package eastwest

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

func key(ns, name string) aggregate.Key { return aggregate.Key{Namespace: ns, Name: name} }

// ownSetWith is the controller's ListenerSet of k holding tcp listeners
// name=port.
func ownSetWith(k aggregate.Key, listeners map[string]int32) *gatewayv1.ListenerSet {
	s := &gatewayv1.ListenerSet{}
	s.Namespace, s.Name, s.Labels = k.Namespace, SetName(k.Name), SetLabels(k.Name)
	s.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(gwRef.Name), Namespace: ptr.To(gatewayv1.Namespace(gwRef.Namespace))}
	for n, p := range listeners {
		s.Spec.Listeners = append(s.Spec.Listeners, gatewayv1.ListenerEntry{Name: gatewayv1.SectionName(n), Port: p, Protocol: gatewayv1.TCPProtocolType})
	}
	return s
}

func allocView(a Allocation) string {
	var v []string
	for _, k := range a.Keys() {
		v = append(v, fmt.Sprintf("%s/%s:%v", k.Namespace, k.Name, a.Ports[k]))
	}
	return strings.Join(v, " ")
}

// TestAllocate: a TCP port keeps the listener port its ListenerSet holds
// in the member, so a restart allocates nothing anew; a new one gets the
// lowest port nobody's listener holds; a port of the Gateway's own
// listeners or of a tenant's ListenerSet is never given; a range used up
// refuses that port only.
func TestAllocate(t *testing.T) {
	db := aggregate.Port{Name: "db", Protocol: "TCP", Port: 5432}
	redis := aggregate.Port{Name: "redis", Protocol: "TCP", Port: 6379}
	web := aggregate.Port{Name: "web", Protocol: "TCP", Port: 80, AppProtocol: "http"}
	a, b, c := key("shop", "a"), key("shop", "b"), key("team2", "c")
	r := Range{First: 31000, Last: 31002}
	gw := gateway(func(g *gatewayv1.Gateway) {
		g.Spec.Listeners = []gatewayv1.Listener{{Name: "web", Port: 80, Protocol: gatewayv1.HTTPProtocolType}, {Name: "pinned", Port: 31000, Protocol: gatewayv1.TCPProtocolType}}
	})
	tenant := ownSetWith(key("team2", "squat"), map[string]int32{"tcp-1": 31001})
	tenant.Labels = nil
	cases := []struct {
		name    string
		exports map[aggregate.Key][]aggregate.Port
		sets    []*gatewayv1.ListenerSet
		want    string
		refused string
	}{
		{"new: lowest free, past the Gateway's and a tenant's",
			map[aggregate.Key][]aggregate.Port{a: {db, web}}, []*gatewayv1.ListenerSet{tenant},
			"shop/a:map[tcp-5432:31002]", ""},
		{"held: kept, whatever the order of keys",
			map[aggregate.Key][]aggregate.Port{a: {db}, b: {db}}, []*gatewayv1.ListenerSet{ownSetWith(b, map[string]int32{"tcp-5432": 31001})},
			"shop/a:map[tcp-5432:31002] shop/b:map[tcp-5432:31001]", ""},
		{"range used up: that port refused only",
			map[aggregate.Key][]aggregate.Port{a: {db, redis}, c: {db}}, nil,
			"shop/a:map[tcp-5432:31001 tcp-6379:31002] team2/c:map[]", "team2/c: port db (TCP 5432): no free port in 31000-31002"},
		{"a held port outside the range is given anew",
			map[aggregate.Key][]aggregate.Port{a: {db}}, []*gatewayv1.ListenerSet{ownSetWith(a, map[string]int32{"tcp-5432": 40000})},
			"shop/a:map[tcp-5432:31001]", ""},
		{"a held port a tenant's listener holds too is given anew",
			map[aggregate.Key][]aggregate.Port{a: {db}}, []*gatewayv1.ListenerSet{ownSetWith(a, map[string]int32{"tcp-5432": 31001}), tenant},
			"shop/a:map[tcp-5432:31002]", ""},
		{"two own sets holding one port (edited by hand): the first keeps it",
			map[aggregate.Key][]aggregate.Port{a: {db}, b: {db}},
			[]*gatewayv1.ListenerSet{ownSetWith(b, map[string]int32{"tcp-5432": 31001}), ownSetWith(a, map[string]int32{"tcp-5432": 31001})},
			"shop/a:map[tcp-5432:31001] shop/b:map[tcp-5432:31002]", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Allocate(gwRef, r, gw, tc.sets, tc.exports)
			if v := allocView(got); v != tc.want {
				t.Errorf("got  %s\nwant %s", v, tc.want)
			}
			var refused []string
			for _, k := range got.Keys() {
				for _, why := range got.Refused[k] {
					refused = append(refused, k.Namespace+"/"+k.Name+": "+why)
				}
			}
			if all := strings.Join(refused, "; "); all != tc.refused {
				t.Errorf("refused %q, want %q", all, tc.refused)
			}
		})
	}
}
