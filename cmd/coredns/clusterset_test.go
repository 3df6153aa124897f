package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

const csZone = contract.DefaultClusterSetZone

// clusterSetSlices are the imports of one member as the controller writes
// them: web, a ClusterSetIP import (dual stack, named ports http and dns
// in TCP and UDP, one unnamed); db, a
// Headless import exported by cluster-a (one endpoint without hostname,
// one dual-stack) and cluster-b; and hostile slices of the kind.
func clusterSetSlices() []*discoveryv1.EndpointSlice {
	pg := []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}
	out := slices.Concat(
		contract.BuildClusterSet(contract.ClusterSetImport{Namespace: "dev-team", Name: "web", Type: contract.ImportClusterSetIP,
			IPs: []string{"10.96.0.10", "fd00::a"},
			Ports: []contract.Port{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}, {Protocol: corev1.ProtocolTCP, Port: 8080},
				{Name: "dns", Protocol: corev1.ProtocolTCP, Port: 53}, {Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}}}, csZone),
		contract.BuildClusterSet(contract.ClusterSetImport{Namespace: "dev-team", Name: "db", Type: contract.ImportHeadless, Sources: []contract.ClusterSetSource{
			{Cluster: "cluster-a", Endpoints: contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{{Ports: pg,
				IPv4: []contract.Endpoint{{Address: "10.1.0.5", Hostname: "pg-0"}, {Address: "10.1.0.6"}},
				IPv6: []contract.Endpoint{{Address: "fd00:1::5", Hostname: "pg-0"}}}}}},
			{Cluster: "cluster-b", Endpoints: contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{{Ports: pg,
				IPv4: []contract.Endpoint{{Address: "10.2.0.5", Hostname: "pg-0"}}}}}},
		}}, csZone),
	)
	// A slice of the kind naming another import's name, and one naming a
	// name of the other zone: both publish nothing.
	evil := contract.BuildClusterSet(contract.ClusterSetImport{Namespace: "dev-team", Name: "evil", Type: contract.ImportClusterSetIP, IPs: []string{"10.96.0.66"}}, csZone)[0]
	evil.Annotations[contract.AnnotationHostname] = "web.dev-team.svc." + csZone
	other := contract.BuildClusterSet(contract.ClusterSetImport{Namespace: "dev-team", Name: "other", Type: contract.ImportClusterSetIP, IPs: []string{"10.96.0.67"}}, csZone)[0]
	other.Annotations[contract.AnnotationHostname] = "kuard.gateway.cluster-z.dev-team.clusters.xcc.test"
	out = append(out, evil, other,
		testfixture.Slice("gw-a-ipv4", "*.gateway.cluster-a.dev-team.clusters.xcc.test", discoveryv1.AddressTypeIPv4, "192.0.2.10"))
	for _, s := range out {
		s.Namespace = testfixture.SliceNamespace
	}
	return out
}

// TestClusterSetAnswers: the names of the MCS DNS specification, from
// clusterset slices through serve and etcd to the shipped Corefile with
// the generated guard, asked over UDP. Names of no published shape are
// NXDOMAIN, and empty non-terminals NODATA, after no etcd read.
func TestClusterSetAnswers(t *testing.T) {
	w := dnsworld.Start(t, dnsworld.Config{
		Corefile: testfixture.ShippedCorefile(t), Directives: coredns.Directives, Slices: clusterSetSlices(),
		ClusterSetZone: csZone, RecordReads: true,
	})
	const (
		web = "web.dev-team.svc.clusterset.local."
		db  = "db.dev-team.svc.clusterset.local."
	)
	type row struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string // zone-file lines
		read   bool     // the query reaches etcd (each row is asked once, so no cache hit hides a read)
	}
	nodata := func(name string, qtype uint16, read bool) row { return row{name, qtype, dns.RcodeSuccess, nil, read} }
	refused := func(name string, qtype uint16) row { return row{name, qtype, dns.RcodeNameError, nil, false} }
	tests := []row{
		// ClusterSetIP: the member's ClusterSetIPs; SRV per named port to the name.
		{web, dns.TypeA, dns.RcodeSuccess, []string{web + " 5 IN A 10.96.0.10"}, true},
		{web, dns.TypeAAAA, dns.RcodeSuccess, []string{web + " 5 IN AAAA fd00::a"}, true},
		// The cache's key is case-insensitive: the row above answers it.
		{"WEB.Dev-Team.SVC.clusterset.local.", dns.TypeA, dns.RcodeSuccess, []string{web + " 5 IN A 10.96.0.10"}, false},
		{"_http._tcp." + web, dns.TypeSRV, dns.RcodeSuccess, []string{"_http._tcp." + web + " 5 IN SRV 10 100 80 " + web}, true},
		{"_http._udp." + web, dns.TypeSRV, dns.RcodeNameError, nil, true},
		nodata(web, dns.TypeTXT, true),
		// SRV of the name itself: each target and port of its SRV names
		// once (dns is one port in TCP and UDP).
		{web, dns.TypeSRV, dns.RcodeSuccess, []string{web + " 5 IN SRV 10 50 53 " + web, web + " 5 IN SRV 10 50 80 " + web}, true},
		{"Web.Dev-Team.svc.clusterset.local.", dns.TypeSRV, dns.RcodeSuccess, []string{web + " 5 IN SRV 10 50 53 " + web, web + " 5 IN SRV 10 50 80 " + web}, false},
		{"_dns._udp." + web, dns.TypeSRV, dns.RcodeSuccess, []string{"_dns._udp." + web + " 5 IN SRV 10 100 53 " + web}, true},
		nodata("_tcp."+web, dns.TypeA, false),
		// <clusterid>.X does not exist for a ClusterSetIP import.
		{"cluster-a." + web, dns.TypeA, dns.RcodeNameError, nil, true},
		// Headless: every ready endpoint of every source; each by name;
		// SRV one per endpoint and port, target its name.
		{db, dns.TypeA, dns.RcodeSuccess, []string{db + " 5 IN A 10.1.0.5", db + " 5 IN A 10.1.0.6", db + " 5 IN A 10.2.0.5"}, true},
		{db, dns.TypeAAAA, dns.RcodeSuccess, []string{db + " 5 IN AAAA fd00:1::5"}, true},
		{"pg-0.cluster-a." + db, dns.TypeA, dns.RcodeSuccess, []string{"pg-0.cluster-a." + db + " 5 IN A 10.1.0.5"}, true},
		{"pg-0.cluster-a." + db, dns.TypeAAAA, dns.RcodeSuccess, []string{"pg-0.cluster-a." + db + " 5 IN AAAA fd00:1::5"}, true},
		{"10-1-0-6.cluster-a." + db, dns.TypeA, dns.RcodeSuccess, []string{"10-1-0-6.cluster-a." + db + " 5 IN A 10.1.0.6"}, true},
		{"pg-0.cluster-b." + db, dns.TypeA, dns.RcodeSuccess, []string{"pg-0.cluster-b." + db + " 5 IN A 10.2.0.5"}, true},
		{"_pg._tcp." + db, dns.TypeSRV, dns.RcodeSuccess, []string{
			"_pg._tcp." + db + " 5 IN SRV 10 33 5432 10-1-0-6.cluster-a." + db,
			"_pg._tcp." + db + " 5 IN SRV 10 33 5432 pg-0.cluster-a." + db,
			"_pg._tcp." + db + " 5 IN SRV 10 33 5432 pg-0.cluster-b." + db}, true},
		{db, dns.TypeSRV, dns.RcodeSuccess, []string{
			db + " 5 IN SRV 10 33 5432 10-1-0-6.cluster-a." + db,
			db + " 5 IN SRV 10 33 5432 pg-0.cluster-a." + db,
			db + " 5 IN SRV 10 33 5432 pg-0.cluster-b." + db}, true},
		// <clusterid>.X of a Headless import: that source's endpoints.
		{"cluster-b." + db, dns.TypeA, dns.RcodeSuccess, []string{"cluster-b." + db + " 5 IN A 10.2.0.5"}, true},
		{"pg-9.cluster-a." + db, dns.TypeA, dns.RcodeNameError, nil, true},
		nodata("pg-0.cluster-a."+db, dns.TypeSRV, false),
		// The version, written by serve; TXT only.
		{"dns-version.clusterset.local.", dns.TypeTXT, dns.RcodeSuccess, []string{`dns-version.clusterset.local. 30 IN TXT "1.0.0"`}, true},
		nodata("dns-version.clusterset.local.", dns.TypeA, false),
		nodata("dns-version.clusterset.local.", dns.TypeCNAME, false),
		// Empty non-terminals and the apex.
		nodata("svc.clusterset.local.", dns.TypeA, false),
		nodata("dev-team.svc.clusterset.local.", dns.TypeA, false),
		nodata("dev-team.svc.clusterset.local.", dns.TypeSRV, false),
		nodata("clusterset.local.", dns.TypeA, false),
		{"clusterset.local.", dns.TypeSOA, dns.RcodeSuccess, []string{"clusterset.local. 30 IN SOA ns.dns.clusterset.local. hostmaster.clusterset.local. 1 7200 1800 86400 5"}, false},
		// Names of no shape, the wildcard, bad bytes: refused before etcd.
		refused("foo.clusterset.local.", dns.TypeA),
		refused("x.dns-version.clusterset.local.", dns.TypeTXT),
		refused("ns.dns.clusterset.local.", dns.TypeA),
		refused("any.svc.clusterset.local.", dns.TypeA),
		refused("db.any.svc.clusterset.local.", dns.TypeSRV),
		refused("any."+db, dns.TypeA),
		refused("_pg._tcp.any."+db, dns.TypeSRV),
		refused("x.pg-0.cluster-a."+db, dns.TypeA),
		refused("_pg._tcp.cluster-a."+db, dns.TypeSRV),
		refused("_pg._tls."+db, dns.TypeSRV),
		refused("_all.svc.clusterset.local.", dns.TypeA),
		// Where X and SRV of X are stored: no names of the specification.
		refused("_all."+db, dns.TypeA),
		refused("_all."+db, dns.TypeAAAA),
		refused("_all."+db, dns.TypeSRV),
		refused("_all."+web, dns.TypeA),
		refused("_srv."+web, dns.TypeA),
		refused("_srv."+web, dns.TypeSRV),
		refused("_srv."+db, dns.TypeSRV),
		refused("_SRV.DB.dev-team.svc.clusterset.local.", dns.TypeSRV),
		// Where the SRV targets' addresses are stored.
		refused("pg-0.cluster-a._pg._tcp."+db, dns.TypeA),
		refused("pg-0.cluster-a._pg._tcp."+db, dns.TypeSRV),
		refused("pg-0.cluster-a._srv."+db, dns.TypeA),
		refused("pg-0.cluster-a._srv."+db, dns.TypeSRV),
		refused(`db\047x.dev-team.svc.clusterset.local.`, dns.TypeA),
		refused(`\*.dev-team.svc.clusterset.local.`, dns.TypeA),
		refused("/.clusterset.local.", dns.TypeSRV),
		// Hostile slices published nothing; the other zone is untouched.
		{"evil.dev-team.svc.clusterset.local.", dns.TypeA, dns.RcodeNameError, nil, true},
		{"kuard.gateway.cluster-z.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeNameError, nil, true},
		{"kuard.gateway.cluster-a.dev-team.clusters.xcc.test.", dns.TypeA, dns.RcodeSuccess, []string{"kuard.gateway.cluster-a.dev-team.clusters.xcc.test. 30 IN A 192.0.2.10"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+dns.TypeToString[tc.qtype], func(t *testing.T) {
			w.Reads.Take()
			r := w.Ask(t, "udp", tc.name, tc.qtype, 0)
			reads := w.Reads.Take()
			if r.Rcode != tc.rcode {
				t.Fatalf("rcode %s, want %s\n%v", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode], r)
			}
			if got, want := testfixture.Lines(r.Answer), testfixture.ZoneLines(tc.answer...); !slices.Equal(got, want) {
				t.Errorf("answer\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if tc.read != (len(reads) > 0) {
				t.Errorf("read %q; want a read %v", reads, tc.read)
			}
		})
	}

	// The SRV answer of a ClusterSetIP import carries the name's address.
	r := w.Ask(t, "udp", "_http._tcp."+web, dns.TypeSRV, 0)
	if got, want := testfixture.Lines(r.Extra), testfixture.ZoneLines(web+" 5 IN A 10.96.0.10"); !slices.Equal(got, want) {
		t.Errorf("SRV additional section %v, want %v", got, want)
	}

	// A deleted slice takes its records with it: cluster-b's endpoints,
	// web's IPv6 ClusterSetIP.
	ctx := context.Background()
	for _, s := range clusterSetSlices() {
		if s.Labels[contract.LabelSourceCluster] == "cluster-b" || (strings.HasPrefix(s.Name, "web-") && s.AddressType == discoveryv1.AddressTypeIPv6) {
			if err := w.Kube.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []row{
		{"pg-0.cluster-b." + db, dns.TypeA, dns.RcodeNameError, nil, true},
		{db, dns.TypeA, dns.RcodeSuccess, []string{db + " 5 IN A 10.1.0.5", db + " 5 IN A 10.1.0.6"}, true},
		{"_pg._tcp." + db, dns.TypeSRV, dns.RcodeSuccess, []string{
			"_pg._tcp." + db + " 5 IN SRV 10 50 5432 10-1-0-6.cluster-a." + db,
			"_pg._tcp." + db + " 5 IN SRV 10 50 5432 pg-0.cluster-a." + db}, true},
		{web, dns.TypeAAAA, dns.RcodeSuccess, nil, true},
		{web, dns.TypeA, dns.RcodeSuccess, []string{web + " 5 IN A 10.96.0.10"}, true},
	} {
		want := testfixture.StripTTL(testfixture.ZoneLines(tc.answer...))
		var got []string
		var rcode int
		// Answers are cached as long as their TTL (5 s).
		for deadline := time.Now().Add(waitFor); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			r := w.Ask(t, "udp", tc.name, tc.qtype, 0)
			got, rcode = testfixture.StripTTL(testfixture.Lines(r.Answer)), r.Rcode
			if rcode == tc.rcode && slices.Equal(got, want) {
				break
			}
		}
		if rcode != tc.rcode || !slices.Equal(got, want) {
			t.Errorf("after the delete, %s %s: %s %v; want %s %v", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[rcode], got, dns.RcodeToString[tc.rcode], want)
		}
	}
}
