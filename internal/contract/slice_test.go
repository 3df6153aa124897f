package contract

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// Whatever a load balancer or a Cluster reports, the slices the controller
// builds from what Classify accepted are read back by serve with no
// problem and exactly those addresses: the two sides apply one set of
// rules, so status never says Published for an address serve refuses.
func TestRoundTrip(t *testing.T) {
	hostile := []string{
		"192.0.2.10", "10.0.0.1", "10.0.0.1", "::ffff:10.0.0.2", "2001:db8::1", "2001:DB8::2",
		"255.255.255.255", "0.0.0.0", "127.0.0.1", "::1", "169.254.1.1", "fe80::1", "fe80::1%eth0", "224.0.0.1", "ff02::1",
		"::ffff:127.0.0.1", "10.0.0.300", "1.2.3", "", " ", "lb.example.com", "LB.Example.COM.",
		"localhost", "db.localhost", "gateway", "-a.example.com", "a..b", strings.Repeat("a", 64) + ".example.com",
		"*.example.com", "under_score.example.com", "xn--bcher-kva.example",
		"any.clusters.xcc.test", "gateway.cluster-b.dev-team.clusters.xcc.test", "XCC.test.",
	}
	var all []string
	for i := range 250 {
		all = append(all, fmt.Sprintf("10.1.%d.%d", i/200, i%200+1))
	}
	for _, tc := range []struct {
		name       string
		ips, hosts []string
	}{
		{"hostile ips", hostile, nil},
		{"hostile hostnames", nil, hostile},
		{"more than one endpoint's worth", all, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := Classify(tc.ips, tc.hosts, "xcc.test")
			src := Source{Namespace: "dev-team", GatewayDNS: "gw", Cluster: "cluster-a", Kind: KindGateway,
				Hostname: GatewayHostname("cluster-a", "dev-team", "xcc.test"), TTL: 60}
			var got []string
			for _, s := range Build(src, addrs) {
				for _, ep := range s.Endpoints {
					if len(ep.Addresses) > MaxAddressesPerEndpoint {
						t.Errorf("slice %s: endpoint with %d addresses, the API server allows %d", s.Name, len(ep.Addresses), MaxAddressesPerEndpoint)
					}
				}
				p, ok, problems := Parse(s, "xcc.test")
				if !ok || len(problems) > 0 {
					t.Fatalf("Parse(%s) ok=%v problems %v", s.Name, ok, problems)
				}
				if p.TTL != 60 || p.Kind != KindGateway || p.Cluster != "cluster-a" {
					t.Errorf("Parse(%s) = %+v", s.Name, p.Hostname)
				}
				got = append(got, p.Hosts...)
			}
			want := addrs.All()
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("round trip: serve publishes %v, status says %v", got, want)
			}
			if tc.name != "more than one endpoint's worth" && len(addrs.Refused) == 0 {
				t.Errorf("nothing refused of %v", tc.ips)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	a := Classify([]string{"10.0.0.2", "10.0.0.1", "::ffff:10.0.0.1", "2001:db8::1", "255.255.255.255", "lb.example.com", "10.0.0.300"},
		[]string{"LB.example.com", "localhost", "gateway", "any.clusters.xcc.test"}, "xcc.test")
	if want := []string{"10.0.0.1", "10.0.0.2"}; !slices.Equal(a.IPv4, want) {
		t.Errorf("IPv4 %v, want %v", a.IPv4, want)
	}
	if want := []string{"2001:db8::1"}; !slices.Equal(a.IPv6, want) {
		t.Errorf("IPv6 %v, want %v", a.IPv6, want)
	}
	if want := []string{"lb.example.com"}; !slices.Equal(a.FQDN, want) {
		t.Errorf("FQDN %v, want %v", a.FQDN, want)
	}
	if len(a.Refused) != 5 {
		t.Errorf("refused %q, want broadcast, 10.0.0.300, localhost, gateway and the in-zone target", a.Refused)
	}
}

func testSlice(mutate func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: "s", Annotations: map[string]string{
			AnnotationHostname:   "*.gateway.cluster-a.dev-team.clusters.xcc.test",
			AnnotationGatewayRef: "dev-team/gw",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}}},
	}
	mutate(s)
	return s
}

func TestParse(t *testing.T) {
	many := make([]discoveryv1.Endpoint, 11)
	for i := range many {
		for j := range MaxAddressesPerEndpoint {
			many[i].Addresses = append(many[i].Addresses, fmt.Sprintf("10.%d.%d.1", i, j))
		}
	}
	tests := []struct {
		name     string
		mutate   func(*discoveryv1.EndpointSlice)
		ok       bool
		hosts    []string
		ttl      uint32
		problems int
	}{
		{"as the controller writes it", func(*discoveryv1.EndpointSlice) {}, true, []string{"192.0.2.1"}, skydnsrecord.DefaultTTL, 0},
		{"no hostname: not ours", func(s *discoveryv1.EndpointSlice) { delete(s.Annotations, AnnotationHostname) }, false, nil, 0, 0},
		{"no gateway-dns-ref: refused", func(s *discoveryv1.EndpointSlice) { delete(s.Annotations, AnnotationGatewayRef) }, false, nil, 0, 1},
		{"ref of another namespace: refused", func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationGatewayRef] = "other/gw" }, false, nil, 0, 1},
		{"sub-name of a gateway: refused", func(s *discoveryv1.EndpointSlice) {
			s.Annotations[AnnotationHostname] = "evil.gateway.cluster-b.dev-team.clusters.xcc.test"
		}, false, nil, 0, 1},
		{"wrong family refuses the address", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Addresses = append(s.Endpoints[0].Addresses, "2001:db8::1")
		}, true, []string{"192.0.2.1"}, skydnsrecord.DefaultTTL, 1},
		{"CNAME target inside the zone: refused", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"any.clusters.xcc.test", "lb.example.com"}
		}, true, []string{"lb.example.com"}, skydnsrecord.DefaultTTL, 1},
		{"unknown address type: refused", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPX" }, false, nil, 0, 1},
		{"ttl inside the API's bounds", func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationTTL] = "3600" }, true, []string{"192.0.2.1"}, 3600, 0},
		{"ttl above the API's bounds: default", func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationTTL] = "86400" }, true, []string{"192.0.2.1"}, skydnsrecord.DefaultTTL, 1},
		{"ttl below the API's bounds: default", func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationTTL] = "1" }, true, []string{"192.0.2.1"}, skydnsrecord.DefaultTTL, 1},
		{"ttl not a number: default", func(s *discoveryv1.EndpointSlice) { s.Annotations[AnnotationTTL] = "-5" }, true, []string{"192.0.2.1"}, skydnsrecord.DefaultTTL, 1},
		{"not-ready endpoints skipped, duplicates once", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"192.0.2.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
				discoveryv1.Endpoint{Addresses: []string{"192.0.2.1", "192.0.2.2"}})
		}, true, []string{"192.0.2.1", "192.0.2.2"}, skydnsrecord.DefaultTTL, 0},
		{"more addresses than a slice may publish: refused whole", func(s *discoveryv1.EndpointSlice) { s.Endpoints = many }, false, nil, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok, problems := Parse(testSlice(tt.mutate), "xcc.test")
			if ok != tt.ok || len(problems) != tt.problems {
				t.Fatalf("ok=%v problems %v; want ok=%v and %d problems", ok, problems, tt.ok, tt.problems)
			}
			if !slices.Equal(p.Hosts, tt.hosts) || p.TTL != tt.ttl {
				t.Errorf("hosts %v ttl %d; want %v ttl %d", p.Hosts, p.TTL, tt.hosts, tt.ttl)
			}
		})
	}
}

// Our slices' kubernetes.io/service-name is never a Service's name (a
// DNS-1035 label), so kube-proxy never serves their addresses as a
// Service of the slice namespace, and it is always a valid label value.
func TestServiceNameValueIsNoServiceName(t *testing.T) {
	for _, name := range []string{"xcc-dns", "a", strings.Repeat("a", 63), strings.Repeat("a", 61) + "-b", "dev-team-gateway-dns"} {
		v := ServiceNameValue(name)
		if errs := validation.IsDNS1035Label(v); len(errs) == 0 {
			t.Errorf("ServiceNameValue(%q) = %q, the name a Service can have", name, v)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("ServiceNameValue(%q) = %q: %v", name, v, errs)
		}
	}
	for _, s := range Build(Source{Namespace: "dev-team", GatewayDNS: "xcc-dns", Cluster: "a", Kind: KindGateway,
		Hostname: GatewayHostname("a", "dev-team", "xcc.test")}, Addresses{IPv4: []string{"192.0.2.1"}}) {
		if got := s.Labels[LabelServiceName]; got == "xcc-dns" {
			t.Errorf("slice %s labelled with the Service name %q", s.Name, got)
		}
	}
}
