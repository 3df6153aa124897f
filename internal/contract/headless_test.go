package contract

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
)

const headlessName = "db.dev-team.services.xcc.test"

func TestParseHostnameHeadless(t *testing.T) {
	tests := []struct {
		hostname string
		wantErr  bool
	}{
		{"db.dev-team.services.xcc.test", false},
		{"DB.dev-team.services.xcc.test.", false},
		// Another GatewayDNS's, another namespace's, a wildcard, a name
		// below or above, the storage name of the name across clusters.
		{"web.dev-team.services.xcc.test", true},
		{"db.other.services.xcc.test", true},
		{"*.db.dev-team.services.xcc.test", true},
		{"cluster-a.db.dev-team.services.xcc.test", true},
		{"_all.db.dev-team.services.xcc.test", true},
		{"dev-team.services.xcc.test", true},
		{"services.xcc.test", true},
	}
	for _, tt := range tests {
		h, err := ParseHostname(tt.hostname, "dev-team", "db", "xcc.test")
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseHostname(%q) = %+v, %v; want error %v", tt.hostname, h, err, tt.wantErr)
			continue
		}
		if err == nil && (h.Kind != KindHeadless || h.Name != headlessName || h.GatewayDNS != "db" || h.Namespace != "dev-team") {
			t.Errorf("ParseHostname(%q) = %+v", tt.hostname, h)
		}
		if err != nil && !errors.Is(err, ErrOutsideSubtree) && !strings.Contains(err.Error(), "invalid") {
			t.Errorf("ParseHostname(%q): %v, want ErrOutsideSubtree", tt.hostname, err)
		}
	}
}

func headlessSource(healthy bool) Source {
	return Source{Namespace: "dev-team", GatewayDNS: "db", Cluster: "cluster-a", Kind: KindHeadless,
		Hostname: HeadlessHostname("db", "dev-team", "xcc.test"), Locality: Locality{Policy: PolicyLocal}, Unhealthy: !healthy}
}

// kubeSlice is an EndpointSlice as the endpoint slice controller writes
// one for a StatefulSet's pods.
func kubeSlice(name string, t discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: t, Ports: ports, Endpoints: eps}
	s.Name = name
	s.Labels = map[string]string{LabelServiceName: "postgres"}
	return s
}

func ep(addr, hostname string, ready, terminating bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{
		Ready: ptr.To(ready), Serving: ptr.To(ready || terminating), Terminating: ptr.To(terminating)}}
	if hostname != "" {
		e.Hostname = ptr.To(hostname)
	}
	return e
}

func port(name string, proto corev1.Protocol, n int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(n)}
}

// The controller's filter and serve's parser agree: what ReadyEndpoints
// keeps, BuildHeadless writes and Parse reads back unchanged.
func TestReadyEndpointsRoundTrip(t *testing.T) {
	ports := []discoveryv1.EndpointPort{port("pg", corev1.ProtocolTCP, 5432), port("", corev1.ProtocolTCP, 9187)}
	in := []*discoveryv1.EndpointSlice{
		kubeSlice("postgres-abc", discoveryv1.AddressTypeIPv4, ports,
			ep("10.1.0.5", "postgres-0", true, false),
			ep("10.1.0.6", "postgres-1", false, false), // not ready
			ep("10.1.0.7", "postgres-2", false, true),  // terminating
			ep("10.1.0.8", "", true, false),            // no hostname
			ep("10.1.0.9", "Bad_Name", true, false),    // not a label
			ep("127.0.0.1", "lo", true, false),         // loopback
			ep("10.9.0.1", "far", true, false),         // outside the allowed CIDRs
		),
		kubeSlice("postgres-v6", discoveryv1.AddressTypeIPv6, ports, ep("fd00:1::5", "postgres-0", true, false)),
		// Another port set (a named targetPort resolved differently).
		kubeSlice("postgres-def", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{port("pg", corev1.ProtocolTCP, 6432)},
			ep("10.1.0.10", "postgres-3", true, false)),
		kubeSlice("postgres-fqdn", discoveryv1.AddressTypeFQDN, nil, ep("db.example.com", "", true, false)),
	}
	got := ReadyEndpoints(in, cidr.MustParse("10.1.0.0/16,127.0.0.0/8,fd00::/8"), "xcc.test")
	if len(got.Groups) != 2 || got.Len() != 4 {
		t.Fatalf("groups %+v, want 2 port sets and 4 endpoints", got.Groups)
	}
	if len(got.Refused) != 3 {
		t.Errorf("refused %q, want the bad hostname, the loopback and the address outside the CIDRs", got.Refused)
	}
	built := BuildHeadless(headlessSource(true), got)
	if len(built) != 3 {
		t.Fatalf("%d slices, want one per port set and family (3)", len(built))
	}
	var pods []string
	for _, s := range built {
		if len(s.Name) > 63 || s.Labels[LabelRecord] != string(KindHeadless) {
			t.Errorf("slice %s %v", s.Name, s.Labels)
		}
		p, ok, problems := Parse(s, "xcc.test")
		if !ok || len(problems) > 0 {
			t.Fatalf("Parse(%s): %v %v", s.Name, ok, problems)
		}
		if p.Kind != KindHeadless || p.Source != "cluster-a" || p.Locality.Policy != PolicyLocal || p.TTL != DefaultGatewaysTTL || len(p.Ports) != 1 {
			t.Errorf("parsed %+v", p)
		}
		for _, pod := range p.Pods {
			pods = append(pods, fmt.Sprintf("%s=%s/%v/%s:%d", pod.Label, pod.Host, pod.Ready, p.Ports[0].Name, p.Ports[0].Port))
		}
	}
	slices.Sort(pods)
	want := []string{"10-1-0-8=10.1.0.8/true/pg:5432", "postgres-0=10.1.0.5/true/pg:5432", "postgres-0=fd00:1::5/true/pg:5432", "postgres-3=10.1.0.10/true/pg:6432"}
	if !slices.Equal(pods, want) {
		t.Errorf("pods %q, want %q", pods, want)
	}
	// An unhealthy source's pods are kept, not ready: answered only when
	// no source is healthy.
	for _, s := range BuildHeadless(headlessSource(false), got) {
		p, _, _ := Parse(s, "xcc.test")
		if len(p.Hosts) != 0 || len(p.Unready) == 0 || p.Pods[0].Ready {
			t.Errorf("unhealthy source: %+v", p)
		}
	}
}

// Serve checks again what the controller filtered: a hand-written or
// hostile slice publishes only serving pods with one valid address and a
// valid hostname, and is refused whole where it cannot be read exactly.
func TestParseHeadlessRefuses(t *testing.T) {
	base := func() *discoveryv1.EndpointSlice {
		s := BuildHeadless(headlessSource(true), HeadlessEndpoints{Groups: []HeadlessGroup{{
			Ports: []Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}},
			IPv4:  []Endpoint{{Address: "10.1.0.5", Hostname: "postgres-0"}},
		}}})[0]
		s.Namespace = "xcc-dns"
		return s
	}
	tests := []struct {
		name       string
		edit       func(*discoveryv1.EndpointSlice)
		whole      bool
		pods       int
		ports, bad int
	}{
		{"as built", func(*discoveryv1.EndpointSlice) {}, false, 1, 1, 0},
		{"terminating", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Terminating = ptr.To(true) }, false, 0, 1, 1},
		{"not serving", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Serving = ptr.To(false) }, false, 0, 1, 1},
		{"not ready, serving unset", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false)}
		}, false, 0, 1, 1},
		{"two addresses", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Addresses = append(s.Endpoints[0].Addresses, "10.1.0.6")
		}, false, 0, 1, 1},
		{"hostname not a label", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hostname = ptr.To("a.b") }, false, 0, 1, 1},
		{"hostname any", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hostname = ptr.To("any") }, false, 0, 1, 1},
		{"loopback", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"127.0.0.1"} }, false, 0, 1, 1},
		{"bad port name", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr.To("_pg") }, false, 1, 0, 1},
		{"port name too long", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr.To("abcdefghijklmnop") }, false, 1, 0, 1},
		{"port protocol", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = ptr.To(corev1.Protocol("QUIC")) }, false, 1, 0, 1},
		{"port twice", func(s *discoveryv1.EndpointSlice) { s.Ports = append(s.Ports, s.Ports[0]) }, false, 1, 1, 1},
		{"too many ports", func(s *discoveryv1.EndpointSlice) {
			for i := range MaxPortsPerSlice {
				s.Ports = append(s.Ports, port(fmt.Sprintf("p%d", i), corev1.ProtocolTCP, int32(1000+i)))
			}
		}, true, 0, 0, 1},
		{"FQDN", func(s *discoveryv1.EndpointSlice) { s.AddressType = discoveryv1.AddressTypeFQDN }, true, 0, 0, 1},
		{"too many endpoints", func(s *discoveryv1.EndpointSlice) {
			for i := range MaxAddressesPerSlice {
				s.Endpoints = append(s.Endpoints, ep(fmt.Sprintf("10.2.%d.%d", i/250, i%250+1), "", true, false))
			}
		}, true, 0, 0, 1},
		{"another GatewayDNS's name", func(s *discoveryv1.EndpointSlice) {
			s.Annotations[AnnotationGatewayRef] = "dev-team/web"
		}, true, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.edit(s)
			p, ok, problems := Parse(s, "xcc.test")
			if ok == tt.whole || len(p.Pods) != tt.pods || len(p.Ports) != tt.ports || len(problems) != tt.bad {
				t.Errorf("Parse = ok %v, %d pods, ports %v, problems %v; want ok %v, %d pods, %d ports, %d problems",
					ok, len(p.Pods), p.Ports, problems, !tt.whole, tt.pods, tt.ports, tt.bad)
			}
		})
	}
}

func TestPodLabel(t *testing.T) {
	tests := []struct {
		hostname, addr, want string
		ok                   bool
	}{
		{"postgres-0", "10.1.0.5", "postgres-0", true},
		{"", "10.1.0.5", "10-1-0-5", true},
		{"", "fd00:1::5", "fd00-1--5", true},
		{"", "fd00:1::", "fd00-1--", false},
		{"Bad_Name", "10.1.0.5", "Bad_Name", false},
	}
	for _, tt := range tests {
		if got, ok := PodLabel(tt.hostname, tt.addr); got != tt.want || ok != tt.ok {
			t.Errorf("PodLabel(%q, %q) = %q, %v; want %q, %v", tt.hostname, tt.addr, got, ok, tt.want, tt.ok)
		}
	}
	x := HeadlessHostname("db", "dev-team", "xcc.test")
	for _, got := range []string{
		HeadlessAllName(x), HeadlessClusterName(x, "cluster-a"), HeadlessPodName(x, "cluster-a", "postgres-0"),
		HeadlessSRVName(x, Port{Name: "pg", Protocol: corev1.ProtocolTCP}),
	} {
		if !strings.HasSuffix(got, "."+x) {
			t.Errorf("%s is not below %s", got, x)
		}
	}
	if got := HeadlessSRVName(x, Port{Name: "pg", Protocol: corev1.ProtocolSCTP}); got != "_pg._sctp."+x {
		t.Errorf("SRV name %s", got)
	}
}
