package objects

import (
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// allowedTestCIDRs are the operator's allowed CIDRs of these tests.
const allowedTestCIDRs = "10.1.0.0/16,fd00:1::/64"

// computeAllowed computes member's objects of an import of ns/svc whose
// only exporter "a" has the given slices, with the allowed CIDRs given.
func computeAllowed(t *testing.T, member string, headless bool, allowed cidr.List, in ...*discoveryv1.EndpointSlice) Objects {
	t.Helper()
	res := aggregated(t, export("a", 0, headless, tcp("http", 80)))
	return Compute(Input{
		Cluster: member, Namespaces: map[string]bool{ns: true}, Result: res, AllowedCIDRs: allowed,
		Imports: map[aggregate.Key]ImportState{key: {Endpoints: map[string][]*discoveryv1.EndpointSlice{"a": in}}},
	})
}

// TestComputeAllowedCIDRs: an endpoint address outside the allowed CIDRs
// never reaches an imported slice, of either import type and whichever
// member the source is; the others of its slice stay, and each refused
// address is named.
func TestComputeAllowedCIDRs(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	http := []discoveryv1.EndpointPort{port("http", 8080)}
	allowed := cidr.MustParse(allowedTestCIDRs)
	mixed := []*discoveryv1.EndpointSlice{
		slice("s", v4, http, ep("10.1.0.1"), ep("192.0.2.7"), ep("10.1.0.2"), ep("10.2.0.1")),
		slice("t", v6, http, ep("fd00:1::1"), ep("2001:db8::1")),
	}
	cases := []struct {
		name     string
		member   string
		headless bool
		allowed  cidr.List
		in       []*discoveryv1.EndpointSlice
		want     []string
		refused  []string // each a part of one Refused line, in order
	}{
		{"ClusterSetIP: addresses outside dropped one by one", "m", false, allowed, mixed,
			[]string{"a IPv4 ports=http/TCP/8080 eps=10.1.0.1,10.1.0.2", "a IPv6 ports=http/TCP/8080 eps=fd00:1::1"},
			[]string{"192.0.2.7: outside the allowed CIDRs", "10.2.0.1: outside the allowed CIDRs", "2001:db8::1: outside the allowed CIDRs"}},
		{"ClusterSetIP: the member's own endpoints too", "a", false, allowed, mixed,
			[]string{"a IPv4 ports=http/TCP/8080 eps=10.1.0.1,10.1.0.2", "a IPv6 ports=http/TCP/8080 eps=fd00:1::1"},
			[]string{"192.0.2.7: outside", "10.2.0.1: outside", "2001:db8::1: outside"}},
		{"Headless: addresses outside dropped one by one", "m", true, allowed, mixed,
			[]string{"a IPv4 headless ports=http/TCP/8080 eps=10.1.0.1,10.1.0.2", "a IPv6 headless ports=http/TCP/8080 eps=fd00:1::1"},
			[]string{"192.0.2.7: outside", "10.2.0.1: outside", "2001:db8::1: outside"}},
		{"every address outside: no slice", "m", false, allowed,
			[]*discoveryv1.EndpointSlice{slice("s", v4, http, ep("192.0.2.7"), ep("198.51.100.1"))},
			nil, []string{"192.0.2.7: outside", "198.51.100.1: outside"}},
		{"an IPv4-mapped address is judged as its IPv4", "m", false, allowed,
			[]*discoveryv1.EndpointSlice{slice("s", v4, http, ep("::ffff:10.1.0.3"), ep("::ffff:192.0.2.7"))},
			[]string{"a IPv4 ports=http/TCP/8080 eps=10.1.0.3"}, []string{"192.0.2.7: outside"}},
		{"no allowed CIDRs: any routable address", "m", false, nil, mixed,
			[]string{"a IPv4 ports=http/TCP/8080 eps=10.1.0.1,10.1.0.2,10.2.0.1,192.0.2.7", "a IPv6 ports=http/TCP/8080 eps=2001:db8::1,fd00:1::1"},
			nil},
		{"no allowed CIDRs: loopback still refused", "m", false, nil,
			[]*discoveryv1.EndpointSlice{slice("s", v4, http, ep("127.0.0.1"), ep("10.1.0.1"))},
			[]string{"a IPv4 ports=http/TCP/8080 eps=10.1.0.1"}, []string{"loopback"}},
		{"no allowed CIDRs: cloud metadata addresses still refused", "m", false, nil,
			[]*discoveryv1.EndpointSlice{slice("s", v4, http, ep("100.100.100.200"), ep("10.1.0.1")),
				slice("t", v6, http, ep("fd00:ec2::254"), ep("fd20:ce::254"), ep("fd00:1::1"))},
			[]string{"a IPv4 ports=http/TCP/8080 eps=10.1.0.1", "a IPv6 ports=http/TCP/8080 eps=fd00:1::1"},
			[]string{"100.100.100.200\": cloud metadata", "fd00:ec2::254\": cloud metadata", "fd20:ce::254\": cloud metadata"}},
		{"metadata addresses refused inside the allowed CIDRs too", "m", true, cidr.MustParse("100.64.0.0/10,fd00::/8"),
			[]*discoveryv1.EndpointSlice{slice("s", v4, http, ep("100.100.100.200"), ep("100.64.0.1")),
				slice("t", v6, http, ep("fd00:ec2::254"), ep("fd00:1::1"))},
			[]string{"a IPv4 headless ports=http/TCP/8080 eps=100.64.0.1", "a IPv6 headless ports=http/TCP/8080 eps=fd00:1::1"},
			[]string{"100.100.100.200\": cloud metadata", "fd00:ec2::254\": cloud metadata"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := computeAllowed(t, c.member, c.headless, c.allowed, c.in...)
			if got := sliceViews(out); !slices.Equal(got, c.want) {
				t.Errorf("slices\n got %q\nwant %q", got, c.want)
			}
			if len(out.Refused) != len(c.refused) {
				t.Fatalf("refused %q: want %d lines", out.Refused, len(c.refused))
			}
			for i, r := range c.refused {
				if !strings.Contains(out.Refused[i], r) || !strings.HasPrefix(out.Refused[i], "import "+ns+"/"+svc+": cluster a: EndpointSlice ") {
					t.Errorf("refused[%d] = %q: want the import, cluster and slice, and %q", i, out.Refused[i], r)
				}
			}
		})
	}
}

// TestAddressVerdictsAgree: for every address, the clusterset DNS records
// of a Headless import (contract.ReadyEndpoints, as the controller calls
// it) and the imported slices kube-proxy reads give the same verdict, and
// a refusal is named on both.
func TestAddressVerdictsAgree(t *testing.T) {
	const zone = "clusterset.test"
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	addrs := []struct {
		t    discoveryv1.AddressType
		addr string
	}{
		{v4, "10.1.0.1"}, {v4, "10.2.0.1"}, {v4, "192.0.2.7"}, {v4, "::ffff:10.1.0.1"}, {v4, "::ffff:192.0.2.7"},
		{v4, "0.0.0.0"}, {v4, "127.0.0.1"}, {v4, "169.254.169.254"}, {v4, "224.0.0.1"}, {v4, "255.255.255.255"},
		{v4, "10.1.0.300"}, {v4, "fd00:1::1"}, {v4, " 10.1.0.1"}, {v4, ""},
		{v6, "fd00:1::1"}, {v6, "FD00:1::2"}, {v6, "fd00:2::1"}, {v6, "2001:db8::1"}, {v6, "::"}, {v6, "::1"},
		{v6, "fe80::1"}, {v6, "fe80::1%eth0"}, {v6, "ff02::1"}, {v6, "ff01::1"}, {v6, "10.1.0.1"}, {v6, "::ffff:10.1.0.1"},
		{v4, "100.100.100.200"}, {v4, "168.63.129.16"}, {v4, "0.1.2.3"},
		{v6, "fd00:ec2::254"}, {v6, "fd20:ce::254"}, {v6, "fd00:c1::a9fe:a9fe"}, {v6, "::a9fe:a9fe"},
	}
	for _, allowed := range []cidr.List{nil, cidr.MustParse(allowedTestCIDRs)} {
		for _, a := range addrs {
			s := slice("s", a.t, []discoveryv1.EndpointPort{port("http", 8080)}, ep(a.addr))
			dns := contract.ReadyEndpoints([]*discoveryv1.EndpointSlice{s}, allowed, zone)
			dnsOK := dns.Len() == 1
			for _, headless := range []bool{false, true} {
				out := computeAllowed(t, "m", headless, allowed, s)
				objOK := len(out.Slices) == 1
				if objOK != dnsOK {
					t.Errorf("allowed %q, %s %q, headless %v: DNS publishes %v, imported slices %v", allowed, a.t, a.addr, headless, dnsOK, objOK)
					continue
				}
				if objOK {
					g := dns.Groups[0]
					if want := slices.Concat(g.IPv4, g.IPv6)[0].Address; out.Slices[0].Endpoints[0].Addresses[0] != want {
						t.Errorf("%s %q: DNS publishes %s, imported slice holds %q", a.t, a.addr, want, out.Slices[0].Endpoints[0].Addresses)
					}
				}
				if !dnsOK && (len(dns.Refused) == 0) != (len(out.Refused) == 0) {
					t.Errorf("%s %q: refusals named by DNS %q, by the imported slices %q", a.t, a.addr, dns.Refused, out.Refused)
				}
			}
		}
	}
}
