package contract

import (
	"errors"
	"strings"
	"testing"
)

func TestParseGrants(t *testing.T) {
	tests := []struct {
		flag string
		want string // String() of the grants; "" with wantErr
		err  string // part of the error; "" when accepted
	}{
		{"", "", ""},
		{"shop=shop.xcc.test", "shop=shop.xcc.test", ""},
		{" shop = Shop.Example.XCC.test. ; dev-team=dev.xcc.test;", "dev-team=dev.xcc.test;shop=shop.example.xcc.test", ""},
		{"shop=shop.xcc.test;shop=shop.xcc.test", "shop=shop.xcc.test", ""},
		// Two grants nest: a name of one would be the other's suffix or above it.
		{"a=shop.xcc.test;b=eu.shop.xcc.test", "", "overlaps"},
		{"a=eu.shop.xcc.test;b=shop.xcc.test", "", "overlaps"},
		{"a=shop.xcc.test;b=shop.xcc.test", "", "overlaps"},
		{"a=shop.xcc.test;a=eu.shop.xcc.test", "", "overlaps"},
		// Reserved subtrees and the zone itself.
		{"a=names.xcc.test", "", "reserved"},
		{"a=b.names.xcc.test", "", "reserved"},
		{"a=x.a.clusters.xcc.test", "", "reserved"},
		{"a=gateways.xcc.test", "", "reserved"},
		{"a=services.xcc.test", "", "reserved"},
		// The DNS server's own names: the etcd plugin keeps the zone's NS
		// records at ns.dns.<zone>.
		{"team=dns.xcc.test", "", "reserved"},
		{"team=x.dns.xcc.test", "", "reserved"},
		{"team=ns.xcc.test", "", "reserved"},
		{"a=xcc.test", "", "not strictly inside"},
		{"a=example.com", "", "not strictly inside"},
		{"a=any.xcc.test", "", "wildcard"},
		{"a=*.xcc.test", "", "suffix"},
		{"any=shop.xcc.test", "", "namespace"},
		{"A_b=shop.xcc.test", "", "namespace"},
		{"shop.xcc.test", "", "want <namespace>=<suffix>"},
		{"a=" + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 60) + ".xcc.test", "", "too long"},
	}
	for _, tt := range tests {
		g, err := ParseGrants(tt.flag, "xcc.test")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseGrants(%q) = %v, want an error with %q", tt.flag, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseGrants(%q): %v", tt.flag, err)
			continue
		}
		if got := g.String(); got != tt.want {
			t.Errorf("ParseGrants(%q) = %q, want %q", tt.flag, got, tt.want)
		}
	}
}

// NameHostname is the boundary for a tenant's annotation: only names
// of the GatewayDNS's namespace's grants, nothing else.
func TestNameHostname(t *testing.T) {
	grants, err := ParseGrants("dev-team=shop.xcc.test;other=other.xcc.test", "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value, want string // want "": refused
		refused     bool   // ErrNameRefused (a valid name outside the grants)
	}{
		{"web", "web.dev-team.names.xcc.test", false},
		{"Web.", "web.dev-team.names.xcc.test", false},
		{"web.dev-team.names.xcc.test", "web.dev-team.names.xcc.test", false},
		{"web.dev-team.names.xcc.test.", "web.dev-team.names.xcc.test", false},
		{"cart.shop.xcc.test", "cart.shop.xcc.test", false},
		{"CART.Shop.xcc.test", "cart.shop.xcc.test", false},
		// Another namespace's names and grants.
		{"web.other.names.xcc.test", "", true},
		{"x.other.xcc.test", "", true},
		// Not exactly one label below a grant: the suffix, or below a name.
		{"shop.xcc.test", "", true},
		{"a.cart.shop.xcc.test", "", true},
		{"a.web.dev-team.names.xcc.test", "", true},
		// The DNS server's own names and the other structured subtrees.
		{"ns.dns.xcc.test", "", true},
		{"x.ns.xcc.test", "", true},
		{"api.c.dev-team.clusters.xcc.test", "", true},
		{"dev-team.names.xcc.test", "", true},
		// Reserved subtrees, the apex, outside the zone.
		{"api.a.dev-team.clusters.xcc.test", "", true},
		{"x.gw.dev-team.gateways.xcc.test", "", true},
		{"gw.dev-team.services.xcc.test", "", true},
		{"evil.xcc.test", "", true},
		{"xcc.test", "", false},
		{"web.example.com", "", false},
		// Wildcards, the etcd plugin's wildcard label, not names.
		{"*", "", false},
		{"*.shop.xcc.test", "", false},
		{"any", "", false},
		{"any.shop.xcc.test", "", false},
		{"", "", false},
		{"a b", "", false},
		{"a_b", "", false},
		{"-a", "", false},
		{strings.Repeat("a", 64), "", false},
		{strings.Repeat("a", 64) + ".shop.xcc.test", "", false},
	}
	for _, tt := range tests {
		got, err := NameHostname(tt.value, "dev-team", "xcc.test", grants)
		if tt.want != "" {
			if err != nil || got != tt.want {
				t.Errorf("NameHostname(%q) = %q, %v; want %q", tt.value, got, err, tt.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("NameHostname(%q) = %q, want refused", tt.value, got)
			continue
		}
		if errors.Is(err, ErrNameRefused) != tt.refused {
			t.Errorf("NameHostname(%q): %v; ErrNameRefused = %v, want %v", tt.value, err, !tt.refused, tt.refused)
		}
	}
}

// serve reads a granted name only from a slice of the granted namespace.
func TestParseHostnameGranted(t *testing.T) {
	grants, err := ParseGrants("dev-team=shop.xcc.test", "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		hostname, namespace string
		ok                  bool
	}{
		{"cart.shop.xcc.test", "dev-team", true},
		{"cart.shop.xcc.test", "other", false},
		{"*.shop.xcc.test", "dev-team", false},
		{"a.cart.shop.xcc.test", "dev-team", false},
		{"shop.xcc.test", "dev-team", false},
		{"web.dev-team.names.xcc.test", "dev-team", true},
		{"*.gateway.a.dev-team.clusters.xcc.test", "dev-team", true},
	} {
		h, err := ParseHostnameGranted(tt.hostname, tt.namespace, "gw", "xcc.test", grants)
		if (err == nil) != tt.ok {
			t.Errorf("ParseHostnameGranted(%q, %q) = %+v, %v; want ok %v", tt.hostname, tt.namespace, h, err, tt.ok)
		}
		if tt.ok && tt.hostname == "cart.shop.xcc.test" && (h.Kind != KindName || h.Name != "cart.shop.xcc.test") {
			t.Errorf("ParseHostnameGranted(%q) = %+v, want KindName", tt.hostname, h)
		}
		if _, err := ParseHostname(tt.hostname, tt.namespace, "gw", "xcc.test"); err == nil && tt.hostname == "cart.shop.xcc.test" {
			t.Errorf("ParseHostname(%q) without grants accepted it", tt.hostname)
		}
	}
}
