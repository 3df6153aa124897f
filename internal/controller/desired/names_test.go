package desired

import (
	"slices"
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// named is a healthy cluster whose Services claim names: each svc is
// "<ns>/<name>=<annotation value>=<ip>[,<ip>...]".
func named(cluster string, svcs ...string) Input {
	in := good(cluster, "10.9.9.9")
	in.NamesSynced = true
	for _, s := range svcs {
		parts := strings.SplitN(s, "=", 3)
		ns, name, _ := strings.Cut(parts[0], "/")
		var ips []string
		if parts[2] != "" {
			ips = strings.Split(parts[2], ",")
		}
		in.Names = append(in.Names, NameService{Namespace: ns, Name: name, Value: parts[1], Ingress: testfixture.IPs(ips...),
			EndpointsSynced: true, ReadyEndpoints: 1})
	}
	return in
}

// namesView is the KindName slices of d, as testfixture.SliceView.
func namesView(d Result) []string {
	var out []string
	for _, s := range d.Slices {
		if s.Labels[contract.LabelRecord] == string(contract.KindName) {
			out = append(out, testfixture.SliceView(s))
		}
	}
	slices.Sort(out)
	return out
}

// reasonsView is status.names as "<name> <reason>".
func reasonsView(d Result) []string {
	var out []string
	for _, n := range d.Names {
		out = append(out, n.Name+" "+n.Reason)
	}
	return out
}

// TestAddNames checks the names Services claim, as AddNames publishes them.
// It is long for its table, one row per case, and one loop over it.
func TestAddNames(t *testing.T) {
	const web = "web.dev-team.names.xcc.test"
	grants, err := contract.ParseGrants("dev-team=shop.xcc.test;other=other.xcc.test", "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	tests := []struct {
		name     string
		clusters []Input
		owners   map[string]string
		allowed  string
		want     []string // slices
		reasons  []string
		claimed  []string
	}{
		{
			name:     "one name from two clusters is one name",
			clusters: []Input{named("cluster-a", "shop/web=web=10.1.0.1"), named("cluster-b", "shop/web=web=10.2.0.1,2001:db8::2")},
			want:     []string{web + " IPv4 10.1.0.1", web + " IPv4 10.2.0.1", web + " IPv6 2001:db8::2"},
			reasons:  []string{web + " Published"},
			claimed:  []string{web},
		},
		{
			name:     "a full name inside a grant",
			clusters: []Input{named("cluster-a", "shop/cart=cart.shop.xcc.test=10.1.0.2")},
			want:     []string{"cart.shop.xcc.test IPv4 10.1.0.2"},
			reasons:  []string{"cart.shop.xcc.test Published"},
			claimed:  []string{"cart.shop.xcc.test"},
		},
		{
			name: "refused and invalid names beside a valid one lose nothing",
			clusters: []Input{named("cluster-a", "shop/web=web=10.1.0.1", "x/evil=cart.other.xcc.test=10.1.0.3",
				"x/other=web.other.names.xcc.test=10.1.0.4", "x/wild=*.shop.xcc.test=10.1.0.5", "x/bad=a_b=10.1.0.6", "x/any=any=10.1.0.7")},
			want: []string{web + " IPv4 10.1.0.1"},
			reasons: []string{"*.shop.xcc.test InvalidName", "a_b InvalidName", "any InvalidName", "cart.other.xcc.test NameRefused",
				web + " Published", "web.other.names.xcc.test NameRefused"},
			claimed: []string{web},
		},
		{
			name:     "an older GatewayDNS owns the name",
			clusters: []Input{named("cluster-a", "shop/web=web=10.1.0.1", "shop/cart=cart=10.1.0.2")},
			owners:   map[string]string{web: "dev-team/older"},
			want:     []string{"cart.dev-team.names.xcc.test IPv4 10.1.0.2"},
			reasons:  []string{"cart.dev-team.names.xcc.test Published", web + " Conflict"},
			claimed:  []string{"cart.dev-team.names.xcc.test", web},
		},
		{
			name: "unhealthy sources are published not ready",
			clusters: []Input{
				with(named("cluster-a", "shop/web=web=10.1.0.1"), func(in *Input) { in.Names[0].ReadyEndpoints = 0 }),
				with(named("cluster-b", "shop/web=web=10.2.0.1"), func(in *Input) { in.Unavailable = "condition Available is False" }),
			},
			want:    []string{web + " IPv4 10.1.0.1 unready", web + " IPv4 10.2.0.1 unready"},
			reasons: []string{web + " Published"},
			claimed: []string{web},
		},
		{
			name:     "addresses outside the allowed CIDRs and bad addresses are refused",
			clusters: []Input{named("cluster-a", "shop/web=web=10.1.0.1,127.0.0.1,192.0.2.1"), named("cluster-b", "shop/web=web=192.0.2.2")},
			allowed:  "10.0.0.0/8",
			want:     []string{web + " IPv4 10.1.0.1"},
			reasons:  []string{web + " Published"},
			claimed:  []string{web},
		},
		{
			name:     "no address yet",
			clusters: []Input{named("cluster-a", "shop/web=web=")},
			reasons:  []string{web + " NoAddresses"},
			claimed:  []string{web},
		},
		{
			name:     "two Services of one cluster: the first publishes",
			clusters: []Input{named("cluster-a", "b/web=web=10.1.0.2", "a/web=web=10.1.0.1")},
			want:     []string{web + " IPv4 10.1.0.1"},
			reasons:  []string{web + " Published"},
			claimed:  []string{web},
		},
		{
			name: "unselected, conflicting, deleting and unreachable clusters are no source",
			clusters: []Input{
				with(named("cluster-a", "shop/web=web=10.1.0.1"), func(in *Input) { in.Selected = false }),
				with(named("cluster-b", "shop/web=web=10.2.0.1"), func(in *Input) { in.OwnedBy = "dev-team/older" }),
				with(named("cluster-c", "shop/web=web=10.3.0.1"), func(in *Input) { in.Deleting = true }),
				with(named("cluster-d", "shop/web=web=10.4.0.1"), func(in *Input) { in.ServiceSynced = false }),
				with(named("cluster-e", "shop/web=web=10.5.0.1"), func(in *Input) { in.NamesSynced = false }),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gd := testfixture.GatewayDNS("gw")
			gd.Spec.Names = &v1alpha1.Names{Enabled: true}
			var allowed cidr.List
			if tt.allowed != "" {
				if err := allowed.Set(tt.allowed); err != nil {
					t.Fatal(err)
				}
			}
			d := Compute(gd, "xcc.test", allowed, tt.clusters)
			claimed := AddNames(&d, gd, "xcc.test", allowed, grants, tt.clusters, tt.owners)
			if got := namesView(d); !slices.Equal(got, tt.want) {
				t.Errorf("slices:\n got %q\nwant %q", got, tt.want)
			}
			if got := reasonsView(d); !slices.Equal(got, tt.reasons) {
				t.Errorf("status names:\n got %q\nwant %q", got, tt.reasons)
			}
			if !slices.Equal(claimed, tt.claimed) {
				t.Errorf("claimed %q, want %q", claimed, tt.claimed)
			}
			for _, c := range tt.clusters {
				// Services not listed: the names it published stay.
				unlisted := c.Selected && c.OwnedBy == "" && !c.Deleting && c.ServiceSynced && !c.NamesSynced
				if d.Keep[KeepNamesKey(c.Name)] != unlisted {
					t.Errorf("cluster %s: names kept %v, want %v", c.Name, d.Keep[KeepNamesKey(c.Name)], unlisted)
				}
			}
			for _, s := range d.Slices {
				if s.Labels[contract.LabelRecord] != string(contract.KindName) {
					continue
				}
				// serve reads every slice back as the name it is for.
				p, ok, problems := contract.ParseGranted(s, "xcc.test", grants)
				if !ok || len(problems) > 0 || p.Kind != contract.KindName || p.Source != s.Labels[contract.LabelSourceCluster] {
					t.Errorf("serve reads %s as %+v ok %v problems %v", s.Name, p, ok, problems)
				}
			}
		})
	}
}

// Without spec.names, or for a headless export, no Service's claim counts.
func TestAddNamesOptIn(t *testing.T) {
	in := []Input{named("cluster-a", "shop/web=web=10.1.0.1")}
	for _, spec := range []v1alpha1.GatewayDNSSpec{
		{Service: "projectcontour/envoy"},
		{Service: "projectcontour/envoy", Names: &v1alpha1.Names{}},
		{Service: "db/pg", ResolutionType: v1alpha1.ResolutionTypeHeadless, Names: &v1alpha1.Names{Enabled: true}},
	} {
		gd := testfixture.GatewayDNS("gw")
		gd.Spec = spec
		d := Compute(gd, "xcc.test", nil, in)
		if claimed := AddNames(&d, gd, "xcc.test", nil, contract.Grants{}, in, nil); claimed != nil || len(namesView(d)) > 0 || d.Names != nil {
			t.Errorf("spec %+v: claimed %q, slices %q, status %+v", spec, claimed, namesView(d), d.Names)
		}
	}
}

// The annotation is tenant input: a value of any size gives a bounded entry.
func TestAddNamesBoundsStatus(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	gd.Spec.Names = &v1alpha1.Names{Enabled: true}
	c := named("cluster-a")
	for i := range 20 {
		c.Names = append(c.Names, NameService{Namespace: "x", Name: strings.Repeat("s", i+1), Value: strings.Repeat("x", 10000), Ingress: testfixture.IPs("10.1.0.1")})
	}
	in := []Input{c}
	d := Compute(gd, "xcc.test", nil, in)
	AddNames(&d, gd, "xcc.test", nil, contract.Grants{}, in, nil)
	if len(d.Names) != 1 || len(d.Names[0].Name) > 260 || len(d.Names[0].Sources) > maxNameSources || len(d.Names[0].Message) > 2000 {
		t.Errorf("status names: %d entries, first name %d bytes, %d sources, message %d bytes", len(d.Names), len(d.Names[0].Name), len(d.Names[0].Sources), len(d.Names[0].Message))
	}
	if d.Names[0].Reason != ReasonInvalidName {
		t.Errorf("reason %s", d.Names[0].Reason)
	}
}

// A cluster whose names stay published while it cannot be read (kept,
// or its Services not listed yet) keeps their status entries too: a name
// that answers says so, from which sources and why they were not read.
// A deleting cluster's names go, entries and all.
func TestAddNamesKeptClustersKeepTheirEntries(t *testing.T) {
	const web, cart, old = "web.dev-team.names.xcc.test", "cart.dev-team.names.xcc.test", "old.dev-team.names.xcc.test"
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	clusters := []Input{
		named("cluster-a", "shop/cart=cart=10.1.0.2"),
		with(named("cluster-d", "shop/web=web=10.4.0.1"), func(in *Input) { in.ServiceSynced = false }),
		with(named("cluster-e", "shop/web=web=10.5.0.1"), func(in *Input) { in.NamesSynced = false }),
		with(named("cluster-f", "shop/old=old=10.6.0.1"), func(in *Input) { in.Deleting = true }),
	}
	gd := testfixture.GatewayDNS("gw")
	gd.Spec.Names = &v1alpha1.Names{Enabled: true}
	gd.Status.Names = []v1alpha1.NameStatus{
		{Name: old, Reason: ReasonPublished, Sources: []string{"cluster-f/shop/old"}, HealthySources: 1},
		{Name: web, Reason: ReasonPublished, Sources: []string{"cluster-d/shop/web", "cluster-e/shop/web"}, HealthySources: 2},
	}
	d := Compute(gd, "xcc.test", nil, clusters)
	claimed := AddNames(&d, gd, "xcc.test", nil, contract.Grants{}, clusters, nil)
	if got, want := reasonsView(d), []string{cart + " Published", web + " Published"}; !slices.Equal(got, want) {
		t.Fatalf("status names:\n got %q\nwant %q", got, want)
	}
	kept := d.Names[1]
	if !slices.Equal(kept.Sources, []string{"cluster-d/shop/web", "cluster-e/shop/web"}) || kept.HealthySources != 2 ||
		!strings.Contains(kept.Message, "last published addresses kept") {
		t.Errorf("kept entry %+v: want both sources, healthy as last seen, and why", kept)
	}
	if got := namesView(d); !slices.Equal(got, []string{cart + " IPv4 10.1.0.2"}) {
		t.Errorf("slices %q: a kept cluster's name slices stay as they are, none built", got)
	}
	if !slices.Equal(claimed, []string{cart, web}) {
		t.Errorf("claimed %q: a kept name stays claimed", claimed)
	}
}
