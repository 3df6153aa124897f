package contract

import (
	"strings"
	"testing"
)

// Every name the contract publishes is one the grammar accepts, stored
// where the contract stores it.
func TestPublishedNamesAreOfTheGrammar(t *testing.T) {
	grants, err := ParseGrants("dev-team=shop.eu.xcc.test", "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	shapes := Shapes("xcc.test", grants)
	x := HeadlessHostname("db", "dev-team", "xcc.test")
	for name, stored := range map[string]string{
		strings.TrimPrefix(GatewayHostname("cluster-a", "dev-team", "xcc.test"), "*."):    "gateway.cluster-a.dev-team.clusters.xcc.test",
		"kuard." + strings.TrimPrefix(GatewayHostname("c", "dev-team", "xcc.test"), "*."): "gateway.c.dev-team.clusters.xcc.test",
		APIHostname("cluster-a", "dev-team", "xcc.test"):                                  "api.cluster-a.dev-team.clusters.xcc.test",
		"x." + strings.TrimPrefix(GatewaysHostname("web", "dev-team", "xcc.test"), "*."):  "web.dev-team.gateways.xcc.test",
		DefaultNameHostname("shop", "dev-team", "xcc.test"):                               "shop.dev-team.names.xcc.test",
		"cart.shop.eu.xcc.test":                 "cart.shop.eu.xcc.test",
		x:                                       HeadlessAllName(x),
		HeadlessClusterName(x, "cluster-a"):     "cluster-a." + x,
		HeadlessPodName(x, "cluster-a", "pg-0"): "pg-0.cluster-a." + x,
		HeadlessSRVName(x, Port{Name: "pg", Protocol: "TCP"}): "_pg._tcp." + x,
	} {
		v := ClassifyQuery(name+".", "xcc.test", shapes)
		if v.Refused || v.Empty || v.Stored != stored {
			t.Errorf("ClassifyQuery(%s) = %+v, want records stored at %s", name, v, stored)
		}
	}
}

func TestClassifyQuery(t *testing.T) {
	grants, err := ParseGrants("dev-team=shop.eu.xcc.test", "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	shapes := Shapes("xcc.test", grants)
	const (
		refused = "refused"
		empty   = "empty"
		hand    = "hand" // a name put by hand: the etcd plugin answers it
	)
	for _, tt := range []struct{ name, want string }{
		{"xcc.test", empty},
		{"clusters.xcc.test", empty},
		{"c.ns.clusters.xcc.test", empty},
		{"x.c.ns.clusters.xcc.test", refused},
		{"www.api.c.ns.clusters.xcc.test", refused},
		{"_x.gateway.c.ns.clusters.xcc.test", refused},
		{"a.any.gateway.c.ns.clusters.xcc.test", "gateway"},
		{"gateway.any.ns.clusters.xcc.test", refused},
		{"any.xcc.test", refused},
		{"/.xcc.test", refused},
		{`\047.xcc.test`, refused},
		{"a..xcc.test", refused},
		{"eu.xcc.test", empty},
		{"shop.eu.xcc.test", empty},
		{"cart.shop.eu.xcc.test", "granted name of dev-team"},
		{"a.cart.shop.eu.xcc.test", refused},
		{"db.eu.xcc.test", hand},
		{"db.custom.xcc.test", hand},
		{"_acme.custom.xcc.test", hand},
		{"_tcp.db.ns.services.xcc.test", empty},
		{"_pg._tcp.db.ns.services.xcc.test", "headless SRV"},
		{"_pg._tls.db.ns.services.xcc.test", refused},
		// Where the records of a headless name are stored: not published.
		{"_all.db.ns.services.xcc.test", refused},
		{"_srv.db.ns.services.xcc.test", refused},
		{"outside.example", refused},
	} {
		v := ClassifyQuery(tt.name, "xcc.test", shapes)
		got := hand
		switch {
		case v.Refused:
			got = refused
		case v.Empty:
			got = empty
		case v.Shape != nil:
			got = v.Shape.Kind
		}
		if got != tt.want {
			t.Errorf("ClassifyQuery(%s) = %s (%+v), want %s", tt.name, got, v, tt.want)
		}
		if v.Refused == (v.Why == "") {
			t.Errorf("ClassifyQuery(%s): refused %t with why %q: a refusal, and only one, says why", tt.name, v.Refused, v.Why)
		}
	}
}

// A refused name says which rule refused it, in words an operator reads.
func TestClassifyQueryWhy(t *testing.T) {
	shapes := Shapes("xcc.test", Grants{})
	for _, tt := range []struct{ name, want string }{
		{"a/b.xcc.test", `byte '/'`},
		{"a..xcc.test", "an empty label"},
		{"any.xcc.test", `label "any"`},
		{"gateway.any.ns.clusters.xcc.test", `label "any"`},
		{"_all.db.ns.services.xcc.test", "where the records of another name are stored"},
		{"x.c.ns.clusters.xcc.test", "no name of this shape below clusters.xcc.test"},
		{"outside.example", "not in the zone xcc.test"},
	} {
		if v := ClassifyQuery(tt.name, "xcc.test", shapes); !v.Refused || !strings.Contains(v.Why, tt.want) {
			t.Errorf("ClassifyQuery(%s) = %+v, want refused saying %q", tt.name, v, tt.want)
		}
	}
	if v := ClassifyQuery("a.b.c.db.ns.svc.clusterset.local", "clusterset.local", ClusterSetShapes()); !v.Refused || !strings.Contains(v.Why, "no name of this shape below clusterset.local") {
		t.Errorf("clusterset: %+v", v)
	}
}
