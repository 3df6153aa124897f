package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

// guardedNames are the valid names of the test world, published or not,
// from which guardQueries derives the rest.
var guardedNames = []string{
	"xcc.test.", "clusters.xcc.test.", "dev-team.clusters.xcc.test.", "cluster-a.dev-team.clusters.xcc.test.",
	"gateway.cluster-a.dev-team.clusters.xcc.test.", "kuard.gateway.cluster-a.dev-team.clusters.xcc.test.",
	"kuard.gateway.cluster-c.dev-team.clusters.xcc.test.", "x.y.gateway.cluster-b.dev-team.clusters.xcc.test.",
	"api.cluster-a.dev-team.clusters.xcc.test.", "kuard.gateway.nosuch.dev-team.clusters.xcc.test.",
	"web.dev-team.gateways.xcc.test.", "kuard.web.dev-team.gateways.xcc.test.", "dev-team.gateways.xcc.test.",
	"shop.dev-team.names.xcc.test.", "nosuch.dev-team.names.xcc.test.",
	"db.dev-team.services.xcc.test.", "cluster-a.db.dev-team.services.xcc.test.", "postgres-0.cluster-a.db.dev-team.services.xcc.test.",
	"_pg._tcp.db.dev-team.services.xcc.test.", "_tcp.db.dev-team.services.xcc.test.", "_all.db.dev-team.services.xcc.test.",
	"postgres-0.cluster-a._pg._tcp.db.dev-team.services.xcc.test.",
	"cart.shop.eu.xcc.test.", "shop.eu.xcc.test.", "eu.xcc.test.", "db.custom.xcc.test.", "nosuch.xcc.test.",
	// The clusterset zone, closed: only its shapes exist.
	"clusterset.local.", "svc.clusterset.local.", "dev-team.svc.clusterset.local.", "db.dev-team.svc.clusterset.local.",
	"web.dev-team.svc.clusterset.local.", "cluster-a.web.dev-team.svc.clusterset.local.", "cluster-a.db.dev-team.svc.clusterset.local.",
	"pg-0.cluster-a.db.dev-team.svc.clusterset.local.", "_pg._tcp.db.dev-team.svc.clusterset.local.", "_http._tcp.web.dev-team.svc.clusterset.local.",
	"_tcp.db.dev-team.svc.clusterset.local.", "_all.db.dev-team.svc.clusterset.local.", "_srv.db.dev-team.svc.clusterset.local.", "_srv.web.dev-team.svc.clusterset.local.", "dns-version.clusterset.local.", "nosuch.clusterset.local.",
	"pg-0.cluster-a._pg._tcp.db.dev-team.svc.clusterset.local.", "pg-0.cluster-a._srv.db.dev-team.svc.clusterset.local.",
}

// guardQueries generates names from the valid ones: each as it is, in
// upper case, with '/' at every position, with a label "any", "*",
// random bytes, an escaped dot or an IDNA label at every position, one
// label deeper and one shallower; plus random names.
func guardQueries(seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, seed))
	randomLabel := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			fmt.Fprintf(&b, `\%03d`, rng.IntN(256))
		}
		return b.String()
	}
	var out []string
	for _, name := range guardedNames {
		labels := dns.SplitDomainName(name)
		out = append(out, name, strings.ToUpper(name))
		for i := 1; i < len(name)-1; i++ {
			out = append(out, name[:i]+"/"+name[i:])
		}
		for i := range labels {
			for _, l := range []string{"any", "*", randomLabel(), `a\.b`, "xn--bcher-kva", "_x", "-"} {
				with := append(append(append([]string{}, labels[:i]...), l), labels[i:]...)
				out = append(out, strings.Join(with, ".")+".")
				replaced := append(append(append([]string{}, labels[:i]...), l), labels[i+1:]...)
				out = append(out, strings.Join(replaced, ".")+".")
			}
		}
		if len(labels) > 1 {
			out = append(out, strings.Join(labels[1:], ".")+".")
		}
		out = append(out, "x."+name)
	}
	for range 200 {
		out = append(out, randomLabel()+"."+randomLabel()+".xcc.test.", randomLabel()+"."+randomLabel()+".svc.clusterset.local.")
	}
	return out
}

// TestGuardReads asks a real CoreDNS, with the shipped Corefile and the
// generated guard, thousands of generated names, and records every key
// its etcd plugin reads. A name the grammar refuses gets NXDOMAIN after
// no read; an empty non-terminal, or SRV anywhere but an SRV name, no
// read; and any other name reads only keys of names the grammar accepts
// as published, its own first: never the zone's, a subtree's, a
// namespace's or a cluster's. Both zones: xcc.test and the closed
// clusterset zone.
func TestGuardReads(t *testing.T) {
	grants, err := contract.ParseGrants("dev-team=shop.eu.xcc.test", dnsworld.Zone)
	if err != nil {
		t.Fatal(err)
	}
	w := dnsworld.Start(t, dnsworld.Config{
		Corefile: testfixture.ShippedCorefile(t), Directives: coredns.Directives, Slices: slices.Concat(testSlices(), clusterSetOnly(clusterSetSlices())),
		NameGrants: grants, RecordReads: true, ClusterSetZone: csZone,
		Records:  map[string]string{skydnsrecord.Key("db.custom.xcc.test"): `{"host":"192.0.2.99","ttl":60}`},
		Upstream: testfixture.StartUpstream(t, upstreamTarget, upstreamAddr),
	})
	shapes, csShapes := contract.Shapes(dnsworld.Zone, grants), contract.ClusterSetShapes()
	asked, refused, reads, csReads := 0, 0, 0, 0
	for _, name := range guardQueries(1) {
		for _, qtype := range []uint16{dns.TypeA, dns.TypeSRV, dns.TypeTXT} {
			w.Reads.Take()
			if _, ok := dns.IsDomainName(name); !ok || len(name) > 250 {
				continue // too long, or no name at all: never sent
			}
			r := w.Ask(t, "udp", name, qtype, 0)
			got := w.Reads.Take()
			asked++
			seen := strings.ToLower(r.Question[0].Name)
			zone, zoneShapes := dnsworld.Zone, shapes
			if dns.IsSubDomain(csZone+".", seen) {
				zone, zoneShapes = csZone, csShapes
			}
			v := contract.ClassifyQuery(seen, zone, zoneShapes)
			what := fmt.Sprintf("%s %s (%s): %s", name, dns.TypeToString[qtype], seen, dns.RcodeToString[r.Rcode])
			switch {
			case !dns.IsSubDomain(zone+".", seen):
				// Outside the zone: the upstream's, never etcd's.
				if len(got) > 0 {
					t.Errorf("%s after reading %q; want no read", what, got)
				}
			case v.Refused:
				refused++
				if r.Rcode != dns.RcodeNameError || len(got) > 0 {
					t.Errorf("%s after reading %q; want NXDOMAIN after no read", what, got)
				}
			case !v.ReadsEtcd(dns.TypeToString[qtype]):
				if r.Rcode != dns.RcodeSuccess || len(got) > 0 {
					t.Errorf("%s after reading %q; want NOERROR after no read", what, got)
				}
			default:
				reads += len(got)
				if zone == csZone {
					csReads += len(got)
				}
				stored := v.StoredFor(dns.TypeToString[qtype])
				own := skydnsrecord.Key(stored)
				if len(got) > 0 && got[0] != own+"/" && got[0] != own {
					t.Errorf("%s: first read %q, want %q, the name's own key", what, got[0], own)
				}
				for _, key := range got {
					n, err := skydnsrecord.Name(strings.TrimSuffix(key, "/"))
					if err == nil && n == stored {
						// The name's own key, where its records are
						// stored (_all.X for X): checked above.
						continue
					}
					if v.Shape != nil && v.Shape.SRV && zone == csZone && dns.IsSubDomain(n+".", seen) && strings.Count(seen, ".")-strings.Count(n, ".") == 3 {
						// The SRV target of a ClusterSetIP import is the
						// import's name X, two labels up: the etcd plugin
						// reads its key itself for the additional
						// section. Below X lie only X's records.
						continue
					}
					if err == nil && v.Shape != nil && v.Shape.SRVAt != "" && stored != v.Stored && stored == v.Shape.SRVAt+"."+n {
						// SRV of a clusterset service X, read at _srv.X:
						// the etcd plugin reads X's key itself for the
						// additional section of a ClusterSetIP import,
						// whose target is X. Below X lie only X's records.
						continue
					}
					if rv := contract.ClassifyQuery(n, zone, zoneShapes); err != nil || rv.Refused || rv.Empty || rv.Stored != n {
						t.Errorf("%s: read %q, no published name's own key", what, key)
					}
				}
			}
		}
	}
	t.Logf("%d queries, %d refused, %d etcd reads by the others (%d of them in %s)", asked, refused, reads, csReads, csZone)
	if csReads == 0 {
		t.Fatal("no name of the clusterset zone was read")
	}
	if refused == 0 || reads == 0 {
		t.Fatal("the generated names must hold both refused and published ones")
	}
}

// clusterSetOnly keeps the slices of the clusterset kind.
func clusterSetOnly(in []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	return slices.DeleteFunc(in, func(s *discoveryv1.EndpointSlice) bool { return !contract.IsClusterSet(s) })
}
