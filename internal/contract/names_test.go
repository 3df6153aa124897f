package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

func TestValidateLabel(t *testing.T) {
	for s, want := range map[string]bool{
		"cluster-a": true, "a": true, "0a": true, strings.Repeat("a", 63): true, "anyhow": true, "many": true,
		"": false, "a.b": false, "-a": false, "a-": false, "A": false, "a_b": false, strings.Repeat("a", 64): false,
		"any": false, "*": false,
	} {
		if got := ValidateLabel(s) == nil; got != want {
			t.Errorf("ValidateLabel(%q) ok = %v, want %v", s, got, want)
		}
	}
}

// ParseHostname is the boundary: a slice of namespace dev-team publishes
// exactly its clusters' gateway and api names, nothing else.
func TestParseHostname(t *testing.T) {
	tests := []struct {
		hostname, namespace string
		want                Hostname // zero: refused
	}{
		{"*.gateway.cluster-a.dev-team.clusters.xcc.test", "dev-team",
			Hostname{Name: "gateway.cluster-a.dev-team.clusters.xcc.test", Kind: KindGateway, Cluster: "cluster-a", Namespace: "dev-team"}},
		{"*.Gateway.Cluster-A.dev-team.clusters.xcc.test.", "dev-team",
			Hostname{Name: "gateway.cluster-a.dev-team.clusters.xcc.test", Kind: KindGateway, Cluster: "cluster-a", Namespace: "dev-team"}},
		{"api.cluster-a.dev-team.clusters.xcc.test", "dev-team",
			Hostname{Name: "api.cluster-a.dev-team.clusters.xcc.test", Kind: KindAPI, Cluster: "cluster-a", Namespace: "dev-team"}},
		// Another namespace's names.
		{"*.gateway.cluster-a.other-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"api.cluster-a.other-team.clusters.xcc.test", "dev-team", Hostname{}},
		// Sub-names that the etcd plugin's prefix read would add to a gateway's answers.
		{"evil.gateway.cluster-b.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"*.evil.gateway.cluster-b.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"x5f0c0a1b2c3d4e5f.gateway.cluster-b.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		// Wrong wildcard use: a gateway is a wildcard, an api name is not.
		{"gateway.cluster-a.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"*.api.cluster-a.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		// Empty non-terminals, the apex, other kinds and other zones.
		{"cluster-a.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"*.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"*.clusters.xcc.test", "dev-team", Hostname{}},
		{"xcc.test", "dev-team", Hostname{}},
		{"*.xcc.test", "dev-team", Hostname{}},
		{"web.cluster-a.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"*.gateway.cluster-a.dev-team.clusters.example.com", "dev-team", Hostname{}},
		{"*.gateway.cluster-a.dev-team.xcc.test", "dev-team", Hostname{}},
		// The etcd plugin's wildcard labels.
		{"*.gateway.any.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"*.gateway.cluster-a.any.clusters.xcc.test", "any", Hostname{}},
		{"*.gateway.*.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		// Not names at all.
		{"", "dev-team", Hostname{}},
		{"*.gateway.a.b.c.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		// The multi-cluster gateway name: only the slice's own GatewayDNS's.
		{"*.gw.dev-team.gateways.xcc.test", "dev-team",
			Hostname{Name: "gw.dev-team.gateways.xcc.test", Kind: KindGateways, GatewayDNS: "gw", Namespace: "dev-team"}},
		{"*.GW.Dev-Team.gateways.xcc.test.", "dev-team",
			Hostname{Name: "gw.dev-team.gateways.xcc.test", Kind: KindGateways, GatewayDNS: "gw", Namespace: "dev-team"}},
		{"*.other-gw.dev-team.gateways.xcc.test", "dev-team", Hostname{}},
		{"*.gw.other-team.gateways.xcc.test", "dev-team", Hostname{}},
		{"gw.dev-team.gateways.xcc.test", "dev-team", Hostname{}},
		{"*.x.gw.dev-team.gateways.xcc.test", "dev-team", Hostname{}},
		{"x.gw.dev-team.gateways.xcc.test", "dev-team", Hostname{}},
		{"*.dev-team.gateways.xcc.test", "dev-team", Hostname{}},
		{"*.gateways.xcc.test", "dev-team", Hostname{}},
		{"*.any.dev-team.gateways.xcc.test", "dev-team", Hostname{}},
		// Names Services claim: one label in the namespace's own subtree.
		{"shop.dev-team.names.xcc.test", "dev-team",
			Hostname{Name: "shop.dev-team.names.xcc.test", Kind: KindName, Namespace: "dev-team"}},
		{"shop.other-team.names.xcc.test", "dev-team", Hostname{}},
		{"*.shop.dev-team.names.xcc.test", "dev-team", Hostname{}},
		{"*.dev-team.names.xcc.test", "dev-team", Hostname{}},
		{"a.shop.dev-team.names.xcc.test", "dev-team", Hostname{}},
		{"dev-team.names.xcc.test", "dev-team", Hostname{}},
		{"any.dev-team.names.xcc.test", "dev-team", Hostname{}},
		{"shop.dev-team.names.example.com", "dev-team", Hostname{}},
		{"*.gateway.cluster_a.dev-team.clusters.xcc.test", "dev-team", Hostname{}},
		{"*.gateway." + strings.Repeat("a", 64) + ".dev-team.clusters.xcc.test", "dev-team", Hostname{}},
	}
	for _, tt := range tests {
		got, err := ParseHostname(tt.hostname, tt.namespace, "gw", "xcc.test")
		if tt.want == (Hostname{}) {
			if err == nil {
				t.Errorf("ParseHostname(%q, %q) = %+v, want refused", tt.hostname, tt.namespace, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseHostname(%q, %q) = %+v, %v; want %+v", tt.hostname, tt.namespace, got, err, tt.want)
		}
	}
}

func TestParseHostnameOtherNamespaceWrapsErrOutsideSubtree(t *testing.T) {
	_, err := ParseHostname("*.gateway.cluster-a.other.clusters.xcc.test", "dev-team", "gw", "xcc.test")
	if !errors.Is(err, ErrOutsideSubtree) {
		t.Errorf("err = %v, want ErrOutsideSubtree", err)
	}
}

// What the controller builds, ParseHostname accepts for the same namespace.
func TestBuiltNamesParse(t *testing.T) {
	for _, h := range []string{GatewayHostname("cluster-a", "dev-team", "xcc.test"), APIHostname("cluster-a", "dev-team", "XCC.test."),
		GatewaysHostname("gw", "dev-team", "xcc.test"), DefaultNameHostname("shop", "dev-team", "xcc.test.")} {
		if _, err := ParseHostname(h, "dev-team", "gw", "xcc.test"); err != nil {
			t.Errorf("ParseHostname(%q): %v", h, err)
		}
	}
}

func TestParseRef(t *testing.T) {
	for ref, ok := range map[string]bool{
		"projectcontour/envoy": true, "dev-team/gw": true,
		"": false, "envoy": false, "/envoy": false, "ns/": false, "a/b/c": false, "Ns/envoy": false, "ns/a.b": false,
	} {
		_, _, err := ParseRef(ref)
		if (err == nil) != ok {
			t.Errorf("ParseRef(%q) err = %v, want ok %v", ref, err, ok)
		}
	}
}

func TestSliceName(t *testing.T) {
	long := strings.Repeat("a", 60)
	names := map[string]bool{}
	for _, in := range []struct {
		ns, gd, cluster string
		kind            Kind
		family          string
	}{
		{"dev-team", "gw", "cluster-a", KindGateway, "ipv4"},
		{"dev-team", "gw", "cluster-a", KindGateway, "ipv6"},
		{"dev-team", "gw", "cluster-a", KindAPI, "ipv4"},
		{"dev-team", "gw-cluster", "a", KindGateway, "ipv4"}, // same readable prefix as gw + cluster-a
		{"dev-team", long, long, KindGateway, "ipv4"},
		{"dev-team", long, long + "b", KindGateway, "ipv4"},
		{"dev-team", "my.gw", "cluster-a", KindGateway, "fqdn"},
	} {
		n := SliceName(in.ns, in.gd, in.cluster, in.kind, in.family)
		if len(n) > 63 || skydnsrecord.ValidateName(n) != nil {
			t.Errorf("SliceName%v = %q: invalid", in, n)
		}
		if n != SliceName(in.ns, in.gd, in.cluster, in.kind, in.family) {
			t.Errorf("SliceName%v not deterministic", in)
		}
		if names[n] {
			t.Errorf("SliceName%v = %q collides", in, n)
		}
		names[n] = true
	}
}
