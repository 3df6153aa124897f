package contract

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

const csZone = "clusterset.local"

func clusterSetIPImport() ClusterSetImport {
	return ClusterSetImport{Namespace: "dev-team", Name: "web", Type: ImportClusterSetIP,
		IPs:   []string{"10.96.0.10", "fd00::a", "10.96.0.10"},
		Ports: []Port{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}, {Protocol: corev1.ProtocolTCP, Port: 8080}}}
}

func headlessImport() ClusterSetImport {
	pg := []Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}
	return ClusterSetImport{Namespace: "dev-team", Name: "db", Type: ImportHeadless, Sources: []ClusterSetSource{
		{Cluster: "cluster-a", Endpoints: HeadlessEndpoints{Groups: []HeadlessGroup{{Ports: pg,
			IPv4: []Endpoint{{Address: "10.1.0.5", Hostname: "pg-0"}, {Address: "10.1.0.6"}}}}}},
		{Cluster: "cluster-b", Endpoints: HeadlessEndpoints{Groups: []HeadlessGroup{{Ports: pg,
			IPv6: []Endpoint{{Address: "fd00:1::5", Hostname: "pg-0"}}}}}},
	}}
}

// What the controller builds, serve reads back as the import says.
func TestBuildClusterSetParses(t *testing.T) {
	got := map[string]string{}
	for _, imp := range []ClusterSetImport{clusterSetIPImport(), headlessImport()} {
		for _, s := range BuildClusterSet(imp, csZone) {
			if !IsClusterSet(s) {
				t.Errorf("%s: not labelled %s", s.Name, KindClusterSet)
			}
			p, ok, problems := ParseClusterSet(s, csZone)
			if !ok || len(problems) > 0 {
				t.Fatalf("ParseClusterSet(%s) = %v, %v", s.Name, ok, problems)
			}
			var pods []string
			for _, pod := range p.Pods {
				pods = append(pods, pod.Label+"="+pod.Host)
			}
			got[s.Name[:strings.LastIndex(s.Name, "-")]] = fmt.Sprintf("%s %s ip=%v src=%q ttl=%d hosts=%v pods=%v ports=%v",
				p.Name, p.Kind, p.ClusterSetIP, p.Source, p.TTL, p.Hosts, pods, p.Ports)
		}
	}
	want := map[string]string{
		"web-ip-clusterset-ipv4":                   `web.dev-team.svc.clusterset.local clusterset ip=true src="" ttl=5 hosts=[10.96.0.10] pods=[] ports=[{http TCP 80}]`,
		"web-ip-clusterset-ipv6":                   `web.dev-team.svc.clusterset.local clusterset ip=true src="" ttl=5 hosts=[fd00::a] pods=[] ports=[{http TCP 80}]`,
		"db-cluster-a-clusterset-ipv4-" + pgKey(t): `db.dev-team.svc.clusterset.local clusterset ip=false src="cluster-a" ttl=5 hosts=[10.1.0.5 10.1.0.6] pods=[pg-0=10.1.0.5 10-1-0-6=10.1.0.6] ports=[{pg TCP 5432}]`,
		"db-cluster-b-clusterset-ipv6-" + pgKey(t): `db.dev-team.svc.clusterset.local clusterset ip=false src="cluster-b" ttl=5 hosts=[fd00:1::5] pods=[pg-0=fd00:1::5] ports=[{pg TCP 5432}]`,
	}
	if len(got) != len(want) {
		t.Errorf("slices %v, want %d", got, len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
}

func pgKey(t *testing.T) string {
	t.Helper()
	return portsKey([]Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}})
}

// Slice names are DNS-1123 names of at most 63 characters, the same for
// the same input and distinct per (import, source, family, port set).
func TestClusterSetSliceNames(t *testing.T) {
	long := strings.Repeat("n", 63)
	seen := map[string]bool{}
	for _, imp := range []ClusterSetImport{
		clusterSetIPImport(), headlessImport(),
		{Namespace: "other", Name: "web", Type: ImportClusterSetIP, IPs: []string{"10.96.0.10"}},
		{Namespace: long, Name: long, Type: ImportClusterSetIP, IPs: []string{"10.96.0.10"}},
		{Namespace: long, Name: long + "x"[:0], Type: ImportHeadless, Sources: []ClusterSetSource{{Cluster: long, Endpoints: headlessImport().Sources[0].Endpoints}}},
	} {
		for i, s := range BuildClusterSet(imp, csZone) {
			if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 || len(s.Name) > 63 {
				t.Errorf("slice name %q: %v", s.Name, errs)
			}
			if seen[s.Name] {
				t.Errorf("slice name %q twice", s.Name)
			}
			seen[s.Name] = true
			if again := BuildClusterSet(imp, csZone)[i].Name; again != s.Name {
				t.Errorf("slice name %q, then %q", s.Name, again)
			}
		}
	}
}

// A slice is hostile input: whatever it holds, serve publishes only what
// the rules allow, and refuses the rest with a reason.
func TestParseClusterSetHostile(t *testing.T) {
	ipSlice := func(edit func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		s := BuildClusterSet(clusterSetIPImport(), csZone)[0]
		edit(s)
		return s
	}
	podSlice := func(edit func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		s := BuildClusterSet(headlessImport(), csZone)[0]
		edit(s)
		return s
	}
	annotate := func(k, v string) func(*discoveryv1.EndpointSlice) {
		return func(s *discoveryv1.EndpointSlice) { s.Annotations[k] = v }
	}
	tests := []struct {
		name     string
		slice    *discoveryv1.EndpointSlice
		ok       bool
		hosts    string // Hosts, or the pods' labels and hosts of a headless slice
		problems int
	}{
		{"valid ClusterSetIP", ipSlice(func(*discoveryv1.EndpointSlice) {}), true, "10.96.0.10", 0},
		{"no hostname", ipSlice(func(s *discoveryv1.EndpointSlice) { delete(s.Annotations, AnnotationHostname) }), false, "", 0},
		{"no import ref", ipSlice(func(s *discoveryv1.EndpointSlice) { delete(s.Annotations, AnnotationServiceImport) }), false, "", 1},
		{"ref of any", ipSlice(annotate(AnnotationServiceImport, "dev-team/any")), false, "", 1},
		{"ref of a bad label", ipSlice(annotate(AnnotationServiceImport, "dev_team/web")), false, "", 1},
		{"ref of three parts", ipSlice(annotate(AnnotationServiceImport, "a/b/c")), false, "", 1},
		{"another import's name", ipSlice(annotate(AnnotationHostname, "db.dev-team.svc.clusterset.local")), false, "", 1},
		{"another namespace's", ipSlice(annotate(AnnotationHostname, "web.other.svc.clusterset.local")), false, "", 1},
		{"a name below the import's", ipSlice(annotate(AnnotationHostname, "cluster-a.web.dev-team.svc.clusterset.local")), false, "", 1},
		{"a wildcard", ipSlice(annotate(AnnotationHostname, "*.web.dev-team.svc.clusterset.local")), false, "", 1},
		{"the version name", ipSlice(annotate(AnnotationHostname, "dns-version.clusterset.local")), false, "", 1},
		{"a name of the other zone", ipSlice(annotate(AnnotationHostname, "web.dev-team.services.xcc.test")), false, "", 1},
		{"a hostname with a slash", ipSlice(annotate(AnnotationHostname, "web.dev-team/x.svc.clusterset.local")), false, "", 1},
		{"upper case and a final dot", ipSlice(annotate(AnnotationHostname, "WEB.dev-team.svc.clusterset.local.")), true, "10.96.0.10", 0},
		{"unknown type", ipSlice(annotate(AnnotationImportType, "LoadBalancer")), false, "", 1},
		{"no type", ipSlice(func(s *discoveryv1.EndpointSlice) { delete(s.Annotations, AnnotationImportType) }), false, "", 1},
		{"FQDN addresses", ipSlice(func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"evil.example.com"}
		}), false, "", 1},
		{"an IPv6 address in an IPv4 slice, a loopback one", ipSlice(func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Addresses = []string{"fd00::1", "127.0.0.1", "10.96.0.11"}
		}), true, "10.96.0.11", 2},
		{"a not ready endpoint", ipSlice(func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.96.0.12"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}})
		}), true, "10.96.0.10", 1},
		{"too many addresses", ipSlice(func(s *discoveryv1.EndpointSlice) {
			for i := range MaxAddressesPerSlice {
				s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.97.%d.%d", i/250, i%250+1)}})
			}
		}), false, "", 1},
		{"too many ports", ipSlice(func(s *discoveryv1.EndpointSlice) {
			for i := range MaxPortsPerSlice {
				s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(fmt.Sprintf("p%d", i)), Port: ptr.To(int32(i + 1))})
			}
		}), false, "", 1},
		{"a bad port", ipSlice(func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To("_x"), Port: ptr.To(int32(1))})
		}), true, "10.96.0.10", 1},
		{"a bad TTL", ipSlice(annotate(AnnotationTTL, "-1")), true, "10.96.0.10", 1},
		{"valid Headless", podSlice(func(*discoveryv1.EndpointSlice) {}), true, "pg-0=10.1.0.5 10-1-0-6=10.1.0.6", 0},
		{"no source cluster", podSlice(func(s *discoveryv1.EndpointSlice) { delete(s.Labels, LabelSourceCluster) }), false, "", 1},
		{"source cluster any", podSlice(func(s *discoveryv1.EndpointSlice) { s.Labels[LabelSourceCluster] = "any" }), false, "", 1},
		{"source cluster not a label", podSlice(func(s *discoveryv1.EndpointSlice) { s.Labels[LabelSourceCluster] = "a.b" }), false, "", 1},
		{"hostname any, two addresses, not ready, terminating", podSlice(func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hostname = ptr.To("any")
			s.Endpoints = append(s.Endpoints,
				discoveryv1.Endpoint{Addresses: []string{"10.1.0.7", "10.1.0.8"}},
				discoveryv1.Endpoint{Addresses: []string{"10.1.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
				discoveryv1.Endpoint{Addresses: []string{"10.1.0.10"}, Conditions: discoveryv1.EndpointConditions{Terminating: ptr.To(true)}})
		}), true, "10-1-0-6=10.1.0.6", 4},
		{"headless FQDN", podSlice(func(s *discoveryv1.EndpointSlice) { s.AddressType = discoveryv1.AddressTypeFQDN }), false, "", 1},
		{"headless too many endpoints", podSlice(func(s *discoveryv1.EndpointSlice) {
			for i := range MaxAddressesPerSlice {
				s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.2.%d.%d", i/250, i%250+1)}})
			}
		}), false, "", 1},
	}
	for _, tt := range tests {
		p, ok, problems := ParseClusterSet(tt.slice, csZone)
		hosts := strings.Join(p.Hosts, " ")
		if !p.ClusterSetIP {
			var pods []string
			for _, pod := range p.Pods {
				pods = append(pods, pod.Label+"="+pod.Host)
			}
			hosts = strings.Join(pods, " ")
		}
		if ok != tt.ok || hosts != tt.hosts || len(problems) != tt.problems {
			t.Errorf("%s: ok %v, hosts %q, problems %v; want %v, %q, %d problems", tt.name, ok, hosts, problems, tt.ok, tt.hosts, tt.problems)
		}
		if !ok && (p.Name != "" || len(p.Hosts) > 0) {
			t.Errorf("%s: refused, yet %+v", tt.name, p)
		}
	}
}

// The clusterset zone holds the names of the specification and nothing
// else: every name the contract makes there is of the grammar, stored
// where serve stores it, and any other name is refused.
func TestClusterSetGrammar(t *testing.T) {
	shapes := ClusterSetShapes()
	x := ClusterSetHostname("db", "dev-team", csZone)
	const (
		refused = "refused"
		empty   = "empty"
	)
	for _, tt := range []struct{ name, want string }{
		{x, HeadlessAllName(x)},
		// Where X and SRV of X are stored: no name of the specification,
		// NXDOMAIN when asked.
		{HeadlessAllName(x), refused},
		{ClusterSetSRVName(x), refused},
		{HeadlessClusterName(x, "cluster-a"), "cluster-a." + x},
		{HeadlessPodName(x, "cluster-a", "pg-0"), "pg-0.cluster-a." + x},
		{HeadlessSRVName(x, Port{Name: "pg", Protocol: corev1.ProtocolTCP}), "_pg._tcp." + x},
		{DNSVersionName(csZone), "dns-version.clusterset.local"},
		{"clusterset.local", empty},
		{"svc.clusterset.local", empty},
		{"dev-team.svc.clusterset.local", empty},
		{"_tcp." + x, empty},
		{"foo.clusterset.local", refused},
		{"a.dns-version.clusterset.local", refused},
		{"x.svc2.clusterset.local", refused},
		{"x.pg-0.cluster-a." + x, refused},
		{"_pg._tcp.cluster-a." + x, refused},
		{"_pg._tls." + x, refused},
		{"any." + x, refused},
		{"db.any.svc.clusterset.local", refused},
		{"any.clusterset.local", refused},
		{"_x.dev-team.svc.clusterset.local", refused},
		{"a/b.dev-team.svc.clusterset.local", refused},
		{"ns.dns.clusterset.local", refused},
	} {
		v := ClassifyQuery(tt.name+".", csZone, shapes)
		got := v.Stored
		switch {
		case v.Refused:
			got = refused
		case v.Empty:
			got = empty
		}
		if got != tt.want {
			t.Errorf("ClassifyQuery(%s) = %+v, want %s", tt.name, v, tt.want)
		}
	}
	v := ClassifyQuery("dns-version.clusterset.local.", csZone, shapes)
	for _, qtype := range []string{"TXT", "A", "SRV", "CNAME"} {
		if got := v.ReadsEtcd(qtype); got != (qtype == "TXT") {
			t.Errorf("dns-version %s reads etcd: %v", qtype, got)
		}
	}
	if i := slices.IndexFunc(shapes, func(s Shape) bool { return s.Root && len(s.Labels) == 0 }); i < 0 {
		t.Error("the clusterset zone is not closed")
	}
}

// Each zone owns its subtree alone: the clusterset zone may not equal,
// hold or lie inside the other.
func TestCheckClusterSetZone(t *testing.T) {
	for _, tt := range []struct {
		zone, cs string
		ok       bool
	}{
		{"xcc.test", "clusterset.local", true},
		{"xcc.test", "", true},
		{"local", "clusterset.local", false},
		{"xcc.clusterset.local", "clusterset.local", false},
		{"clusterset.local", "clusterset.local.", false},
		{"xcc.test", "a/b.local", false},
		{"xcc.test", "any..local", false},
	} {
		if err := CheckClusterSetZone(tt.zone, tt.cs); (err == nil) != tt.ok {
			t.Errorf("CheckClusterSetZone(%q, %q) = %v, want ok %v", tt.zone, tt.cs, err, tt.ok)
		}
	}
}
