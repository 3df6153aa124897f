package main

// Integration tests of the shipped Corefile: real EndpointSlice objects go
// through the serve syncer into a real embedded etcd, stock CoreDNS started
// in this process answers from it, and miekg/dns asks over UDP and TCP.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

const (
	upstreamTarget = "lb.example.net."
	upstreamAddr   = "192.0.2.55"
	waitFor        = 20 * time.Second
	// reverseCIDRs are the operator's reverse CIDRs in these tests: a /25
	// (CoreDNS serves it as 128 one-address zones) and an IPv6 /32.
	reverseCIDRs = "192.0.2.0/25,2001:db8::/32"
)

func bigAddresses(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("198.51.100.%d", i+1))
	}
	return out
}

// testSlices is the published world of the tests.
func testSlices() []*discoveryv1.EndpointSlice {
	return append([]*discoveryv1.EndpointSlice{
		testfixture.Slice("gw-a-ipv4", "*.gateway.cluster-a.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "192.0.2.10", "192.0.2.11"),
		testfixture.Slice("gw-b-ipv4", "*.gateway.cluster-b.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "192.0.2.40"),
		testfixture.Slice("gw-b-ipv6", "*.gateway.cluster-b.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv6, "2001:db8::b"),
		testfixture.Slice("gw-c-fqdn", "*.gateway.cluster-c.dev-team.clusters.xcc.test", discoveryv1.AddressTypeFQDN, upstreamTarget),
		testfixture.WithTTL(testfixture.Slice("api-a-ipv4", "api.cluster-a.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "192.0.2.20"), "60"),
		// A loopback address beside a valid one: only the valid one is served.
		testfixture.Slice("gw-d-ipv4", "*.gateway.cluster-d.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "127.0.0.1", "192.0.2.30"),
		// A hostname outside the zone publishes nothing.
		testfixture.Slice("evil", "*.gateway.evil.example.com", discoveryv1.AddressTypeIPv4, "192.0.2.66"),
		// An IPv6 address in an IPv4 slice is refused, the rest kept.
		testfixture.Slice("gw-e-ipv4", "*.gateway.cluster-e.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "2001:db8::e", "192.0.2.50"),
		testfixture.Slice("gw-big-ipv4", "*.gateway.big.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, bigAddresses(60)...),
		// cluster-d's API claims cluster-b's gateway address: no PTR for it.
		testfixture.Slice("api-d-ipv4", "api.cluster-d.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "192.0.2.40"),
	}, multiClusterSlices()...)
}

// multiClusterSlices are the multi-cluster names as the controller writes
// them into cluster-a: the same slices as in every cluster, and the self
// marker saying this cluster is cluster-a.
func multiClusterSlices() []*discoveryv1.EndpointSlice {
	local := contract.Locality{Policy: contract.PolicyLocal}
	failover := contract.Locality{Policy: contract.PolicyFailover, Order: []string{"cluster-b", "cluster-a"}}
	all := contract.Locality{Policy: contract.PolicyAll}
	out := []*discoveryv1.EndpointSlice{contract.BuildSelf(contract.Self{Namespace: "dev-team", Clusters: []string{"cluster-a"}})}
	for _, g := range []struct {
		gd, cluster string
		loc         contract.Locality
		healthy     bool
		ips, hosts  []string
	}{
		// web: local; cluster-a, this cluster, answers its own gateway.
		{"web", "cluster-a", local, true, []string{"192.0.2.10", "192.0.2.11"}, nil},
		{"web", "cluster-b", local, true, []string{"192.0.2.40", "2001:db8::b"}, nil},
		// edge: failover to cluster-a while cluster-b is unhealthy.
		{"edge", "cluster-a", failover, true, []string{"192.0.2.10"}, nil},
		{"edge", "cluster-b", failover, false, []string{"192.0.2.40", "2001:db8::b"}, nil},
		// cdn: only a hostname gateway: a CNAME.
		{"cdn", "cluster-c", all, true, nil, []string{upstreamTarget}},
		// mixed: a hostname beside addresses contributes nothing.
		{"mixed", "cluster-a", all, true, []string{"192.0.2.11"}, nil},
		{"mixed", "cluster-c", all, true, nil, []string{upstreamTarget}},
		// down: no healthy gateway; every published one answers.
		{"down", "cluster-a", all, false, []string{"192.0.2.10"}, nil},
		{"down", "cluster-b", all, false, []string{"192.0.2.40"}, nil},
	} {
		out = append(out, contract.Build(contract.Source{Namespace: "dev-team", GatewayDNS: g.gd, Cluster: g.cluster, Kind: contract.KindGateways,
			Hostname: contract.GatewaysHostname(g.gd, "dev-team", dnsworld.Zone), Locality: g.loc, Unhealthy: !g.healthy}, contract.Classify(g.ips, g.hosts, dnsworld.Zone))...)
	}
	// A Service's name in the namespace's default subtree.
	out = append(out, contract.Build(contract.Source{Namespace: "dev-team", GatewayDNS: "web", Cluster: "cluster-b", Kind: contract.KindName,
		Hostname: contract.DefaultNameHostname("shop", "dev-team", dnsworld.Zone), TTL: 30, Locality: contract.Locality{Policy: contract.PolicyAll}},
		contract.Classify([]string{"192.0.2.45"}, nil, dnsworld.Zone))...)
	out = append(out, headlessSlices()...)
	for _, s := range out {
		s.Namespace = testfixture.SliceNamespace
	}
	return out
}

// headlessSlices export headless Services, as the controller writes them
// into cluster-a: db (policy local) a StatefulSet's pods in cluster-a and
// cluster-b, one of them without a hostname; cache (policy all) one pod in
// each cluster.
func headlessSlices() []*discoveryv1.EndpointSlice {
	pg := []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}
	redis := []contract.Port{{Name: "redis", Protocol: corev1.ProtocolTCP, Port: 6379}}
	var out []*discoveryv1.EndpointSlice
	for _, h := range []struct {
		gd, cluster string
		loc         contract.Locality
		group       contract.HeadlessGroup
	}{
		{"db", "cluster-a", contract.Locality{Policy: contract.PolicyLocal}, contract.HeadlessGroup{Ports: pg,
			IPv4: []contract.Endpoint{{Address: "10.1.0.5", Hostname: "postgres-0"}, {Address: "10.1.0.6", Hostname: "postgres-1"}},
			IPv6: []contract.Endpoint{{Address: "fd00:1::5", Hostname: "postgres-0"}}}},
		{"db", "cluster-b", contract.Locality{Policy: contract.PolicyLocal}, contract.HeadlessGroup{Ports: pg,
			IPv4: []contract.Endpoint{{Address: "10.2.0.5", Hostname: "postgres-0"}, {Address: "10.2.0.9"}}}},
		{"cache", "cluster-a", contract.Locality{Policy: contract.PolicyAll}, contract.HeadlessGroup{Ports: redis,
			IPv4: []contract.Endpoint{{Address: "10.1.1.5", Hostname: "redis-0"}}}},
		{"cache", "cluster-b", contract.Locality{Policy: contract.PolicyAll}, contract.HeadlessGroup{Ports: redis,
			IPv4: []contract.Endpoint{{Address: "10.2.1.5", Hostname: "redis-0"}}}},
	} {
		out = append(out, contract.BuildHeadless(contract.Source{Namespace: "dev-team", GatewayDNS: h.gd, Cluster: h.cluster, Kind: contract.KindHeadless,
			Hostname: contract.HeadlessHostname(h.gd, "dev-team", dnsworld.Zone), Locality: h.loc},
			contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{h.group}})...)
	}
	return out
}

// startWorld starts etcd, the serve syncer on a fake API holding slices,
// an upstream resolver for CNAME targets, and CoreDNS with the shipped
// Corefile and the guard generated for the zone xcc.test and reverseCIDRs.
func startWorld(t *testing.T, slices []*discoveryv1.EndpointSlice) *dnsworld.World {
	t.Helper()
	return startZone(t, world{zone: dnsworld.Zone, directives: coredns.Directives, reverse: reverseCIDRs}, slices)
}

// world says which world startZone starts.
type world struct {
	zone       string
	directives []string
	// reverse are serve's reverse CIDRs, which the guard file serves.
	reverse string
	// recordReads puts an etcd endpoint that records the keys read
	// between CoreDNS and etcd (World.Reads).
	recordReads bool
}

// startZone is startWorld in w's zone (the slices' names are written for
// xcc.test and moved into it), plugin order and reverse CIDRs.
func startZone(t testing.TB, w world, slices []*discoveryv1.EndpointSlice) *dnsworld.World {
	t.Helper()
	for _, s := range slices {
		if h, ok := s.Annotations[contract.AnnotationHostname]; ok {
			s.Annotations[contract.AnnotationHostname] = inZone(h, w.zone)
		}
	}
	return dnsworld.Start(t, dnsworld.Config{
		Zone: w.zone, Corefile: testfixture.ShippedCorefile(t), Directives: w.directives, Slices: slices, ReverseCIDRs: w.reverse,
		RecordReads: w.recordReads,
		// An operator's own records, put by hand as `etcdctl put` would: a
		// name, a PTR inside the reverse CIDRs, and one outside them.
		Records: map[string]string{
			skydnsrecord.Key(inZone("db.custom.xcc.test", w.zone)): `{"host":"192.0.2.99","ttl":60}`,
			"/skydns/arpa/in-addr/192/0/2/99":                      `{"host":"` + inZone("db.custom.xcc.test", w.zone) + `","ttl":60}`,
			"/skydns/arpa/in-addr/192/0/2/200":                     `{"host":"` + inZone("outside.custom.xcc.test", w.zone) + `","ttl":60}`,
			// At the key of cluster-d's gateway address: the operator's PTR stays.
			"/skydns/arpa/in-addr/192/0/2/30": `{"host":"` + inZone("ops.custom.xcc.test", w.zone) + `","ttl":60}`,
		},
		// It knows the one name a hostname load balancer points at.
		Upstream: testfixture.StartUpstream(t, upstreamTarget, upstreamAddr),
	})
}

// inZone moves a name or zone-file line written for xcc.test into zone.
func inZone(s, zone string) string { return strings.ReplaceAll(s, "xcc.test", zone) }

// zones are the zones the answer table runs in: the charts' default, and
// one of another depth.
var zones = []string{dnsworld.Zone, "mesh.example.org"}

// orders are the plugin orders the Corefile must answer alike in: this
// build's and the upstream CoreDNS image's.
var orders = []struct {
	name       string
	directives []string
}{{"build", coredns.Directives}, {"upstream", coredns.Upstream}}

// question is a query name and type.
type question struct {
	name  string
	qtype uint16
}

// wildcardLabelQueries hold a label the etcd plugin takes for a wildcard
// (`*` or `any`, after lower-casing), outside the names below gateway.: it
// would read and decode the whole subtree above the label. The Corefile
// answers each NXDOMAIN before the plugin.
var wildcardLabelQueries = []question{
	{"any.any.any.any.clusters.xcc.test.", dns.TypeSRV}, // every cluster and namespace name
	{"r4711.x.any.clusters.xcc.test.", dns.TypeA},       // a random first label passes every cache
	{"any.clusters.xcc.test.", dns.TypeTXT},
	{"*.clusters.xcc.test.", dns.TypeA},
	{"*.dev-team.clusters.xcc.test.", dns.TypeAAAA},
	{`\*.cluster-a.dev-team.clusters.xcc.test.`, dns.TypeSRV}, // escaped: the same label on the wire
	{`\042.clusters.xcc.test.`, dns.TypeA},                    // `*` as a decimal escape
	{"cluster-a.AnY.clusters.xcc.test.", dns.TypeSRV},
	{"gateway.cluster-a.any.clusters.xcc.test.", dns.TypeA},
	{"kuard.gateway.any.dev-team.clusters.xcc.test.", dns.TypeA}, // rewritten onto gateway.any.dev-team.
	{"api.any.dev-team.clusters.xcc.test.", dns.TypeAAAA},
	{"*.api.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA},
	// The zone apex's own path: every record of the zone.
	{"ANY.xcc.test.", dns.TypeA},
	{"any.xcc.test.", dns.TypeTXT},
	{"*.xcc.test.", dns.TypeSRV},
	{"db.*.xcc.test.", dns.TypeA},
	// The multi-cluster names: rewritten onto <gd>.any.gateways. or
	// any.<ns>.gateways., which never reach etcd either.
	{"kuard.web.any.gateways.xcc.test.", dns.TypeA},
	{"x.any.dev-team.gateways.xcc.test.", dns.TypeA},
	{"any.dev-team.gateways.xcc.test.", dns.TypeA},
	{"*.gateways.xcc.test.", dns.TypeA},
	{"any.dev-team.names.xcc.test.", dns.TypeA},
	// The headless names: the name across clusters is rewritten onto
	// _all.<gd>.<ns>.services. first, which holds the label still.
	{"any.dev-team.services.xcc.test.", dns.TypeA},
	{"db.any.services.xcc.test.", dns.TypeA},
	{"any.db.dev-team.services.xcc.test.", dns.TypeA},
	{"postgres-0.any.db.dev-team.services.xcc.test.", dns.TypeA},
	{"_pg._tcp.any.dev-team.services.xcc.test.", dns.TypeSRV},
	{"*.services.xcc.test.", dns.TypeSRV},
}

// hostileQueries are names of no shape the zone publishes, the ways a
// query name can make the etcd plugin read more than one name's key: a '/'
// (or its escape) splits a label into several path elements, an escaped
// dot or byte, a name below a leaf, a record key's own name, a name
// deeper or shallower than any shape of its subtree. Each gets NXDOMAIN
// before etcd.
var hostileQueries = []question{
	{"/.xcc.test.", dns.TypeSRV},
	{"/.xcc.test.", dns.TypeA},
	{`\047.xcc.test.`, dns.TypeA},
	{"//.xcc.test.", dns.TypeTXT},
	{"clusters//dev-team.xcc.test.", dns.TypeA},
	{"x./.dev-team.gateways.xcc.test.", dns.TypeA},
	{"/.dev-team.clusters.xcc.test.", dns.TypeA},
	{"kuard.gateway./.dev-team.clusters.xcc.test.", dns.TypeA},
	{"a/b.gateway.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA},
	{`a\.b.gateway.cluster-a.dev-team.clusters.xcc.test.`, dns.TypeA},
	{`\000.gateway.cluster-a.dev-team.clusters.xcc.test.`, dns.TypeA},
	{"x y.dev-team.names.xcc.test.", dns.TypeA},
	{"_x.gateway.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA},
	{"_all.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA},
	// Where the records of the headless name db... are stored: no name of
	// the zone, though the rewrite of db... reads its key.
	{"_all.db.dev-team.services.xcc.test.", dns.TypeA},
	{"_all.db.dev-team.services.xcc.test.", dns.TypeAAAA},
	{"_all.db.dev-team.services.xcc.test.", dns.TypeSRV},
	{"_ALL.db.dev-team.services.xcc.test.", dns.TypeA},
	{"x.shop.dev-team.names.xcc.test.", dns.TypeA},
	{"a.b.c.d.e.f.dev-team.services.xcc.test.", dns.TypeA},
	{"_pg.db.dev-team.services.xcc.test.", dns.TypeSRV},
	{"_pg._tls.db.dev-team.services.xcc.test.", dns.TypeSRV},
	{"x.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA},
	{"_1a2b.dev-team.names.xcc.test.", dns.TypeA},
	{"dev-team.gateways.xcc.test.gateways.xcc.test.", dns.TypeA},
}

// TestCorefileAnswers asks the shipped Corefile with the guard generated
// for two zones, in this build's plugin order and in the upstream CoreDNS
// image's, and expects the same answers.
func TestCorefileAnswers(t *testing.T) {
	for _, zone := range zones {
		for _, order := range orders {
			t.Run(zone+"/"+order.name, func(t *testing.T) { testCorefileAnswers(t, zone, order.directives) })
		}
	}
}

// testCorefileAnswers asks every question of its table, over UDP and then
// TCP (from the cache), and checks rcode, answer and SOA. It is long for
// its table: one row per question, which reads as the Corefile's answers.
func testCorefileAnswers(t *testing.T, zone string, directives []string) {
	w := startZone(t, world{zone: zone, directives: directives, reverse: reverseCIDRs}, testSlices())
	const (
		a   = "gateway.cluster-a.dev-team.clusters.xcc.test."
		api = "api.cluster-a.dev-team.clusters.xcc.test."
		web = "web.dev-team.gateways.xcc.test."
		db  = "db.dev-team.services.xcc.test."
		// rev6b is the reverse name of cluster-b's 2001:db8::b.
		rev6b = "b.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa."
	)
	type row struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string // zone-file lines
		soa    bool     // the authority section holds the zone's SOA
	}
	tests := []row{
		// The seed walkthrough's name: every name below gateway.<cluster> answers.
		{"kuard." + a, dns.TypeA, dns.RcodeSuccess, []string{"kuard." + a + " 30 IN A 192.0.2.10", "kuard." + a + " 30 IN A 192.0.2.11"}, false},
		{a, dns.TypeA, dns.RcodeSuccess, []string{a + " 30 IN A 192.0.2.10", a + " 30 IN A 192.0.2.11"}, false},
		{"x.y.z." + a, dns.TypeA, dns.RcodeSuccess, []string{"x.y.z." + a + " 30 IN A 192.0.2.10", "x.y.z." + a + " 30 IN A 192.0.2.11"}, false},
		// Names are case-insensitive; the rewrite answers in lower case.
		{"KuArD.GATEWAY.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard." + a + " 30 IN A 192.0.2.10", "kuard." + a + " 30 IN A 192.0.2.11"}, false},
		// An existing name asked for another type: NODATA, never NXDOMAIN.
		{"kuard." + a, dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"kuard." + a, dns.TypeTXT, dns.RcodeSuccess, nil, true},
		{"kuard." + a, dns.TypeMX, dns.RcodeSuccess, nil, true},
		{"kuard." + a, dns.TypeCNAME, dns.RcodeSuccess, nil, true},
		// Dual stack.
		{"kuard.gateway.cluster-b.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.gateway.cluster-b.dev-team.clusters.xcc.test. 30 IN A 192.0.2.40"}, false},
		{"kuard.gateway.cluster-b.dev-team.clusters.xcc.test.", dns.TypeAAAA, dns.RcodeSuccess, []string{"kuard.gateway.cluster-b.dev-team.clusters.xcc.test. 30 IN AAAA 2001:db8::b"}, false},
		// A hostname load balancer: the CNAME and, through the upstream, its address.
		{"kuard.gateway.cluster-c.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.gateway.cluster-c.dev-team.clusters.xcc.test. 30 IN CNAME " + upstreamTarget, upstreamTarget + " 30 IN A " + upstreamAddr}, false},
		{"kuard.gateway.cluster-c.dev-team.clusters.xcc.test.", dns.TypeCNAME, dns.RcodeSuccess, []string{"kuard.gateway.cluster-c.dev-team.clusters.xcc.test. 30 IN CNAME " + upstreamTarget}, false},
		// The API server name, with the TTL its slice asks for.
		{api, dns.TypeA, dns.RcodeSuccess, []string{api + " 60 IN A 192.0.2.20"}, false},
		{api, dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"www." + api, dns.TypeA, dns.RcodeNameError, nil, true},
		// Empty non-terminals: NODATA, not the records below them.
		{"cluster-a.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"clusters.xcc.test.", dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"xcc.test.", dns.TypeSOA, dns.RcodeSuccess, []string{"xcc.test. 30 IN SOA ns.dns.xcc.test. hostmaster.xcc.test. 1 7200 1800 86400 5"}, false},
		{"xcc.test.", dns.TypeNS, dns.RcodeSuccess, []string{"xcc.test. 30 IN NS ns.dns.xcc.test."}, false},
		// Unknown names: NXDOMAIN with the SOA.
		{"kuard.gateway.nosuch.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		{"nosuch.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		// The multi-cluster gateway name, as cluster-a's DNS answers it,
		// with the failover TTL. web is local: cluster-a's own gateway
		// only, so AAAA (cluster-b's family) is NODATA here.
		{"kuard." + web, dns.TypeA, dns.RcodeSuccess, []string{"kuard." + web + " 5 IN A 192.0.2.10", "kuard." + web + " 5 IN A 192.0.2.11"}, false},
		{web, dns.TypeA, dns.RcodeSuccess, []string{web + " 5 IN A 192.0.2.10", web + " 5 IN A 192.0.2.11"}, false},
		{"x.y." + web, dns.TypeA, dns.RcodeSuccess, []string{"x.y." + web + " 5 IN A 192.0.2.10", "x.y." + web + " 5 IN A 192.0.2.11"}, false},
		{"KuArD.WEB.dev-team.gateways.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard." + web + " 5 IN A 192.0.2.10", "kuard." + web + " 5 IN A 192.0.2.11"}, false},
		{"any." + web, dns.TypeA, dns.RcodeSuccess, []string{"any." + web + " 5 IN A 192.0.2.10", "any." + web + " 5 IN A 192.0.2.11"}, false},
		{"kuard." + web, dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"kuard." + web, dns.TypeTXT, dns.RcodeSuccess, nil, true},
		{web, dns.TypeCNAME, dns.RcodeSuccess, nil, true},
		// edge fails over to cluster-a while cluster-b is unhealthy.
		{"kuard.edge.dev-team.gateways.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.edge.dev-team.gateways.xcc.test. 5 IN A 192.0.2.10"}, false},
		{"kuard.edge.dev-team.gateways.xcc.test.", dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		// Only a hostname gateway: the CNAME and its address.
		// The whole answer lives as long as the CNAME's TTL.
		{"kuard.cdn.dev-team.gateways.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.cdn.dev-team.gateways.xcc.test. 5 IN CNAME " + upstreamTarget, upstreamTarget + " 5 IN A " + upstreamAddr}, false},
		{"kuard.cdn.dev-team.gateways.xcc.test.", dns.TypeCNAME, dns.RcodeSuccess, []string{"kuard.cdn.dev-team.gateways.xcc.test. 5 IN CNAME " + upstreamTarget}, false},
		// A hostname beside addresses: the addresses only, never a CNAME beside them.
		{"kuard.mixed.dev-team.gateways.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.mixed.dev-team.gateways.xcc.test. 5 IN A 192.0.2.11"}, false},
		{"kuard.mixed.dev-team.gateways.xcc.test.", dns.TypeCNAME, dns.RcodeSuccess, nil, true},
		// No healthy gateway: every published one rather than none.
		{"kuard.down.dev-team.gateways.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.down.dev-team.gateways.xcc.test. 5 IN A 192.0.2.10", "kuard.down.dev-team.gateways.xcc.test. 5 IN A 192.0.2.40"}, false},
		// Unknown GatewayDNS or namespace: NXDOMAIN.
		{"kuard.nosuch.dev-team.gateways.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		{"kuard.web.other-team.gateways.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		// Empty non-terminals of the multi-cluster subtrees: NODATA.
		{"gateways.xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"dev-team.gateways.xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"dev-team.gateways.xcc.test.", dns.TypeSRV, dns.RcodeSuccess, nil, true},
		{"names.xcc.test.", dns.TypeTXT, dns.RcodeSuccess, nil, true},
		{"dev-team.names.xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		// A Service's name: exactly that name.
		{"shop.dev-team.names.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"shop.dev-team.names.xcc.test. 30 IN A 192.0.2.45"}, false},
		{"shop.dev-team.names.xcc.test.", dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"www.shop.dev-team.names.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		{"nosuch.dev-team.names.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		// An exported headless Service, as cluster-a's DNS answers it, with
		// the multi-cluster TTL. db is local: the name across clusters
		// answers cluster-a's own pods, SRV points at their names.
		{db, dns.TypeA, dns.RcodeSuccess, []string{db + " 5 IN A 10.1.0.5", db + " 5 IN A 10.1.0.6"}, false},
		{db, dns.TypeAAAA, dns.RcodeSuccess, []string{db + " 5 IN AAAA fd00:1::5"}, false},
		{db, dns.TypeTXT, dns.RcodeSuccess, nil, true},
		{db, dns.TypeCNAME, dns.RcodeSuccess, nil, true},
		{db, dns.TypeSRV, dns.RcodeSuccess, nil, true},
		{"_pg._tcp." + db, dns.TypeSRV, dns.RcodeSuccess, []string{
			"_pg._tcp." + db + " 5 IN SRV 10 50 5432 postgres-0.cluster-a." + db,
			"_pg._tcp." + db + " 5 IN SRV 10 50 5432 postgres-1.cluster-a." + db}, false},
		{"_pg._tcp." + db, dns.TypeA, dns.RcodeSuccess, nil, true},
		{"_pg._tcp." + db, dns.TypeCNAME, dns.RcodeSuccess, nil, true},
		{"_pg._tcp." + db, dns.TypeTXT, dns.RcodeSuccess, nil, true},
		{"_pg._udp." + db, dns.TypeSRV, dns.RcodeNameError, nil, true},
		{"_http._tcp." + db, dns.TypeSRV, dns.RcodeNameError, nil, true},
		// cache is all: every cluster's pods.
		{"_redis._tcp.cache.dev-team.services.xcc.test.", dns.TypeSRV, dns.RcodeSuccess, []string{
			"_redis._tcp.cache.dev-team.services.xcc.test. 5 IN SRV 10 50 6379 redis-0.cluster-a.cache.dev-team.services.xcc.test.",
			"_redis._tcp.cache.dev-team.services.xcc.test. 5 IN SRV 10 50 6379 redis-0.cluster-b.cache.dev-team.services.xcc.test."}, false},
		// Asked once only, as every name here: a second ask of a name could
		// be a cache hit whose TTL has counted down. The answer is in lower case.
		{"Cache.DEV-team.services.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{
			"cache.dev-team.services.xcc.test. 5 IN A 10.1.1.5", "cache.dev-team.services.xcc.test. 5 IN A 10.2.1.5"}, false},
		// One cluster's pods, whatever the policy.
		{"cluster-b." + db, dns.TypeA, dns.RcodeSuccess, []string{"cluster-b." + db + " 5 IN A 10.2.0.5", "cluster-b." + db + " 5 IN A 10.2.0.9"}, false},
		{"cluster-b." + db, dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"cluster-a." + db, dns.TypeAAAA, dns.RcodeSuccess, []string{"cluster-a." + db + " 5 IN AAAA fd00:1::5"}, false},
		{"cluster-a." + db, dns.TypeSRV, dns.RcodeSuccess, nil, true},
		{"cluster-a." + db, dns.TypeCNAME, dns.RcodeSuccess, nil, true},
		// One pod: by its hostname, or by its dashed address without one.
		{"postgres-0.cluster-a." + db, dns.TypeA, dns.RcodeSuccess, []string{"postgres-0.cluster-a." + db + " 5 IN A 10.1.0.5"}, false},
		{"postgres-0.cluster-a." + db, dns.TypeAAAA, dns.RcodeSuccess, []string{"postgres-0.cluster-a." + db + " 5 IN AAAA fd00:1::5"}, false},
		{"postgres-0.cluster-b." + db, dns.TypeA, dns.RcodeSuccess, []string{"postgres-0.cluster-b." + db + " 5 IN A 10.2.0.5"}, false},
		{"10-2-0-9.cluster-b." + db, dns.TypeA, dns.RcodeSuccess, []string{"10-2-0-9.cluster-b." + db + " 5 IN A 10.2.0.9"}, false},
		{"postgres-1.cluster-a." + db, dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"postgres-0.cluster-a." + db, dns.TypeSRV, dns.RcodeSuccess, nil, true},
		{"postgres-0.cluster-a." + db, dns.TypeCNAME, dns.RcodeSuccess, nil, true},
		{"postgres-0.cluster-a." + db, dns.TypeTXT, dns.RcodeSuccess, nil, true},
		// Names that do not exist: NXDOMAIN.
		{"postgres-9.cluster-a." + db, dns.TypeA, dns.RcodeNameError, nil, true},
		{"www.postgres-0.cluster-a." + db, dns.TypeA, dns.RcodeNameError, nil, true},
		{"x._pg._tcp." + db, dns.TypeSRV, dns.RcodeNameError, nil, true},
		// Where an SRV target's addresses are stored: no name of the zone.
		{"postgres-0.cluster-a._pg._tcp." + db, dns.TypeA, dns.RcodeNameError, nil, true},
		{"postgres-0.cluster-a._pg._tcp." + db, dns.TypeSRV, dns.RcodeNameError, nil, true},
		{"nosuch." + db, dns.TypeA, dns.RcodeNameError, nil, true},
		{"nosuch.dev-team.services.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		// SRV of a name that is no SRV name is NODATA without asking etcd,
		// whether the name exists or not.
		{"db.other-team.services.xcc.test.", dns.TypeSRV, dns.RcodeSuccess, nil, true},
		{"db.other-team.services.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		// Empty non-terminals: NODATA, not the records below them.
		{"services.xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"dev-team.services.xcc.test.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"dev-team.services.xcc.test.", dns.TypeSRV, dns.RcodeSuccess, nil, true},
		{"_tcp." + db, dns.TypeA, dns.RcodeSuccess, nil, true},
		{"_tcp." + db, dns.TypeSRV, dns.RcodeSuccess, nil, true},
		// Refused input beside valid input: the valid part is served.
		{"kuard.gateway.cluster-d.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.gateway.cluster-d.dev-team.clusters.xcc.test. 30 IN A 192.0.2.30"}, false},
		{"kuard.gateway.cluster-e.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.gateway.cluster-e.dev-team.clusters.xcc.test. 30 IN A 192.0.2.50"}, false},
		{"kuard.gateway.cluster-e.dev-team.clusters.xcc.test.", dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		// A record an operator put by hand is served beside ours.
		{"db.custom.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"db.custom.xcc.test. 60 IN A 192.0.2.99"}, false},
		// `any` and `*` below gateway. are names like any other there: the
		// rewrite maps them onto the gateway before the etcd plugin sees them.
		{"any." + a, dns.TypeA, dns.RcodeSuccess, []string{"any." + a + " 30 IN A 192.0.2.10", "any." + a + " 30 IN A 192.0.2.11"}, false},
		// `*` is no letter, digit, '-' or '_': refused, as anywhere.
		{"*." + a, dns.TypeA, dns.RcodeNameError, nil, true},
		{`\*.` + a, dns.TypeTXT, dns.RcodeNameError, nil, true},
		{"x.any." + a, dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{"ANY.gateway.cluster-b.dev-team.clusters.xcc.test.", dns.TypeAAAA, dns.RcodeSuccess, []string{"any.gateway.cluster-b.dev-team.clusters.xcc.test. 30 IN AAAA 2001:db8::b"}, false},
		// Reverse names inside the reverse CIDRs: a PTR to the name that
		// answers with the address, with that record's TTL.
		{"10.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"10.2.0.192.in-addr.arpa. 30 IN PTR " + a}, false},
		{"11.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"11.2.0.192.in-addr.arpa. 30 IN PTR " + a}, false},
		{"20.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"20.2.0.192.in-addr.arpa. 60 IN PTR " + api}, false},
		{rev6b, dns.TypePTR, dns.RcodeSuccess, []string{rev6b + " 30 IN PTR gateway.cluster-b.dev-team.clusters.xcc.test."}, false},
		// The operator's own PTRs inside the CIDRs are served, also at the
		// key serve wanted for cluster-d's gateway address.
		{"99.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"99.2.0.192.in-addr.arpa. 60 IN PTR db.custom.xcc.test."}, false},
		{"30.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"30.2.0.192.in-addr.arpa. 60 IN PTR ops.custom.xcc.test."}, false},
		// Two clusters claim 192.0.2.40: no PTR. No published address: none.
		{"40.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, nil, true},
		{"12.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, nil, true},
		// Other types of reverse names are NODATA, never a CNAME to the
		// PTR target, nor the subtree below an empty non-terminal.
		{"10.2.0.192.in-addr.arpa.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"8.b.d.0.1.0.0.2.ip6.arpa.", dns.TypeA, dns.RcodeSuccess, nil, true},
		{"8.b.d.0.1.0.0.2.ip6.arpa.", dns.TypeTXT, dns.RcodeSuccess, nil, true},
		// Outside the reverse CIDRs our server answers nothing, not even a
		// PTR that is in etcd: the name goes to the upstream (which refuses).
		{"200.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeRefused, nil, false},
		{"5.100.51.198.in-addr.arpa.", dns.TypePTR, dns.RcodeRefused, nil, false},
		{"2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeRefused, nil, false},
		// Inside a reverse zone only the reverse name of one address reaches
		// etcd; the names above it are empty non-terminals.
		{"0.8.b.d.0.1.0.0.2.ip6.arpa.", dns.TypePTR, dns.RcodeSuccess, nil, true},
		{"x.8.b.d.0.1.0.0.2.ip6.arpa.", dns.TypePTR, dns.RcodeNameError, nil, true},
		{"/.8.b.d.0.1.0.0.2.ip6.arpa.", dns.TypePTR, dns.RcodeNameError, nil, true},
		{"0." + rev6b, dns.TypePTR, dns.RcodeNameError, nil, true},
		{"A." + rev6b[2:], dns.TypePTR, dns.RcodeNameError, nil, true},
		{"x.10.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, nil, true},
	}
	// The SOA of a negative answer in a reverse zone is that zone's: a
	// one-address zone of the /25, the IPv6 /32.
	soaZones := map[string]string{
		"0.8.b.d.0.1.0.0.2.ip6.arpa.": "8.b.d.0.1.0.0.2.ip6.arpa.",
		"x.8.b.d.0.1.0.0.2.ip6.arpa.": "8.b.d.0.1.0.0.2.ip6.arpa.",
		"/.8.b.d.0.1.0.0.2.ip6.arpa.": "8.b.d.0.1.0.0.2.ip6.arpa.",
		"0." + rev6b:                  "8.b.d.0.1.0.0.2.ip6.arpa.",
		"A." + rev6b[2:]:              "8.b.d.0.1.0.0.2.ip6.arpa.",
		"x.10.2.0.192.in-addr.arpa.":  "10.2.0.192.in-addr.arpa.",
		"40.2.0.192.in-addr.arpa.":    "40.2.0.192.in-addr.arpa.",
		"12.2.0.192.in-addr.arpa.":    "12.2.0.192.in-addr.arpa.",
		"10.2.0.192.in-addr.arpa.":    "10.2.0.192.in-addr.arpa.",
		"8.b.d.0.1.0.0.2.ip6.arpa.":   "8.b.d.0.1.0.0.2.ip6.arpa.",
	}
	// Anywhere else they never reach etcd (TestGuardReads), nor do names
	// of no published shape.
	for _, q := range slices.Concat(wildcardLabelQueries, hostileQueries) {
		tests = append(tests, row{q.name, q.qtype, dns.RcodeNameError, nil, true})
	}
	// SRV is answered at SRV names only: elsewhere it would list the
	// record keys below the name.
	for _, name := range []string{a, "kuard." + a, api, web, "x." + web, "shop.dev-team.names.xcc.test.", "cluster-a." + db, "postgres-0.cluster-a." + db} {
		tests = append(tests, row{name, dns.TypeSRV, dns.RcodeSuccess, nil, true})
	}
	if zone != dnsworld.Zone {
		for i := range tests {
			tests[i].name = inZone(tests[i].name, zone)
			for j := range tests[i].answer {
				tests[i].answer[j] = inZone(tests[i].answer[j], zone)
			}
		}
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range tests {
			t.Run(network+"/"+tc.name+"/"+dns.TypeToString[tc.qtype], func(t *testing.T) {
				r := w.Ask(t, network, tc.name, tc.qtype, 0)
				if r.Rcode != tc.rcode {
					t.Fatalf("rcode %s, want %s\n%v", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode], r)
				}
				got, want := testfixture.Lines(r.Answer), testfixture.ZoneLines(tc.answer...)
				if network == "tcp" {
					// The second pass is served from the cache: TTLs may have
					// counted down by a second or two.
					got, want = testfixture.StripTTL(got), testfixture.StripTTL(want)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("answer\n got %q\nwant %q", got, want)
				}
				if tc.soa {
					soaZone := cmp.Or(soaZones[tc.name], zone+".")
					if len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA || r.Ns[0].Header().Name != soaZone {
						t.Fatalf("authority %v, want the %s SOA", r.Ns, soaZone)
					}
					// Negative answers are cached downstream for seconds, not minutes.
					if ttl := min(r.Ns[0].Header().Ttl, r.Ns[0].(*dns.SOA).Minttl); ttl > 5 {
						t.Fatalf("negative TTL %d s, want at most 5", ttl)
					}
				}
			})
		}
	}
}

// rangeMetric is the embedded etcd's count of the Range requests it served;
// etcd registers it with the process's default Prometheus registry.
const rangeMetric = "etcd_mvcc_range_total"

func rangeRequests(t testing.TB) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == rangeMetric && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("etcd metric %s not found", rangeMetric)
	return 0
}

// Without reverse CIDRs (the chart's default) the guard file has no
// reverse server block: the zone is served and no reverse name at all,
// not even the PTRs put into etcd by hand.
func TestCorefileWithoutReverseCIDRs(t *testing.T) {
	w := startZone(t, world{zone: dnsworld.Zone, directives: coredns.Directives}, testSlices())
	if r := w.Ask(t, "udp", "kuard.gateway.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA, 0); len(r.Answer) != 2 {
		t.Errorf("gateway name: %v", r)
	}
	for _, name := range []string{"10.2.0.192.in-addr.arpa.", "99.2.0.192.in-addr.arpa."} {
		if r := w.Ask(t, "udp", name, dns.TypePTR, 0); r.Rcode != dns.RcodeRefused {
			t.Errorf("PTR %s: %s, want the upstream's REFUSED", name, dns.RcodeToString[r.Rcode])
		}
	}
}

func TestTruncatedOverUDPWholeOverTCP(t *testing.T) {
	w := startWorld(t, testSlices())
	const name = "kuard.gateway.big.dev-team.clusters.xcc.test."
	udp := w.Ask(t, "udp", name, dns.TypeA, 0)
	if !udp.Truncated {
		t.Fatalf("60 A records over UDP with a 512-octet buffer: want TC set, got %d answers", len(udp.Answer))
	}
	tcp := w.Ask(t, "tcp", name, dns.TypeA, 0)
	if tcp.Truncated || len(tcp.Answer) != 60 {
		t.Fatalf("over TCP: truncated %v, %d answers; want all 60", tcp.Truncated, len(tcp.Answer))
	}
	big := w.Ask(t, "udp", "other."+name[len("kuard."):], dns.TypeA, 4096)
	if big.Truncated || len(big.Answer) != 60 {
		t.Fatalf("over UDP with a 4096-octet EDNS buffer: truncated %v, %d answers; want all 60", big.Truncated, len(big.Answer))
	}
}

func TestSliceChangesReachDNS(t *testing.T) {
	w := startWorld(t, testSlices())
	ctx := context.Background()
	// A new gateway appears: its name resolves (it was never cached).
	if _, err := w.Kube.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Create(ctx,
		testfixture.Slice("gw-f-ipv4", "*.gateway.cluster-f.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "192.0.2.60"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		r := w.Ask(t, "udp", fmt.Sprintf("n%d.gateway.cluster-f.dev-team.clusters.xcc.test.", time.Now().UnixNano()), dns.TypeA, 0)
		return r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1
	})
	// A slice is deleted: its records leave etcd, the name is gone.
	if err := w.Kube.DiscoveryV1().EndpointSlices(testfixture.SliceNamespace).Delete(ctx, "gw-a-ipv4", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		resp, err := w.Etcd.Get(ctx, "/skydns/test/xcc/clusters/dev-team/cluster-a/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		// Only the api name's record and its name record are left.
		return err == nil && resp.Count == 2
	})
	r := w.Ask(t, "udp", "fresh.gateway.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA, 0)
	if r.Rcode != dns.RcodeNameError {
		t.Fatalf("after deleting the slice: %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
	// The hand record is still there.
	if got := w.Ask(t, "udp", "db.custom.xcc.test.", dns.TypeA, 0); len(got.Answer) != 1 {
		t.Fatalf("hand record gone: %v", got)
	}
}

// TestEtcdctlListsRecords runs the etcdctl a user would, built by `make
// tools`, against the records.
func TestEtcdctlListsRecords(t *testing.T) {
	etcdctl := os.Getenv("ETCDCTL")
	if etcdctl == "" {
		t.Skip("ETCDCTL is not set; `make test` sets it to bin/etcdctl")
	}
	w := startWorld(t, testSlices())
	out, err := exec.Command(etcdctl, "--endpoints", w.EtcdServer.Endpoints()[0], "get", "--prefix", "/skydns/test/xcc/clusters/dev-team/cluster-a/").CombinedOutput()
	if err != nil {
		t.Fatalf("etcdctl: %v\n%s", err, out)
	}
	text := string(out)
	// The leaf's shape is skydnsrecord's to choose.
	key := skydnsrecord.RecordKey("gateway.cluster-a.dev-team.clusters.xcc.test", "EndpointSlice xcc-dns/gw-a-ipv4", "192.0.2.10")
	for _, want := range []string{key + "\n", `"host":"192.0.2.10","ttl":30,"owner":"EndpointSlice xcc-dns/gw-a-ipv4"`, `"host":"192.0.2.20","ttl":60`} {
		if !strings.Contains(text, want) {
			t.Errorf("etcdctl output lacks %q:\n%s", want, text)
		}
	}
}

func eventually(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStaleAnswersWhileEtcdIsDown: with etcd gone (serve restarting), a
// name answered before is answered from the cache with a short TTL at
// once, not after the etcd plugin's 5 s timeout; a name never answered
// gets SERVFAIL once that timeout passes (it is the stock plugin's, fixed).
func TestStaleAnswersWhileEtcdIsDown(t *testing.T) {
	w := startWorld(t, []*discoveryv1.EndpointSlice{
		testfixture.WithTTL(testfixture.Slice("gw-s-ipv4", "*.gateway.stale.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "192.0.2.77"), "5"),
	})
	const name = "kuard.gateway.stale.dev-team.clusters.xcc.test."
	if r := w.Ask(t, "udp", name, dns.TypeA, 0); len(r.Answer) != 1 {
		t.Fatalf("before etcd stops: %v", r)
	}
	w.EtcdServer.Close()
	time.Sleep(6 * time.Second) // past the record's 5 s TTL

	began := time.Now()
	r := w.Ask(t, "udp", name, dns.TypeA, 0)
	took := time.Since(began)
	if got := testfixture.Lines(r.Answer); r.Rcode != dns.RcodeSuccess || len(got) != 1 || !strings.Contains(got[0], "192.0.2.77") || r.Answer[0].Header().Ttl != 5 {
		t.Errorf("stale answer with etcd down: %s %v, want 192.0.2.77 with TTL 5", dns.RcodeToString[r.Rcode], got)
	}
	if took > 2*time.Second {
		t.Errorf("stale answer took %s: the cache waited for etcd", took)
	}
	m := new(dns.Msg)
	m.SetQuestion("kuard.gateway.never.dev-team.clusters.xcc.test.", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 15 * time.Second}).Exchange(m, w.DNS.UDP)
	if err != nil || r.Rcode != dns.RcodeServerFailure {
		t.Errorf("a name never answered, with etcd down: %v %v, want SERVFAIL", r, err)
	}
}

// The SRV answer of a headless Service carries its targets' addresses in
// the additional section, A and AAAA of a dual-stack pod (stored below
// the SRV name, read with it), so a client needs no second query.
func TestHeadlessSRVAdditional(t *testing.T) {
	w := startWorld(t, testSlices())
	const db = "db.dev-team.services.xcc.test."
	for _, network := range []string{"udp", "tcp"} {
		r := w.Ask(t, network, "_pg._tcp."+db, dns.TypeSRV, 0)
		got := testfixture.StripTTL(testfixture.Lines(r.Extra))
		want := testfixture.StripTTL(testfixture.ZoneLines(
			"postgres-0.cluster-a."+db+" 5 IN A 10.1.0.5",
			"postgres-0.cluster-a."+db+" 5 IN AAAA fd00:1::5",
			"postgres-1.cluster-a."+db+" 5 IN A 10.1.0.6"))
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 2 || !slices.Equal(got, want) {
			t.Errorf("%s: rcode %s, answer %v, additional %q; want 2 SRV and additional %q", network, dns.RcodeToString[r.Rcode], r.Answer, got, want)
		}
	}
}

// An exported headless Service of 1,000 pods in each of two clusters,
// policy All, asked over TCP in cluster-a: the SRV answer is whole (TC
// clear) with every target's address in the additional section, and both
// the SRV answer and the name's addresses hold pods of both clusters.
func TestHeadlessThousandsOverTCP(t *testing.T) {
	all := contract.Locality{Policy: contract.PolicyAll}
	pg := []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}
	world := []*discoveryv1.EndpointSlice{contract.BuildSelf(contract.Self{Namespace: "dev-team", Clusters: []string{"cluster-a"}})}
	for c, cluster := range []string{"cluster-a", "cluster-b"} {
		g := contract.HeadlessGroup{Ports: pg}
		for i := range contract.MaxAddressesPerSlice {
			g.IPv4 = append(g.IPv4, contract.Endpoint{Address: fmt.Sprintf("10.%d.%d.%d", c+1, i/250, i%250+1), Hostname: fmt.Sprintf("db-%d", i)})
		}
		world = append(world, contract.BuildHeadless(contract.Source{Namespace: "dev-team", GatewayDNS: "scale", Cluster: cluster, Kind: contract.KindHeadless,
			Hostname: contract.HeadlessHostname("scale", "dev-team", dnsworld.Zone), Locality: all},
			contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{g}})...)
	}
	for _, s := range world {
		s.Namespace = testfixture.SliceNamespace
	}
	w := startWorld(t, world)
	const x = "scale.dev-team.services.xcc.test."
	var srv *dns.Msg
	eventually(t, func() bool {
		srv = w.Ask(t, "tcp", fmt.Sprintf("_pg._tcp.%s", x), dns.TypeSRV, 0)
		return len(srv.Answer) > 500
	})
	addrs := map[string]string{}
	for _, rr := range srv.Extra {
		if a, ok := rr.(*dns.A); ok {
			addrs[a.Hdr.Name] = a.A.String()
		}
	}
	clusters := map[string]int{}
	for _, rr := range srv.Answer {
		s := rr.(*dns.SRV)
		if addrs[s.Target] == "" {
			t.Errorf("target %s without its address in the additional section", s.Target)
		}
		clusters[strings.Split(s.Target, ".")[1]]++
	}
	if srv.Truncated || len(addrs) != len(srv.Answer) || len(clusters) != 2 {
		t.Errorf("SRV over TCP: truncated %v, %d targets, %d addresses, per cluster %v", srv.Truncated, len(srv.Answer), len(addrs), clusters)
	}
	a := w.Ask(t, "tcp", x, dns.TypeA, 0)
	perCluster := map[string]int{}
	for _, rr := range a.Answer {
		if rec, ok := rr.(*dns.A); ok {
			perCluster[rec.A.String()[:5]]++
		}
	}
	if a.Truncated || len(a.Answer) != contract.MaxRecordsPerName || perCluster["10.1."] != 500 || perCluster["10.2."] != 500 {
		t.Errorf("A over TCP: truncated %v, %d addresses, per cluster %v; want 500 of each", a.Truncated, len(a.Answer), perCluster)
	}
	srv.Compress = true
	t.Logf("SRV over TCP: %d targets (per cluster %v), %d bytes", len(srv.Answer), clusters, srv.Len())
}
