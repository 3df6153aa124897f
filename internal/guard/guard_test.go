package guard

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// outcome is what the guard does with a query: NXDOMAIN or NODATA (or an
// answer) from a template, or the etcd plugin reading stored.
type outcome struct {
	rcode  string // NXDOMAIN, NOERROR; "" when the query goes on to etcd
	stored string
}

// decide runs a query through z as the view, rewrite and template plugins
// do: a view whose expression is true sends it to etcd after the view's
// rewrites; else
// the first rewrite whose regex matches replaces the name, then the first
// template whose type, one of whose expressions, and whose expression
// match answers; else the query goes on to etcd.
func decide(t testing.TB, z Zone, name, qtype string) outcome {
	env := map[string]any{"name": func() string { return name }, "type": func() string { return qtype }}
	for _, v := range z.Views {
		if run(t, v.Expr, env) {
			return outcome{stored: strings.TrimSuffix(rewrite(v.Rewrites, name), ".")}
		}
	}
	name = rewrite(z.Rewrites, name)
	env = map[string]any{"name": func() string { return name }, "type": func() string { return qtype }}
	for _, tm := range z.Templates {
		if tm.Type != "ANY" && tm.Type != qtype {
			continue
		}
		matched := false
		for _, m := range tm.Match {
			matched = matched || regexp.MustCompile(m).MatchString(name)
		}
		if !matched {
			continue
		}
		if tm.Expr != "" && !run(t, tm.Expr, env) {
			continue
		}
		return outcome{rcode: tm.Rcode}
	}
	return outcome{stored: strings.TrimSuffix(name, ".")}
}

// rewrite applies the first of rules whose regex matches name.
func rewrite(rules []Rewrite, name string) string {
	for _, r := range rules {
		if m := regexp.MustCompile(r.Regex).FindStringSubmatch(name); m != nil {
			return strings.ReplaceAll(r.Replacement, "{1}", m[1])
		}
	}
	return name
}

// run evaluates an expression of the template or view plugin.
func run(t testing.TB, e string, env map[string]any) bool {
	prog, err := expr.Compile(e, expr.Env(env), expr.AsBool())
	if err != nil {
		t.Fatalf("expression %q: %v", e, err)
	}
	ok, err := expr.Run(prog, env)
	if err != nil {
		t.Fatalf("expression %q: %v", e, err)
	}
	return ok.(bool)
}

// want is what the grammar says of a query (contract.ClassifyQuery).
func want(v contract.Verdict, qtype string) outcome {
	switch {
	case v.Refused:
		return outcome{rcode: "NXDOMAIN"}
	case v.ReadsEtcd(qtype):
		return outcome{stored: v.StoredFor(qtype)}
	default:
		return outcome{rcode: "NOERROR"}
	}
}

// wire turns a presentation name into what CoreDNS sees: packed as a
// query, unpacked, lower-cased (request.Name). ok is false for a name DNS
// cannot carry.
func wire(name string) (string, bool) {
	if _, ok := dns.IsDomainName(name); !ok {
		return "", false
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	b, err := m.Pack()
	if err != nil {
		return "", false
	}
	var back dns.Msg
	if err := back.Unpack(b); err != nil || len(back.Question) != 1 {
		return "", false
	}
	return strings.ToLower(back.Question[0].Name), true
}

const testZone = "xcc.test"

func testShapes(t testing.TB) []contract.Shape {
	grants, err := contract.ParseGrants("shop=shop.eu.xcc.test;web=www.xcc.test", testZone)
	if err != nil {
		t.Fatal(err)
	}
	return contract.Shapes(testZone, grants)
}

// seeds are names of every shape, refused or not.
var seeds = []string{
	"xcc.test", "clusters.xcc.test", "dev-team.clusters.xcc.test", "cluster-a.dev-team.clusters.xcc.test",
	"gateway.cluster-a.dev-team.clusters.xcc.test", "kuard.gateway.cluster-a.dev-team.clusters.xcc.test",
	"x.any.gateway.cluster-a.dev-team.clusters.xcc.test", "_x.gateway.cluster-a.dev-team.clusters.xcc.test",
	"api.cluster-a.dev-team.clusters.xcc.test", "www.api.cluster-a.dev-team.clusters.xcc.test",
	"web.dev-team.gateways.xcc.test", "a.b.web.dev-team.gateways.xcc.test", "dev-team.gateways.xcc.test",
	"shop.dev-team.names.xcc.test", "x.shop.dev-team.names.xcc.test",
	"db.dev-team.services.xcc.test", "_all.db.dev-team.services.xcc.test", "_srv.db.dev-team.services.xcc.test", "cluster-a.db.dev-team.services.xcc.test",
	"pg-0.cluster-a.db.dev-team.services.xcc.test", "_pg._tcp.db.dev-team.services.xcc.test", "_tcp.db.dev-team.services.xcc.test",
	"_pg._tls.db.dev-team.services.xcc.test", "x.pg-0.cluster-a.db.dev-team.services.xcc.test", "_any._tcp.db.dev-team.services.xcc.test",
	"cart.shop.eu.xcc.test", "shop.eu.xcc.test", "eu.xcc.test", "x.cart.shop.eu.xcc.test", "db.eu.xcc.test",
	"www.xcc.test", "a.www.xcc.test", "a.b.www.xcc.test", "dns.xcc.test", "ns.dns.xcc.test", "db.custom.xcc.test", "_acme.custom.xcc.test",
	"/.xcc.test", `\047.xcc.test`, "x./.dev-team.gateways.xcc.test", "any.xcc.test", "a.any.b.xcc.test", `\*.clusters.xcc.test`,
	"clusters//dev-team.xcc.test", `a\.b.dev-team.names.xcc.test`, `\000.xcc.test`, "KuArD.Gateway.cluster-a.dev-team.clusters.xcc.test",
	"xn--bcher-kva.dev-team.names.xcc.test", "-.dev-team.names.xcc.test",
	"pg-0.cluster-a._pg._tcp.db.dev-team.services.xcc.test", "x.pg-0.cluster-a._pg._tcp.db.dev-team.services.xcc.test",
}

// csSeeds are names of every shape of the clusterset zone, and others.
var csSeeds = []string{
	"clusterset.local", "svc.clusterset.local", "dev-team.svc.clusterset.local", "db.dev-team.svc.clusterset.local",
	"_all.db.dev-team.svc.clusterset.local", "_srv.db.dev-team.svc.clusterset.local", "_srv.web.dev-team.svc.clusterset.local", "cluster-a.db.dev-team.svc.clusterset.local", "pg-0.cluster-a.db.dev-team.svc.clusterset.local",
	"_pg._tcp.db.dev-team.svc.clusterset.local", "_tcp.db.dev-team.svc.clusterset.local", "_pg._tls.db.dev-team.svc.clusterset.local",
	"x.pg-0.cluster-a.db.dev-team.svc.clusterset.local", "_any._tcp.db.dev-team.svc.clusterset.local", "any.db.dev-team.svc.clusterset.local",
	"dns-version.clusterset.local", "x.dns-version.clusterset.local", "foo.clusterset.local", "a.b.clusterset.local", "ns.dns.clusterset.local",
	"db.custom.clusterset.local", "/.clusterset.local", `\047.svc.clusterset.local`, "x./.dev-team.svc.clusterset.local", "any.clusterset.local",
	`\*.svc.clusterset.local`, "_x.svc.clusterset.local", "DB.Dev-Team.SVC.clusterset.local", "_pg._tcp.cluster-a.db.dev-team.svc.clusterset.local",
	"pg-0.cluster-a._pg._tcp.db.dev-team.svc.clusterset.local", "pg-0.cluster-a._srv.db.dev-team.svc.clusterset.local",
}

// zones are the guards under test: the zone with grants, and the closed
// clusterset zone.
func zones(t testing.TB) []struct {
	name   string
	shapes []contract.Shape
	seeds  []string
} {
	return []struct {
		name   string
		shapes []contract.Shape
		seeds  []string
	}{{testZone, testShapes(t), seeds}, {csZone, contract.ClusterSetShapes(), csSeeds}}
}

const csZone = "clusterset.local"

var qtypes = []string{"A", "AAAA", "SRV", "TXT", "CNAME", "PTR", "SOA", "NS"}

// TestGuardIsTheGrammar: the generated rewrites and templates, run as
// CoreDNS runs them, do to every seed name and type what the grammar says.
func TestGuardIsTheGrammar(t *testing.T) {
	for _, zone := range zones(t) {
		z := Forward(zone.name, zone.shapes)
		for _, seed := range zone.seeds {
			name, ok := wire(seed + ".")
			if !ok {
				t.Fatalf("seed %q is no DNS name", seed)
			}
			for _, qtype := range qtypes {
				if name == zone.name+"." && (qtype == "SOA" || qtype == "NS") {
					continue // answered by the apex templates
				}
				got, w := decide(t, z, name, qtype), want(contract.ClassifyQuery(name, zone.name, zone.shapes), qtype)
				if got != w {
					t.Errorf("%s %s: guard %+v, grammar %+v", name, qtype, got, w)
				}
			}
		}
	}
}

// The clusterset zone is closed: a name of no shape is refused there,
// where the other zone would let it reach etcd as a name put by hand.
func TestClusterSetZoneClosed(t *testing.T) {
	z := Forward(csZone, contract.ClusterSetShapes())
	for _, name := range []string{"foo.clusterset.local.", "db.custom.clusterset.local.", "ns.dns.clusterset.local."} {
		if got := decide(t, z, name, "A"); got.rcode != "NXDOMAIN" {
			t.Errorf("%s: %+v, want NXDOMAIN", name, got)
		}
	}
	if got := decide(t, z, "dns-version.clusterset.local.", "TXT"); got.stored != "dns-version.clusterset.local" {
		t.Errorf("dns-version TXT: %+v, want a read of its key", got)
	}
}

// The names where the records of other names are stored (_all.X, the
// records of X; _srv.X, SRV of a clusterset service) are no names of
// the zone: NXDOMAIN for every type, though the rewrites read their keys.
func TestStorageNamesRefused(t *testing.T) {
	for _, tt := range []struct {
		zone   string
		shapes []contract.Shape
		names  []string
	}{
		{testZone, testShapes(t), []string{"_all.db.dev-team.services.xcc.test.", "pg-0.cluster-a._pg._tcp.db.dev-team.services.xcc.test."}},
		{csZone, contract.ClusterSetShapes(), []string{"_all.db.dev-team.svc.clusterset.local.", "_srv.db.dev-team.svc.clusterset.local.",
			"pg-0.cluster-a._pg._tcp.db.dev-team.svc.clusterset.local.", "pg-0.cluster-a._srv.db.dev-team.svc.clusterset.local."}},
	} {
		z := Forward(tt.zone, tt.shapes)
		for _, name := range tt.names {
			for _, qtype := range qtypes {
				if got := decide(t, z, name, qtype); got.rcode != "NXDOMAIN" {
					t.Errorf("%s %s: %+v, want NXDOMAIN", name, qtype, got)
				}
			}
		}
	}
}

// The SRV names read as they are, and their answers name the targets
// stored below them (<pod>.<cluster>._<port>._<proto>.X) back after the
// targets (<pod>.<cluster>.X), record names and SRV targets alike; the
// SRV records' own name, X (a ClusterSetIP import's target) and the
// names of other SRV names stay as they are. Run as the rewrite plugin
// runs answer rules: the first match of each rule's regex, its groups
// put into the replacement.
func TestTargetsNamedBack(t *testing.T) {
	for _, tt := range []struct {
		zone   string
		shapes []contract.Shape
		x      string
	}{
		{testZone, testShapes(t), "db.dev-team.services.xcc.test."},
		{csZone, contract.ClusterSetShapes(), "db.dev-team.svc.clusterset.local."},
	} {
		z := Forward(tt.zone, tt.shapes)
		srv := "_pg._tcp." + tt.x
		var rule *Rewrite
		for i, r := range z.Rewrites {
			if len(r.Answers) > 0 {
				if rule != nil {
					t.Fatalf("%s: two rewrites with answer rules", tt.zone)
				}
				rule = &z.Rewrites[i]
			}
		}
		if rule == nil {
			t.Fatalf("%s: no rewrite names the stored targets back", tt.zone)
		}
		if got := rewrite([]Rewrite{*rule}, srv); got != srv {
			t.Errorf("%s: the SRV name reads %s", srv, got)
		}
		if got := rewrite([]Rewrite{*rule}, "_pg._tcp.any."+tt.x); got != "_pg._tcp.any."+tt.x {
			t.Errorf("the rewrite changes a name it does not own: %s", got)
		}
		for name, want := range map[string]string{
			"pg-0.cluster-a." + srv:                 "pg-0.cluster-a." + tt.x,
			"10-1-0-6.cluster-b._http._udp." + tt.x: "10-1-0-6.cluster-b." + tt.x,
			srv:                                     srv,
			tt.x:                                    tt.x,
			"pg-0.cluster-a." + tt.x:                "pg-0.cluster-a." + tt.x,
			"x.pg-0.cluster-a." + srv:               "x.pg-0.cluster-a." + srv,
			"pg-0.cluster-a._pg._tcp.other." + tt.x: "pg-0.cluster-a._pg._tcp.other." + tt.x,
		} {
			for _, a := range rule.Answers {
				got := name
				if m := regexp.MustCompile(a.Regex).FindStringSubmatch(name); m != nil {
					got = a.Replacement
					for i, g := range m {
						got = strings.ReplaceAll(got, "{"+strconv.Itoa(i)+"}", g)
					}
				}
				if got != want {
					t.Errorf("answer %s %s: %s, want %s", a.Field, name, got, want)
				}
			}
		}
		if fields := []string{rule.Answers[0].Field, rule.Answers[len(rule.Answers)-1].Field}; len(rule.Answers) != 2 || fields[0] != "name" || fields[1] != "value" {
			t.Errorf("%s: answer rules %+v, want one for names and one for SRV targets", tt.zone, rule.Answers)
		}
	}
}

// FuzzGuard holds the generated guard and the grammar equal on any name
// DNS can carry below either zone (the clusterset zone when the byte
// choosing the type is odd in its high bit).
func FuzzGuard(f *testing.F) {
	for i, s := range seeds {
		f.Add(strings.TrimSuffix(strings.TrimSuffix(s, testZone), "."), uint8(i))
	}
	for i, s := range csSeeds {
		f.Add(strings.TrimSuffix(strings.TrimSuffix(s, csZone), "."), uint8(128+i))
	}
	all := zones(f)
	guards := []Zone{Forward(all[0].name, all[0].shapes), Forward(all[1].name, all[1].shapes)}
	f.Fuzz(func(t *testing.T, prefix string, typ uint8) {
		zone, z := all[typ>>7], guards[typ>>7]
		name, ok := wire(prefix + "." + zone.name + ".")
		if !ok {
			return
		}
		qtype := qtypes[int(typ&127)%len(qtypes)]
		if name == zone.name+"." && (qtype == "SOA" || qtype == "NS") {
			return
		}
		got, w := decide(t, z, name, qtype), want(contract.ClassifyQuery(name, zone.name, zone.shapes), qtype)
		if got != w {
			t.Errorf("%q %s: guard %+v, grammar %+v", name, qtype, got, w)
		}
	})
}
