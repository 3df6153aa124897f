package main

import (
	"slices"
	"testing"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
	"github.com/xcc-dns/xcc-dns/internal/testfixture/dnsworld"
)

// A name the operator granted a namespace answers; the suffix and the
// names above it are empty non-terminals (NODATA, not the union of every
// granted name); names below a granted name do not exist; another
// namespace's slice claiming a granted name publishes nothing.
func TestCorefileGrantedNames(t *testing.T) {
	grants, err := contract.ParseGrants("dev-team=shop.eu.xcc.test", dnsworld.Zone)
	if err != nil {
		t.Fatal(err)
	}
	build := func(ns, cluster, hostname, ip string) *discoveryv1.EndpointSlice {
		s := contract.Build(contract.Source{Namespace: ns, GatewayDNS: "gw", Cluster: cluster, Kind: contract.KindName, Hostname: hostname, TTL: 30,
			Locality: contract.Locality{Policy: contract.PolicyAll}}, contract.Classify([]string{ip}, nil, dnsworld.Zone))[0]
		s.Namespace = testfixture.SliceNamespace
		return s
	}
	w := dnsworld.Start(t, dnsworld.Config{Corefile: testfixture.ShippedCorefile(t), Directives: coredns.Directives, NameGrants: grants,
		Slices: []*discoveryv1.EndpointSlice{
			build("dev-team", "cluster-a", "cart.shop.eu.xcc.test", "192.0.2.60"),
			build("dev-team", "cluster-b", "cart.shop.eu.xcc.test", "192.0.2.61"),
			build("dev-team", "cluster-a", "pay.shop.eu.xcc.test", "192.0.2.62"),
			build("other", "cluster-a", "evil.shop.eu.xcc.test", "192.0.2.66"),
		}})
	for _, tc := range []struct {
		name   string
		rcode  int
		answer []string
	}{
		{"cart.shop.eu.xcc.test.", dns.RcodeSuccess, []string{"cart.shop.eu.xcc.test. 30 IN A 192.0.2.60", "cart.shop.eu.xcc.test. 30 IN A 192.0.2.61"}},
		{"pay.shop.eu.xcc.test.", dns.RcodeSuccess, []string{"pay.shop.eu.xcc.test. 30 IN A 192.0.2.62"}},
		{"shop.eu.xcc.test.", dns.RcodeSuccess, nil},
		{"eu.xcc.test.", dns.RcodeSuccess, nil},
		{"x.cart.shop.eu.xcc.test.", dns.RcodeNameError, nil},
		{"/.shop.eu.xcc.test.", dns.RcodeNameError, nil},
		{"_1.shop.eu.xcc.test.", dns.RcodeNameError, nil},
		{"evil.shop.eu.xcc.test.", dns.RcodeNameError, nil},
	} {
		r := w.Ask(t, "udp", tc.name, dns.TypeA, 0)
		got, want := testfixture.Lines(r.Answer), testfixture.ZoneLines(tc.answer...)
		if r.Rcode != tc.rcode || !slices.Equal(got, want) {
			t.Errorf("A %s: %s %q, want %s %q", tc.name, dns.RcodeToString[r.Rcode], got, dns.RcodeToString[tc.rcode], want)
		}
	}
}
