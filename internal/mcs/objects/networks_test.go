package objects

import (
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// networkInput is member's input for an import of ns/svc exported by "a"
// (network east, pods 10.1.0.1) and "c" (network west, pods 10.3.0.1),
// with ports http/80 and db/5432, and a's east-west gateway gw.
func networkInput(t *testing.T, member string, headless bool, gw Gateway) Input {
	t.Helper()
	res := aggregated(t, export("a", 0, headless, tcp("http", 80), tcp("db", 5432)),
		export("c", 1, headless, tcp("http", 80), tcp("db", 5432)))
	ports := []discoveryv1.EndpointPort{port("http", 8080), port("db", 5432)}
	return Input{
		Cluster: member, Namespaces: map[string]bool{ns: true}, Result: res,
		Imports: map[aggregate.Key]ImportState{key: {Endpoints: map[string][]*discoveryv1.EndpointSlice{
			"a": {slice("a1", discoveryv1.AddressTypeIPv4, ports, ep("10.1.0.1", hostname("a-0")))},
			"c": {slice("c1", discoveryv1.AddressTypeIPv4, ports, ep("10.3.0.1", hostname("c-0")))},
		}}},
		Networks: Networks{
			Of:       map[string]string{"a": "east", "b": "west", "c": "west"},
			Gateways: map[string]Gateway{"a": gw},
		},
	}
}

// readyGateway is a's gateway, Programmed at 203.0.113.10 and 2001:db8::10,
// its listener of http on 80 and of db on 31000.
func readyGateway() Gateway {
	return Gateway{
		Programmed: true,
		Addresses:  []string{"203.0.113.10", "2001:db8::10"},
		Ports: map[aggregate.Key][]GatewayPort{key: {
			{Name: "http", Protocol: "TCP", Port: 80},
			{Name: "db", Protocol: "TCP", Port: 31000},
		}},
	}
}

// TestComputeNetworks: a member of another network than a source gets
// that source's east-west gateway as its endpoints, on the listeners'
// ports, only while the gateway is Programmed with an address and per
// port only while its listener is; a member of the source's own network
// gets its pods as before; a Headless import keeps its own network's
// sources only and says which it left out.
func TestComputeNetworks(t *testing.T) {
	pods := []string{
		"a IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.1.0.1(a-0)",
		"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)",
	}
	viaGateway := []string{
		"a IPv4 ports=db/TCP/31000,http/TCP/80 eps=203.0.113.10",
		"a IPv6 ports=db/TCP/31000,http/TCP/80 eps=2001:db8::10",
		"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)",
	}
	cPods := []string{"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)"}
	cases := []struct {
		name     string
		member   string
		headless bool
		gw       func(*Gateway)
		allowed  cidr.List
		want     []string
		message  string // a part of the ServiceImport's Ready message
	}{
		{name: "a's network: a's pods; c's gateway unread, none of c", member: "d-east", want: pods[:1],
			message: "east-west gateway of cluster c is not ready"},
		{name: "other network: the exporter's gateway on its listeners' ports", member: "b", want: viaGateway},
		{name: "gateway not Programmed: no endpoint of that source", member: "b",
			gw: func(g *Gateway) { g.Programmed = false }, want: cPods, message: "east-west gateway of cluster a is not ready"},
		{name: "gateway without an address: none", member: "b",
			gw: func(g *Gateway) { g.Addresses = nil }, want: cPods, message: "east-west gateway of cluster a is not ready"},
		{name: "no gateway read at all: none", member: "b",
			gw: func(g *Gateway) { *g = Gateway{} }, want: cPods, message: "east-west gateway of cluster a is not ready"},
		{name: "a port whose listener is not ready: that port only", member: "b",
			gw: func(g *Gateway) { g.Ports[key] = g.Ports[key][:1] },
			want: []string{
				"a IPv4 ports=http/TCP/80 eps=203.0.113.10",
				"a IPv6 ports=http/TCP/80 eps=2001:db8::10",
				"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)",
			}},
		{name: "no listener ready: none", member: "b",
			gw: func(g *Gateway) { delete(g.Ports, key) }, want: cPods, message: "no listener of the east-west gateway of cluster a is ready"},
		{name: "a listener of a port the import lacks is not used", member: "b",
			gw: func(g *Gateway) {
				g.Ports[key] = append(g.Ports[key], GatewayPort{Name: "admin", Protocol: "TCP", Port: 31001})
			}, want: viaGateway},
		{name: "gateway addresses pass the allowed CIDRs as any endpoint", member: "b",
			allowed: cidr.MustParse("203.0.113.0/24,10.0.0.0/8"),
			want: []string{
				"a IPv4 ports=db/TCP/31000,http/TCP/80 eps=203.0.113.10",
				"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)",
			}},
		{name: "a gateway address that is no IP is refused", member: "b",
			gw: func(g *Gateway) { g.Addresses = []string{"gw.example.com", "203.0.113.10"} },
			want: []string{
				"a IPv4 ports=db/TCP/31000,http/TCP/80 eps=203.0.113.10",
				"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)",
			}},
		{name: "the exporter gets its own pods; c's gateway unread, none of c", member: "a",
			want:    []string{"a IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.1.0.1(a-0)"},
			message: "east-west gateway of cluster c is not ready"},
		{name: "Headless: sources of the member's network only", member: "b", headless: true,
			want:    []string{"c IPv4 headless ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)"},
			message: `cluster a is in network "east", not this member's ("west"): a Headless import holds the endpoints of its own network only`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gw := readyGateway()
			if tc.gw != nil {
				tc.gw(&gw)
			}
			in := networkInput(t, tc.member, tc.headless, gw)
			in.AllowedCIDRs = tc.allowed
			if tc.member == "d-east" {
				in.Networks.Of["d-east"] = "east"
			}
			out := Compute(in)
			if got := sliceViews(out); !slices.Equal(got, tc.want) {
				t.Errorf("slices\n got %q\nwant %q", got, tc.want)
			}
			msg := out.Imports[0].Status.Conditions[0].Message
			if tc.message != "" && !strings.Contains(msg, tc.message) {
				t.Errorf("Ready message %q: want it to say %q", msg, tc.message)
			}
			if tc.message == "" && strings.Contains(msg, "network") {
				t.Errorf("Ready message %q speaks of networks where nothing is left out", msg)
			}
		})
	}
}

// TestComputeWithoutNetworks: with no networks given every member is in
// one network, and a gateway given is not used.
func TestComputeWithoutNetworks(t *testing.T) {
	in := networkInput(t, "b", false, readyGateway())
	in.Networks.Of = nil
	want := []string{
		"a IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.1.0.1(a-0)",
		"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)",
	}
	if got := sliceViews(Compute(in)); !slices.Equal(got, want) {
		t.Errorf("slices\n got %q\nwant %q", got, want)
	}
}

// TestComputeNetworksMemo: with a Memo, an import whose gateway did not
// change is known without building it, and a gateway that loses its
// Programmed state is seen at once.
func TestComputeNetworksMemo(t *testing.T) {
	memo := NewMemo()
	in := networkInput(t, "b", false, readyGateway())
	first := ComputeWith(in, memo)
	var d uint64
	in.Skip = func(_ aggregate.Key, digest uint64) bool { d = digest; return true }
	again := ComputeWith(in, memo)
	if len(again.Skipped) != 1 || d != first.Digests[key] {
		t.Fatalf("same gateway again: skipped %v, digest %x want %x", again.Skipped, d, first.Digests[key])
	}
	gw := readyGateway()
	gw.Programmed = false
	in.Networks.Gateways["a"] = gw
	in.Skip = nil
	down := ComputeWith(in, memo)
	if got, want := sliceViews(down), []string{"c IPv4 ports=db/TCP/5432,http/TCP/8080 eps=10.3.0.1(c-0)"}; !slices.Equal(got, want) {
		t.Errorf("gateway down\n got %q\nwant %q", got, want)
	}
	if down.Digests[key] == first.Digests[key] {
		t.Error("gateway down: digest unchanged")
	}
}

// crossNetwork is the CrossNetwork condition of member's export of ns/svc
// as "<status>/<reason>: <message>", "" when it has none.
func crossNetwork(out Objects) string {
	for _, e := range out.Exports {
		for _, c := range e.Conditions {
			if c.Type == string(aggregate.ConditionCrossNetwork) {
				return string(c.Status) + "/" + c.Reason + ": " + c.Message
			}
		}
	}
	return ""
}

// TestExportCrossNetwork: an export of a member whose clusterset has
// members of other networks says whether they reach it through its
// east-west gateway, and if not, why; without other networks it says
// nothing.
func TestExportCrossNetwork(t *testing.T) {
	cases := []struct {
		name     string
		headless bool
		gw       func(*Gateway)
		networks map[string]string
		want     string // prefix of the condition
	}{
		{name: "reached through the gateway", want: `True/Routed: members of network "west" reach it through the east-west gateway at 203.0.113.10, 2001:db8::10`},
		{name: "one network: no condition", networks: map[string]string{}, want: ""},
		{name: "gateway not ready", gw: func(g *Gateway) { g.Programmed = false }, want: "False/GatewayNotReady: "},
		{name: "a listener refused", gw: func(g *Gateway) {
			g.Ports[key] = g.Ports[key][:1]
			g.Refused = map[aggregate.Key][]string{key: {"listener tcp-5432: Conflicted: True (HostnameConflict)"}}
		}, want: "False/ListenerRefused: listener tcp-5432: Conflicted: True (HostnameConflict)"},
		{name: "no listener ready", gw: func(g *Gateway) { delete(g.Ports, key) }, want: "False/ListenerRefused: "},
		{name: "Headless", headless: true, want: `False/Headless: a Headless export crosses no network: members of network "west" get none of its endpoints`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gw := readyGateway()
			if tc.gw != nil {
				tc.gw(&gw)
			}
			in := networkInput(t, "a", tc.headless, gw)
			if tc.networks != nil {
				in.Networks.Of = tc.networks
			}
			got := crossNetwork(Compute(in))
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Errorf("CrossNetwork %q, want %q", got, tc.want)
			}
		})
	}
}
