package desired

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// kindCase is one row of the table of one kind: a GatewayDNS "gw" of
// namespace dev-team and its clusters, and what the kind publishes of
// them: its slices (testfixture.SliceView) and each status entry (entryView).
type kindCase struct {
	name     string
	gd       func(*v1alpha1.GatewayDNS)
	allowed  string
	grants   string
	owners   map[string]string
	clusters []Input
	slices   []string
	status   []string
}

// runKind runs, after admit, the kinds before k in the list (a kind may
// read what they leave) and then k, and checks only k's slices.
func runKind(t *testing.T, k contract.Kind, tt kindCase) {
	t.Helper()
	gd := testfixture.GatewayDNS("gw")
	if tt.gd != nil {
		tt.gd(gd)
	}
	allowed, err := cidr.Parse(tt.allowed)
	if err != nil {
		t.Fatal(err)
	}
	grants, err := contract.ParseGrants(tt.grants, "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	c := newComputation(gd, "xcc.test", allowed, Limits{}.withDefaults(), tt.clusters)
	c.out = &Result{Keep: map[string]bool{}, ConflictOwners: map[string]string{}, Headless: map[string]contract.HeadlessEndpoints{}}
	c.names = &nameInputs{grants: grants, owners: tt.owners}
	c.admit()
	found := false
	for _, each := range kinds {
		each.add(c)
		if found = each.kind == k; found {
			break
		}
	}
	if !found {
		t.Fatalf("kind %s is not in the list", k)
	}
	var got []string
	for _, s := range c.out.Slices {
		if s.Labels[contract.LabelRecord] == string(k) {
			got = append(got, testfixture.SliceView(s))
		}
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(tt.slices)); !slices.Equal(got, want) {
		t.Errorf("slices:\n got %q\nwant %q", got, want)
	}
	var status []string
	for _, e := range c.entries {
		status = append(status, entryView(e))
	}
	for _, n := range c.out.Names {
		status = append(status, fmt.Sprintf("name %s %s healthy=%d: %s", n.Name, n.Reason, n.HealthySources, n.Message))
	}
	if !slices.Equal(status, tt.status) {
		t.Errorf("status:\n got %q\nwant %q", status, tt.status)
	}
}

// entryView is a status entry as "<cluster> <reason> <healthReason>",
// then what it has of addresses (addrs=, api=, pods=), "ready",
// "healthy", and its message with its notes.
func entryView(e *entry) string {
	st := e.st
	v := strings.TrimSpace(st.Name + " " + st.Reason + " " + st.HealthReason)
	if len(st.Addresses) > 0 {
		v += " addrs=" + strings.Join(st.Addresses, ",")
	}
	if len(st.APIAddresses) > 0 {
		v += " api=" + strings.Join(st.APIAddresses, ",")
	}
	if st.Pods > 0 {
		v += fmt.Sprintf(" pods=%d", st.Pods)
	}
	if st.Ready {
		v += " ready"
	}
	if st.Healthy {
		v += " healthy"
	}
	if m := e.message(); m != "" {
		v += ": " + m
	}
	return v
}

func TestKindsListEachKindOnce(t *testing.T) {
	var got []string
	for _, k := range kinds {
		got = append(got, string(k.kind))
	}
	want := []string{"api", "gateway", "gateways", "headless", "name"}
	if !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v (every kind of name a slice publishes, the self marker aside)", got, want)
	}
}

func TestKindAPI(t *testing.T) {
	withAPI := func(in Input, host string) Input { in.APIHost = host; return in }
	for _, tt := range []kindCase{
		{
			name:     "the control-plane address",
			clusters: []Input{withAPI(good("cluster-a", "10.0.0.1"), "192.0.2.10")},
			slices:   []string{"api.cluster-a.dev-team.clusters.xcc.test IPv4 192.0.2.10"},
			status:   []string{"cluster-a api=192.0.2.10"},
		},
		{
			name:     "a control-plane hostname is a CNAME, lowercased",
			clusters: []Input{withAPI(good("cluster-a", "10.0.0.1"), "CP.example.com")},
			slices:   []string{"api.cluster-a.dev-team.clusters.xcc.test FQDN cp.example.com"},
			status:   []string{"cluster-a api=cp.example.com"},
		},
		{
			name:     "an address outside the allowed CIDRs is refused, the gateway stays",
			allowed:  "10.0.0.0/8",
			clusters: []Input{withAPI(good("cluster-a", "10.0.0.1"), "192.0.2.10")},
			status:   []string{"cluster-a: api host refused: 192.0.2.10: not in the allowed CIDRs 10.0.0.0/8"},
		},
		{
			name:     "no host, no name",
			clusters: []Input{good("cluster-a", "10.0.0.1")},
			status:   []string{"cluster-a"},
		},
		{
			name:     "a cluster whose names an older GatewayDNS owns publishes none",
			clusters: []Input{withAPI(Input{Name: "cluster-a", Selected: true, OwnedBy: "dev-team/older"}, "192.0.2.10")},
			status:   []string{"cluster-a Conflict: the names of this cluster are published by the older GatewayDNS dev-team/older"},
		},
		{
			name:     "a headless export names no cluster",
			gd:       func(gd *v1alpha1.GatewayDNS) { gd.Spec.ResolutionType = v1alpha1.ResolutionTypeHeadless },
			clusters: []Input{withAPI(Input{Name: "cluster-a", Selected: true}, "192.0.2.10")},
			status:   []string{"cluster-a"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { runKind(t, contract.KindAPI, tt) })
	}
}

func TestKindGateway(t *testing.T) {
	for _, tt := range []kindCase{
		{
			name:     "the load-balancer addresses, one slice per family",
			clusters: []Input{good("cluster-a", "10.0.0.1", "2001:db8::1")},
			slices: []string{"*.gateway.cluster-a.dev-team.clusters.xcc.test IPv4 10.0.0.1",
				"*.gateway.cluster-a.dev-team.clusters.xcc.test IPv6 2001:db8::1"},
			status: []string{"cluster-a Published addrs=10.0.0.1,2001:db8::1 ready"},
		},
		{
			name:     "a bad address is refused alone",
			clusters: []Input{good("cluster-a", "10.0.0.1", "127.0.0.1")},
			slices:   []string{"*.gateway.cluster-a.dev-team.clusters.xcc.test IPv4 10.0.0.1"},
			status: []string{"cluster-a Published addrs=10.0.0.1 ready: " +
				"refused: invalid address \"127.0.0.1\": loopback addresses are refused"},
		},
		{
			name:     "nothing inside the allowed CIDRs",
			allowed:  "10.0.0.0/8",
			clusters: []Input{good("cluster-a", "192.0.2.1")},
			status: []string{"cluster-a AddressNotAllowed: " +
				"no address of Service projectcontour/envoy lies in the allowed CIDRs 10.0.0.0/8; " +
				"refused: 192.0.2.1: not in the allowed CIDRs 10.0.0.0/8"},
		},
		{
			name: "not a LoadBalancer",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true,
				Service: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}}},
			status: []string{"cluster-a ServiceNotLoadBalancer: Service projectcontour/envoy is of type \"ClusterIP\", not LoadBalancer"},
		},
		{
			name:     "no ingress yet",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true, Service: testfixture.GatewayService()}},
			status:   []string{"cluster-a NoLoadBalancerIngress: Service projectcontour/envoy has no load-balancer ingress yet"},
		},
		{
			name:     "Service missing",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true}},
			status:   []string{"cluster-a ServiceNotFound: Service projectcontour/envoy not found in the workload cluster"},
		},
		{
			name: "unreachable: the last addresses stay in status, no new slice",
			gd: func(gd *v1alpha1.GatewayDNS) {
				gd.Status.Clusters = []v1alpha1.ClusterStatus{{Name: "cluster-a", Addresses: []string{"10.0.0.7"}, Healthy: true, HealthReason: v1alpha1.HealthReasonHealthy}}
			},
			clusters: []Input{{Name: "cluster-a", Selected: true}},
			status: []string{"cluster-a ClusterUnreachable Healthy addrs=10.0.0.7 healthy: " +
				"Service projectcontour/envoy not listed yet (cluster unreachable or connecting); last published addresses kept"},
		},
		{
			name:     "a bad service reference",
			gd:       func(gd *v1alpha1.GatewayDNS) { gd.Spec.Service = "envoy" },
			clusters: []Input{good("cluster-a", "10.0.0.1")},
			status:   []string{"cluster-a InvalidServiceRef: spec.service: \"envoy\" is not namespace/name"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { runKind(t, contract.KindGateway, tt) })
	}
}

func TestKindGateways(t *testing.T) {
	const gws = "*.gw.dev-team.gateways.xcc.test"
	unready := good("cluster-b", "10.0.0.2")
	unready.ReadyEndpoints = 0
	for _, tt := range []kindCase{
		{
			name:     "each healthy gateway is a source",
			clusters: []Input{good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2")},
			slices:   []string{gws + " IPv4 10.0.0.1", gws + " IPv4 10.0.0.2"},
			status:   []string{"cluster-a Published Healthy addrs=10.0.0.1 ready healthy", "cluster-b Published Healthy addrs=10.0.0.2 ready healthy"},
		},
		{
			name:     "a gateway without a ready endpoint is an unready source",
			clusters: []Input{good("cluster-a", "10.0.0.1"), unready},
			slices:   []string{gws + " IPv4 10.0.0.1", gws + " IPv4 10.0.0.2 unready"},
			status: []string{"cluster-a Published Healthy addrs=10.0.0.1 ready healthy",
				"cluster-b Published NoReadyEndpoints addrs=10.0.0.2 ready: gateway unhealthy: Service projectcontour/envoy has no ready endpoint"},
		},
		{
			name: "an unreachable cluster is a source with its last addresses and health",
			gd: func(gd *v1alpha1.GatewayDNS) {
				gd.Status.Clusters = []v1alpha1.ClusterStatus{{Name: "cluster-a", Addresses: []string{"10.0.0.7"}, Healthy: true, HealthReason: v1alpha1.HealthReasonHealthy}}
			},
			clusters: []Input{{Name: "cluster-a", Selected: true, AccessReason: ReasonKubeconfigMissing, AccessMessage: "gone"}},
			slices:   []string{gws + " IPv4 10.0.0.7"},
			status:   []string{"cluster-a KubeconfigMissing Healthy addrs=10.0.0.7 healthy: gone; last published addresses kept"},
		},
		{
			name: "an unreachable cluster its Cluster says is not available is unready",
			gd: func(gd *v1alpha1.GatewayDNS) {
				gd.Status.Clusters = []v1alpha1.ClusterStatus{{Name: "cluster-a", Addresses: []string{"10.0.0.7"}, Healthy: true, HealthReason: v1alpha1.HealthReasonHealthy}}
			},
			clusters: []Input{{Name: "cluster-a", Selected: true, Unavailable: "condition Available is False"}},
			slices:   []string{gws + " IPv4 10.0.0.7 unready"},
			status: []string{"cluster-a ClusterUnreachable ClusterNotAvailable addrs=10.0.0.7: " +
				"Service projectcontour/envoy not listed yet (cluster unreachable or connecting); last published addresses kept"},
		},
		{
			name:     "no address, no source",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true, Service: testfixture.GatewayService()}},
			status:   []string{"cluster-a NoLoadBalancerIngress NoAddress: Service projectcontour/envoy has no load-balancer ingress yet"},
		},
		{
			name:     "a bad locality publishes none (Compute then says so on every entry)",
			gd:       func(gd *v1alpha1.GatewayDNS) { gd.Spec.Locality = &v1alpha1.Locality{Policy: "Nearest"} },
			clusters: []Input{good("cluster-a", "10.0.0.1")},
			status:   []string{"cluster-a Published Healthy addrs=10.0.0.1 ready healthy"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { runKind(t, contract.KindGateways, tt) })
	}
}

func TestKindHeadless(t *testing.T) {
	const x = "db.dev-team.services.xcc.test"
	headless := func(gd *v1alpha1.GatewayDNS) {
		gd.Name = "db"
		gd.Spec.Service = "databases/postgres"
		gd.Spec.ResolutionType = v1alpha1.ResolutionTypeHeadless
	}
	notHeadless := headlessIn("cluster-b", testfixture.PodEndpoint("10.1.0.5", "", true))
	notHeadless.Service = testfixture.HeadlessService()
	notHeadless.Service.Spec.ClusterIP = "10.96.0.10"
	for _, tt := range []kindCase{
		{
			name:     "the ready pods of each cluster, not-ready ones left out",
			gd:       headless,
			clusters: []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "postgres-0", true), testfixture.PodEndpoint("10.1.0.6", "postgres-1", false))},
			slices:   []string{x + " IPv4 10.1.0.5"},
			status:   []string{"cluster-a Published Healthy pods=1 ready healthy"},
		},
		{
			name:     "a Service that is not headless",
			gd:       headless,
			clusters: []Input{notHeadless},
			status: []string{"cluster-b ServiceNotHeadless NoReadyEndpoints: " +
				"Service databases/postgres has clusterIP \"10.96.0.10\", not None: resolutionType headless exports only headless Services"},
		},
		{
			name:     "no ready pod: published, not healthy, no slice",
			gd:       headless,
			clusters: []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "postgres-0", false))},
			status:   []string{"cluster-a Published NoReadyEndpoints ready"},
		},
		{
			name:     "a refused address is said, the rest published",
			gd:       headless,
			clusters: []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "postgres-0", true), testfixture.PodEndpoint("127.0.0.1", "postgres-1", true))},
			slices:   []string{x + " IPv4 10.1.0.5"},
			status: []string{"cluster-a Published Healthy pods=1 ready healthy: " +
				"refused: invalid address \"127.0.0.1\": loopback addresses are refused"},
		},
		{
			name: "a load-balancer GatewayDNS has none (the gateway kind said why)",
			clusters: []Input{
				headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "postgres-0", true)),
			},
			status: []string{"cluster-a ServiceNotLoadBalancer NoAddress api=192.0.2.99: Service projectcontour/envoy is of type \"ClusterIP\", not LoadBalancer"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { runKind(t, contract.KindHeadless, tt) })
	}
}

func TestKindName(t *testing.T) {
	const web = "web.dev-team.names.xcc.test"
	names := func(gd *v1alpha1.GatewayDNS) { gd.Spec.Names = &v1alpha1.Names{Enabled: true} }
	for _, tt := range []kindCase{
		{
			name:     "a label claimed in two clusters is one name of two sources",
			gd:       names,
			clusters: []Input{named("cluster-a", "shop/web=web=10.0.0.1"), named("cluster-b", "shop/web=web=10.0.0.2")},
			slices:   []string{web + " IPv4 10.0.0.1", web + " IPv4 10.0.0.2"},
			status: []string{"cluster-a Published Healthy addrs=10.9.9.9 ready healthy", "cluster-b Published Healthy addrs=10.9.9.9 ready healthy",
				"name " + web + " Published healthy=2: "},
		},
		{
			name:     "a full name inside a grant",
			gd:       names,
			grants:   "dev-team=shop.xcc.test",
			clusters: []Input{named("cluster-a", "shop/web=www.shop.xcc.test=10.0.0.1")},
			slices:   []string{"www.shop.xcc.test IPv4 10.0.0.1"},
			status:   []string{"cluster-a Published Healthy addrs=10.9.9.9 ready healthy", "name www.shop.xcc.test Published healthy=1: "},
		},
		{
			name:     "a name outside the grants is refused",
			gd:       names,
			clusters: []Input{named("cluster-a", "shop/web=www.other.xcc.test=10.0.0.1")},
			status: []string{"cluster-a Published Healthy addrs=10.9.9.9 ready healthy",
				"name www.other.xcc.test NameRefused healthy=0: hostname \"www.other.xcc.test\": " +
					"outside the names granted to the namespace \"dev-team\": want <label>.dev-team.names.xcc.test"},
		},
		{
			name:     "a name an older GatewayDNS claims",
			gd:       names,
			owners:   map[string]string{web: "dev-team/older"},
			clusters: []Input{named("cluster-a", "shop/web=web=10.0.0.1")},
			status: []string{"cluster-a Published Healthy addrs=10.9.9.9 ready healthy",
				"name " + web + " Conflict healthy=0: published by the older GatewayDNS dev-team/older"},
		},
		{
			name: "Services not listed yet: the cluster's names are kept",
			gd:   names,
			clusters: []Input{func() Input {
				in := named("cluster-a", "shop/web=web=10.0.0.1")
				in.NamesSynced = false
				return in
			}()},
			status: []string{"cluster-a Published Healthy addrs=10.9.9.9 ready healthy: names: Services not listed yet " +
				"(the kubeconfig needs list and watch on Services and EndpointSlices of every namespace); last published names kept"},
		},
		{
			name:     "off unless spec.names",
			clusters: []Input{named("cluster-a", "shop/web=web=10.0.0.1")},
			status:   []string{"cluster-a Published Healthy addrs=10.9.9.9 ready healthy"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { runKind(t, contract.KindName, tt) })
	}
}
