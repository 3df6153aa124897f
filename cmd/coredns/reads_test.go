package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

// largeEndpoints is the size of the large headless names below: the most
// endpoints one cluster may export of one port set and family.
const largeEndpoints = contract.MaxAddressesPerSlice

// largeHeadlessSlices are a headless import of the clusterset zone and a
// headless export of the xcc.test zone (policy All), each of
// largeEndpoints endpoints with hostnames in cluster-a, one named port.
func largeHeadlessSlices() []*discoveryv1.EndpointSlice {
	pg := []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}
	g := contract.HeadlessGroup{Ports: pg}
	for i := range largeEndpoints {
		g.IPv4 = append(g.IPv4, contract.Endpoint{Address: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), Hostname: fmt.Sprintf("db-%d", i)})
	}
	eps := contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{g}}
	out := slices.Concat(
		contract.BuildClusterSet(contract.ClusterSetImport{Namespace: "dev-team", Name: "big", Type: contract.ImportHeadless,
			Sources: []contract.ClusterSetSource{{Cluster: "cluster-a", Endpoints: eps}}}, csZone),
		[]*discoveryv1.EndpointSlice{contract.BuildSelf(contract.Self{Namespace: "dev-team", Clusters: []string{"cluster-a"}})},
		contract.BuildHeadless(contract.Source{Namespace: "dev-team", GatewayDNS: "big", Cluster: "cluster-a", Kind: contract.KindHeadless,
			Hostname: contract.HeadlessHostname("big", "dev-team", dnsworld.Zone), Locality: contract.Locality{Policy: contract.PolicyAll}}, eps),
	)
	for _, s := range out {
		s.Namespace = testfixture.SliceNamespace
	}
	return out
}

// The large headless names of largeHeadlessSlices.
const (
	largeClusterSetName = "big.dev-team.svc.clusterset.local."
	largeExportName     = "big.dev-team.services.xcc.test."
)

// startLargeHeadless starts the record path with largeHeadlessSlices and
// CoreDNS running corefile, and returns once serve has written both
// large names whole. recordReads puts the read recorder before etcd.
func startLargeHeadless(t testing.TB, corefile string, recordReads bool) *dnsworld.World {
	t.Helper()
	w := dnsworld.Start(t, dnsworld.Config{
		Corefile: corefile, Directives: coredns.Directives, Slices: largeHeadlessSlices(),
		ClusterSetZone: csZone, RecordReads: recordReads,
	})
	eventually(t, func() bool {
		return len(w.Ask(t, "tcp", largeClusterSetName, dns.TypeA, 0).Answer) == largeEndpoints &&
			len(w.Ask(t, "tcp", largeExportName, dns.TypeA, 0).Answer) == largeEndpoints
	})
	return w
}

// TestLargeHeadlessReads counts the etcd reads of one cache miss of each
// question about a headless name of largeEndpoints endpoints and holds
// each to its bound: a name's addresses one prefix read, an NXDOMAIN two
// (the prefix and the exact key), an SRV answer one read whatever the
// number of targets: serve stores each target's addresses below the SRV
// name, so the etcd plugin finds them in that read for the additional
// section, and the guard names them back after the targets. Every
// target of the answer has its address there. Figures:
// docs/benchmarks.md.
func TestLargeHeadlessReads(t *testing.T) {
	w := startLargeHeadless(t, testfixture.ShippedCorefile(t), true)
	const (
		cs = largeClusterSetName
		hx = largeExportName
	)
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		// answers is the least number of answer records.
		answers int
		// reads is the most etcd reads.
		reads int
	}{
		{cs, dns.TypeA, dns.RcodeSuccess, largeEndpoints, 1},
		{hx, dns.TypeA, dns.RcodeSuccess, largeEndpoints, 1},
		{"_pg._tcp." + cs, dns.TypeSRV, dns.RcodeSuccess, 500, 1},
		{cs, dns.TypeSRV, dns.RcodeSuccess, 500, 1},
		{"_pg._tcp." + hx, dns.TypeSRV, dns.RcodeSuccess, 500, 1},
		{"db-7.cluster-a." + cs, dns.TypeA, dns.RcodeSuccess, 1, 1},
		{"nosuch.cluster-a." + cs, dns.TypeA, dns.RcodeNameError, 0, 2},
		{"nosuch.cluster-a." + hx, dns.TypeA, dns.RcodeNameError, 0, 2},
	} {
		w.Reads.Take()
		r := askMiss(t, w, tc.name, tc.qtype)
		reads := len(w.Reads.Take())
		t.Logf("%s %s: %s, %d answers, %d etcd reads", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[r.Rcode], len(r.Answer), reads)
		if r.Rcode != tc.rcode || len(r.Answer) < tc.answers {
			t.Errorf("%s %s: %s with %d answers, want %s with at least %d", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[tc.rcode], tc.answers)
		}
		if reads > tc.reads || reads == 0 {
			t.Errorf("%s %s: %d etcd reads, want 1 to %d", tc.name, dns.TypeToString[tc.qtype], reads, tc.reads)
		}
		if tc.qtype == dns.TypeSRV {
			checkTargetAddresses(t, tc.name, r, cs, hx)
		}
	}
}

// checkTargetAddresses checks an SRV answer r: every target is a pod
// name of one of the headless names xs and has exactly one A record in
// the additional section, and the section holds nothing else.
func checkTargetAddresses(t *testing.T, name string, r *dns.Msg, xs ...string) {
	t.Helper()
	addrs := map[string]int{}
	for _, rr := range r.Extra {
		switch a := rr.(type) {
		case *dns.A:
			addrs[a.Hdr.Name]++
		case *dns.OPT:
		default:
			t.Errorf("SRV %s: additional record %s", name, rr)
		}
	}
	for _, rr := range r.Answer {
		srv, ok := rr.(*dns.SRV)
		if !ok {
			t.Errorf("SRV %s: answer %s", name, rr)
			continue
		}
		below := false
		for _, x := range xs {
			pod, cluster, found := strings.Cut(strings.TrimSuffix(srv.Target, "."+x), ".")
			below = below || (found && strings.HasSuffix(srv.Target, "."+x) && !strings.Contains(cluster, ".") && pod != "" && cluster == "cluster-a")
		}
		if !below || srv.Port != 5432 || addrs[srv.Target] != 1 {
			t.Errorf("SRV %s: %s with %d addresses; want a pod name of port 5432 with one", name, srv, addrs[srv.Target])
		}
		delete(addrs, srv.Target)
	}
	if len(addrs) > 0 {
		t.Errorf("SRV %s: additional records of no target: %v", name, addrs)
	}
}

// askMiss asks over TCP with the DO bit set, which is part of the
// cache's key: the questions asked while waiting, without it, answer
// none of these from the cache.
func askMiss(t *testing.T, w *dnsworld.World, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: "tcp", Timeout: waitFor}
	r, _, err := c.Exchange(missQuestion(name, qtype), w.DNS.TCP)
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// missQuestion is the question askMiss sends: EDNS with the largest
// buffer, so no answer is truncated, and the DO bit.
func missQuestion(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(dns.MaxMsgSize, true)
	return m
}
