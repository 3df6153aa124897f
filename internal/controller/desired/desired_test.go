package desired

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// good is a selected cluster whose gateway Service has the given IPs and
// a ready endpoint.
func good(name string, addrs ...string) Input {
	return Input{Name: name, Selected: true, ServiceSynced: true, Service: testfixture.GatewayService(testfixture.IPs(addrs...)...),
		EndpointsSynced: true, ReadyEndpoints: 1}
}

// perCluster returns the slices of the per-cluster names (gateway, api),
// without those of the multi-cluster name (gateways_test.go tests them).
func perCluster(ss []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	return slices.DeleteFunc(slices.Clone(ss), func(s *discoveryv1.EndpointSlice) bool {
		return s.Labels[contract.LabelRecord] == string(contract.KindGateways)
	})
}

// TestComputeDesired checks the per-cluster names and status of Compute.
// It is long for its table, one row per case, and one loop over it.
func TestComputeDesired(t *testing.T) {
	const gwA = "*.gateway.cluster-a.dev-team.clusters.xcc.test"
	const gwB = "*.gateway.cluster-b.dev-team.clusters.xcc.test"
	tests := []struct {
		name      string
		mutate    func(*v1alpha1.GatewayDNS)
		allowed   string // the operator's --allowed-cidrs
		clusters  []Input
		want      []string          // sliceView of every desired slice, any order
		reasons   map[string]string // cluster -> status reason
		messages  map[string]string // cluster -> a part of its status message
		keep      []string
		conflicts []string
	}{
		{
			name:     "two clusters publish IPv4",
			clusters: []Input{good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2")},
			want:     []string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.2"},
			reasons:  map[string]string{"cluster-a": ReasonPublished, "cluster-b": ReasonPublished},
		},
		{
			name:     "dual stack gives separate IPv4 and IPv6 slices, IPv6 never in IPv4",
			clusters: []Input{good("cluster-a", "2001:db8::1", "10.0.0.1", "10.0.0.3")},
			want:     []string{gwA + " IPv4 10.0.0.1,10.0.0.3", gwA + " IPv6 2001:db8::1"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name: "hostname load balancer gives an FQDN slice, lowercased",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true,
				Service: testfixture.GatewayService(corev1.LoadBalancerIngress{Hostname: "ELB-1.example.com"})}},
			want:    []string{gwA + " FQDN elb-1.example.com"},
			reasons: map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name:     "unselected cluster publishes nothing and has no status",
			clusters: []Input{good("cluster-a", "10.0.0.1"), {Name: "cluster-c", ServiceSynced: true, Service: testfixture.GatewayService(testfixture.IPs("10.0.0.9")...)}},
			want:     []string{gwA + " IPv4 10.0.0.1"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name:     "cluster name that is not a DNS label is refused, others publish",
			clusters: []Input{good("a.b", "10.0.0.5"), good("cluster-b", "10.0.0.2")},
			want:     []string{gwB + " IPv4 10.0.0.2"},
			reasons:  map[string]string{"a.b": ReasonInvalidClusterName, "cluster-b": ReasonPublished},
		},
		{
			name: "missing kubeconfig keeps last slices",
			clusters: []Input{{Name: "cluster-a", Selected: true, AccessReason: ReasonKubeconfigMissing, AccessMessage: "no secret"},
				good("cluster-b", "10.0.0.2")},
			want:    []string{gwB + " IPv4 10.0.0.2"},
			reasons: map[string]string{"cluster-a": ReasonKubeconfigMissing, "cluster-b": ReasonPublished},
			keep:    []string{"cluster-a"},
		},
		{
			name: "garbage kubeconfig keeps last slices",
			clusters: []Input{{Name: "cluster-a", Selected: true, AccessReason: ReasonKubeconfigInvalid, AccessMessage: "garbage"},
				good("cluster-b", "10.0.0.2")},
			want:    []string{gwB + " IPv4 10.0.0.2"},
			reasons: map[string]string{"cluster-a": ReasonKubeconfigInvalid, "cluster-b": ReasonPublished},
			keep:    []string{"cluster-a"},
		},
		{
			name:     "unreachable cluster keeps last slices",
			clusters: []Input{{Name: "cluster-a", Selected: true}, good("cluster-b", "10.0.0.2")},
			want:     []string{gwB + " IPv4 10.0.0.2"},
			reasons:  map[string]string{"cluster-a": ReasonClusterUnreachable, "cluster-b": ReasonPublished},
			keep:     []string{"cluster-a"},
		},
		{
			name:     "service not found",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true}, good("cluster-b", "10.0.0.2")},
			want:     []string{gwB + " IPv4 10.0.0.2"},
			reasons:  map[string]string{"cluster-a": ReasonServiceNotFound, "cluster-b": ReasonPublished},
		},
		{
			name: "service not type LoadBalancer",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true, Service: func() *corev1.Service {
				s := testfixture.GatewayService(testfixture.IPs("10.0.0.1")...)
				s.Spec.Type = corev1.ServiceTypeClusterIP
				return s
			}()}, good("cluster-b", "10.0.0.2")},
			want:    []string{gwB + " IPv4 10.0.0.2"},
			reasons: map[string]string{"cluster-a": ReasonServiceNotLoadBalancer, "cluster-b": ReasonPublished},
		},
		{
			name:     "no ingress yet",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true, Service: testfixture.GatewayService()}, good("cluster-b", "10.0.0.2")},
			want:     []string{gwB + " IPv4 10.0.0.2"},
			reasons:  map[string]string{"cluster-a": ReasonNoLoadBalancerIngress, "cluster-b": ReasonPublished},
		},
		{
			name: "loopback, link-local, unspecified, multicast and unparsable are refused",
			clusters: []Input{good("cluster-a", "127.0.0.1", "169.254.1.1", "0.0.0.0", "224.0.0.1", "::1", "fe80::1", "ff02::1", "10.0.0.300", "not an ip"),
				good("cluster-b", "10.0.0.2")},
			want:    []string{gwB + " IPv4 10.0.0.2"},
			reasons: map[string]string{"cluster-a": ReasonNoValidAddresses, "cluster-b": ReasonPublished},
		},
		{
			name:     "refused address next to a good one: the good one publishes",
			clusters: []Input{good("cluster-a", "127.0.0.1", "10.0.0.1")},
			want:     []string{gwA + " IPv4 10.0.0.1"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name:     "IPv4-mapped IPv6 counts as IPv4",
			clusters: []Input{good("cluster-a", "::ffff:10.0.0.7")},
			want:     []string{gwA + " IPv4 10.0.0.7"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name:     "service ref that slipped past the CRD: api names still published",
			mutate:   func(g *v1alpha1.GatewayDNS) { g.Spec.Service = "projectcontour.envoy" },
			clusters: []Input{{Name: "cluster-a", Selected: true, APIHost: "10.1.0.1", ServiceSynced: true, Service: testfixture.GatewayService(testfixture.IPs("10.0.0.1")...)}},
			want:     []string{"api.cluster-a.dev-team.clusters.xcc.test IPv4 10.1.0.1"},
			reasons:  map[string]string{"cluster-a": ReasonInvalidServiceRef},
		},
		{
			name:     "api name from controlPlaneEndpoint hostname",
			clusters: []Input{{Name: "cluster-a", Selected: true, APIHost: "cp.example.com", ServiceSynced: true, Service: testfixture.GatewayService(testfixture.IPs("10.0.0.1")...)}},
			want:     []string{"api.cluster-a.dev-team.clusters.xcc.test FQDN cp.example.com", gwA + " IPv4 10.0.0.1"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name:     "loopback api host refused, gateway still published",
			clusters: []Input{{Name: "cluster-a", Selected: true, APIHost: "127.0.0.1", ServiceSynced: true, Service: testfixture.GatewayService(testfixture.IPs("10.0.0.1")...)}},
			want:     []string{gwA + " IPv4 10.0.0.1"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name: "localhost and single-label hostnames are refused",
			clusters: []Input{{Name: "cluster-a", Selected: true, APIHost: "localhost", ServiceSynced: true,
				Service: testfixture.GatewayService(corev1.LoadBalancerIngress{Hostname: "envoy"}, corev1.LoadBalancerIngress{Hostname: "a.localhost"})}},
			reasons: map[string]string{"cluster-a": ReasonNoValidAddresses},
		},
		{
			name:      "cluster owned by an older GatewayDNS: Conflict, nothing published for it",
			clusters:  []Input{{Name: "cluster-a", Selected: true, OwnedBy: "dev-team/older", APIHost: "10.1.0.1"}, good("cluster-b", "10.0.0.2")},
			want:      []string{gwB + " IPv4 10.0.0.2"},
			reasons:   map[string]string{"cluster-a": ReasonConflict, "cluster-b": ReasonPublished},
			conflicts: []string{"cluster-a"},
		},
		{
			name:    "allowed CIDRs: an address outside is refused, the rest publish",
			allowed: "10.0.0.0/24,2001:db8::/32",
			clusters: []Input{good("cluster-a", "10.0.0.1", "10.9.0.1", "2001:db8::1", "2001:db9::1"),
				good("cluster-b", "10.0.0.2")},
			want:     []string{gwA + " IPv4 10.0.0.1", gwA + " IPv6 2001:db8::1", gwB + " IPv4 10.0.0.2"},
			reasons:  map[string]string{"cluster-a": ReasonPublished, "cluster-b": ReasonPublished},
			messages: map[string]string{"cluster-a": "refused: 10.9.0.1: not in the allowed CIDRs 10.0.0.0/24,2001:db8::/32, 2001:db9::1: not in"},
		},
		{
			name:     "allowed CIDRs: no address left is AddressNotAllowed, and no slice",
			allowed:  "10.0.0.0/24",
			clusters: []Input{good("cluster-a", "192.0.2.1", "127.0.0.1"), good("cluster-b", "10.0.0.2")},
			want:     []string{gwB + " IPv4 10.0.0.2"},
			reasons:  map[string]string{"cluster-a": ReasonAddressNotAllowed, "cluster-b": ReasonPublished},
			messages: map[string]string{"cluster-a": "no address of Service projectcontour/envoy lies in the allowed CIDRs 10.0.0.0/24; refused: "},
		},
		{
			name:     "allowed CIDRs: only invalid addresses is still NoValidAddresses",
			allowed:  "10.0.0.0/24",
			clusters: []Input{good("cluster-a", "127.0.0.1")},
			reasons:  map[string]string{"cluster-a": ReasonNoValidAddresses},
		},
		{
			name:    "allowed CIDRs: a hostname load balancer is not an address and publishes",
			allowed: "10.0.0.0/24",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true,
				Service: testfixture.GatewayService(corev1.LoadBalancerIngress{Hostname: "lb.example.com"})}},
			want:    []string{gwA + " FQDN lb.example.com"},
			reasons: map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name:    "allowed CIDRs: an api address outside is refused, the gateway publishes",
			allowed: "10.0.0.0/24",
			clusters: []Input{{Name: "cluster-a", Selected: true, APIHost: "10.1.0.1", ServiceSynced: true,
				Service: testfixture.GatewayService(testfixture.IPs("10.0.0.1")...)}},
			want:     []string{gwA + " IPv4 10.0.0.1"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
			messages: map[string]string{"cluster-a": "api host refused: 10.1.0.1: not in the allowed CIDRs 10.0.0.0/24"},
		},
		{
			name:     "allowed CIDRs: an IPv4-mapped address counts as its IPv4",
			allowed:  "10.0.0.0/24",
			clusters: []Input{good("cluster-a", "::ffff:10.0.0.7")},
			want:     []string{gwA + " IPv4 10.0.0.7"},
			reasons:  map[string]string{"cluster-a": ReasonPublished},
		},
		{
			name:     "unsupported resolution type",
			mutate:   func(g *v1alpha1.GatewayDNS) { g.Spec.ResolutionType = "clusterIP" },
			clusters: []Input{good("cluster-a", "10.0.0.1")},
			reasons:  map[string]string{"cluster-a": ReasonUnsupportedResolutionType},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gd := testfixture.GatewayDNS("gw")
			if tt.mutate != nil {
				tt.mutate(gd)
			}
			allowed, err := cidr.Parse(tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			d := Compute(gd, "xcc.test", allowed, tt.clusters)
			var got []string
			for _, s := range perCluster(d.Slices) {
				got = append(got, testfixture.SliceView(s))
				checkSliceInvariants(t, s)
			}
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("slices:\n got %q\nwant %q", got, want)
			}
			reasons := map[string]string{}
			for _, c := range d.Clusters {
				reasons[c.Name] = c.Reason
				if want, ok := tt.messages[c.Name]; ok && !strings.Contains(c.Message, want) {
					t.Errorf("cluster %s: message %q, want it to contain %q", c.Name, c.Message, want)
				}
				if c.Reason != ReasonPublished && c.Message == "" {
					t.Errorf("cluster %s: reason %s without a message", c.Name, c.Reason)
				}
			}
			if len(reasons) != len(tt.reasons) {
				t.Errorf("status clusters %v, want %v", reasons, tt.reasons)
			}
			for k, v := range tt.reasons {
				if reasons[k] != v {
					t.Errorf("cluster %s: reason %q, want %q", k, reasons[k], v)
				}
			}
			var keep []string
			for k := range d.Keep {
				keep = append(keep, k)
			}
			slices.Sort(keep)
			if !slices.Equal(keep, tt.keep) {
				t.Errorf("keep %v, want %v", keep, tt.keep)
			}
			if len(d.ConflictOwners) != len(tt.conflicts) {
				t.Errorf("conflicts %v, want %v", d.ConflictOwners, tt.conflicts)
			}
		})
	}
}

// checkSliceInvariants asserts the contract every written slice meets.
func checkSliceInvariants(t *testing.T, s *discoveryv1.EndpointSlice) {
	t.Helper()
	if len(s.Name) > 63 || skydnsrecord.ValidateName(s.Name) != nil {
		t.Errorf("slice name %q: not a DNS name of at most 63", s.Name)
	}
	if s.Labels[contract.LabelManagedBy] != contract.ManagedByValue || s.Labels[contract.LabelServiceName] != contract.ServiceNameValue("gw") {
		t.Errorf("slice %s labels %v", s.Name, s.Labels)
	}
	if s.Annotations[contract.AnnotationGatewayRef] != "dev-team/gw" {
		t.Errorf("slice %s ref %q", s.Name, s.Annotations[contract.AnnotationGatewayRef])
	}
	if len(s.Ports) != 0 || len(s.Endpoints) != 1 {
		t.Errorf("slice %s: want one endpoint and no ports", s.Name)
	}
	for _, a := range s.Endpoints[0].Addresses {
		isV6 := strings.Contains(a, ":")
		if (s.AddressType == discoveryv1.AddressTypeIPv4) == isV6 && s.AddressType != discoveryv1.AddressTypeFQDN {
			t.Errorf("slice %s of type %s holds %s", s.Name, s.AddressType, a)
		}
	}
}

func TestTTLAnnotation(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	d := Compute(gd, "xcc.test", nil, []Input{good("cluster-a", "10.0.0.1")})
	if _, ok := d.Slices[0].Annotations[contract.AnnotationTTL]; ok {
		t.Errorf("ttl annotation set without spec.ttl")
	}
	gd.Spec.TTL = ptr.To(int32(60))
	d = Compute(gd, "xcc.test", nil, []Input{good("cluster-a", "10.0.0.1")})
	if got := d.Slices[0].Annotations[contract.AnnotationTTL]; got != "60" {
		t.Errorf("ttl annotation %q, want 60", got)
	}
}

// A Service reporting any number of bad addresses gives a status message
// of bounded size: the GatewayDNS status is one etcd value.
func TestRefusalsInStatusAreBounded(t *testing.T) {
	var bad []string
	for i := range 5000 {
		bad = append(bad, fmt.Sprintf("127.0.%d.%d", i/250, i%250+1))
	}
	d := Compute(testfixture.GatewayDNS("gw"), "xcc.test", nil, []Input{good("cluster-a", append(bad, "192.0.2.1")...)})
	st := d.Clusters[0]
	if st.Reason != ReasonPublished {
		t.Fatalf("reason %s, want %s", st.Reason, ReasonPublished)
	}
	if len(st.Message) > 2000 || !strings.Contains(st.Message, "and 4990 more") {
		t.Errorf("message of %d bytes: %.200s...", len(st.Message), st.Message)
	}
}

// More addresses of one family than a slice may carry: refused with a
// reason before the API server or serve would, the last ones kept.
func TestTooManyAddressesKeepsTheLastOnes(t *testing.T) {
	var many []string
	for i := range contract.MaxAddressesPerSlice + 1 {
		many = append(many, fmt.Sprintf("10.0.%d.%d", i/250, i%250+1))
	}
	d := Compute(testfixture.GatewayDNS("gw"), "xcc.test", nil, []Input{good("cluster-a", many...)})
	if st := d.Clusters[0]; st.Reason != ReasonTooManyAddresses || !d.Keep["cluster-a"] || len(d.Slices) != 0 {
		t.Errorf("reason %s keep %v slices %d; want %s, kept, none", st.Reason, d.Keep["cluster-a"], len(d.Slices), ReasonTooManyAddresses)
	}
	d = Compute(testfixture.GatewayDNS("gw"), "xcc.test", nil, []Input{good("cluster-a", many[:contract.MaxAddressesPerSlice]...)})
	if st := d.Clusters[0]; st.Reason != ReasonPublished || len(perCluster(d.Slices)) != 1 || len(d.Slices[0].Endpoints) != 10 {
		t.Errorf("at the bound: reason %s, %d slices", st.Reason, len(d.Slices))
	}
}

// "any" is the etcd plugin's wildcard label: no published name has it, as
// a cluster or as a namespace.
func TestAnyIsNeverALabel(t *testing.T) {
	d := Compute(testfixture.GatewayDNS("gw"), "xcc.test", nil, []Input{good("any", "192.0.2.1"), good("cluster-a", "192.0.2.2")})
	if d.Clusters[0].Reason != ReasonInvalidClusterName || d.Clusters[1].Reason != ReasonPublished || len(perCluster(d.Slices)) != 1 {
		t.Errorf("cluster any: %+v, %d slices", d.Clusters, len(d.Slices))
	}
	gd := testfixture.GatewayDNS("gw")
	gd.Namespace = "any"
	d = Compute(gd, "xcc.test", nil, []Input{good("cluster-a", "192.0.2.2")})
	if d.Clusters[0].Reason != ReasonInvalidNamespaceName || len(d.Slices) != 0 {
		t.Errorf("namespace any: %+v, %d slices", d.Clusters, len(d.Slices))
	}
}
