package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// The slice annotations and labels of the contract (internal/contract),
// spelled out: this module cannot import the main one.
const (
	annotationHostname   = "connectivity.tanzu.vmware.com/dns-hostname"
	annotationGatewayRef = "connectivity.tanzu.vmware.com/gateway-dns-ref"
	labelManagedBy       = "endpointslice.kubernetes.io/managed-by"
	labelRecord          = "xcc-dns.io/record"
	labelSourceCluster   = "xcc-dns.io/source-cluster"
	managedByController  = "xcc-dns-controller"
)

// hostileSlice is one EndpointSlice a workload cluster admin writes by
// hand, and the name and address that must never be answered because of it.
type hostileSlice struct {
	why       string
	namespace string // default lab.SliceNamespace
	name      string
	hostname  string
	ref       string
	labels    map[string]string
	fqdn      bool // addressType FQDN (CNAME targets), else IPv4
	addresses []string
	// ask is the name to ask; never is the address it must not answer.
	ask, never string
}

// testHostileSlices: the admin of workload cluster cluster-b is no
// trusted party (docs/threat-model.md, "Actors"): it controls the xcc-dns
// namespace of its own cluster, so it may make any name of a namespace's
// shapes answer in its own DNS, and nothing more. It writes slices that
// break the contract: a name of another namespace than its
// gateway-dns-ref, one that claims dev-team's gateway with the
// controller's managed-by label and another namespace's ref, a name below
// a gateway (the etcd plugin's prefix read would add it to the gateway's
// answers), more addresses than one slice may carry,
// the wildcard label any, a CNAME below localhost (the API server
// refuses a loopback IP itself), and a valid slice outside the xcc-dns
// namespace. Beside them it writes one valid slice of dev-team's shape
// with an address of its choosing: the boundary the threat model states
// is that it answers in cluster-b's own DNS and never in another cluster's.
// Cluster-b's cluster DNS must answer none of the hostile names, and
// still answer the published gateways as before.
func testHostileSlices(t *testing.T) {
	server := clusterDNS(t)
	ctx := ctxFor(t)
	b := theLab.Workload(lab.ClusterB)
	ns, ref := lab.ClusterNamespace, lab.ClusterNamespace+"/"+lab.GatewayDNSName
	kuardA := lab.GatewayHost("kuard", lab.ClusterA)
	gatewayA := theLab.Gateways[lab.ClusterA].IPs
	clusterName := func(cluster, namespace string) string {
		return fmt.Sprintf("*.gateway.%s.%s.clusters.%s", cluster, namespace, lab.Zone)
	}
	var huge []string
	for i := range 1100 {
		huge = append(huge, fmt.Sprintf("198.18.%d.%d", i/200, i%200+1))
	}
	hostile := []hostileSlice{
		{why: "a name of another namespace than its gateway-dns-ref", name: "hostile-other-namespace",
			hostname: clusterName("evil", "other-team"), ref: ref, addresses: []string{"192.0.2.61"},
			ask: "www.gateway.evil.other-team.clusters." + lab.Zone, never: "192.0.2.61"},
		{why: "dev-team's gateway claimed with the controller's label and another namespace's ref", name: "hostile-claims-dev-team",
			hostname: clusterName(lab.ClusterA, ns), ref: "other-team/gw", labels: map[string]string{labelManagedBy: managedByController},
			addresses: []string{"192.0.2.62"}, ask: kuardA, never: "192.0.2.62"},
		{why: "a name below cluster-a's gateway", name: "hostile-below-gateway",
			hostname: "evil.gateway." + lab.ClusterA + "." + ns + ".clusters." + lab.Zone, ref: ref, addresses: []string{"192.0.2.63"},
			ask: "evil.gateway." + lab.ClusterA + "." + ns + ".clusters." + lab.Zone, never: "192.0.2.63"},
		{why: "more addresses than one slice may carry", name: "hostile-huge",
			hostname: clusterName("huge", ns), ref: ref, addresses: huge,
			ask: "www.gateway.huge." + ns + ".clusters." + lab.Zone, never: huge[0]},
		// The API server refuses a loopback IP itself, and localhost alone
		// (one label); a name below localhost it takes.
		{why: "a CNAME below localhost", name: "hostile-localhost",
			hostname: clusterName("loop", ns), ref: ref, fqdn: true, addresses: []string{"db.localhost"},
			ask: "www.gateway.loop." + ns + ".clusters." + lab.Zone, never: "db.localhost."},
		{why: "the wildcard label any as a cluster", name: "hostile-any",
			hostname: clusterName("any", ns), ref: ref, addresses: []string{"192.0.2.64"},
			ask: "www.gateway.any." + ns + ".clusters." + lab.Zone, never: "192.0.2.64"},
		{why: "a valid slice outside the xcc-dns namespace", namespace: "default", name: "hostile-elsewhere",
			hostname: clusterName("elsewhere", ns), ref: ref, addresses: []string{"192.0.2.65"},
			ask: "www.gateway.elsewhere." + ns + ".clusters." + lab.Zone, never: "192.0.2.65"},
	}
	// Valid in cluster-b's own DNS: an admin may answer its own cluster's
	// questions; written last, so once it answers serve has read the rest.
	const handAddr = "203.0.113.66"
	hand := hostileSlice{why: "a valid name of dev-team's shape", name: "hand-written",
		hostname: clusterName("hand", ns), ref: ref, addresses: []string{handAddr}}
	handName := "www.gateway.hand." + ns + ".clusters." + lab.Zone

	for _, h := range append(hostile, hand) {
		slice := h.slice()
		t.Cleanup(func() {
			err := b.Client.DiscoveryV1().EndpointSlices(slice.Namespace).Delete(ctxFor(t), slice.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s/%s: %v", slice.Namespace, slice.Name, err)
			}
		})
		if _, err := b.Client.DiscoveryV1().EndpointSlices(slice.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create %s/%s: %v", h.why, slice.Namespace, slice.Name, err)
		}
	}

	expect(t, theLab.DNS[lab.ClusterB].XCCDNSAddr, handName, dns.TypeA, dns.RcodeSuccess, handAddr)
	expect(t, server, handName, dns.TypeA, dns.RcodeSuccess, handAddr)
	for _, h := range hostile {
		r, err := lab.Query(server, h.ask, dns.TypeA)
		if err != nil {
			t.Errorf("%s: %v", h.why, err)
			continue
		}
		if slices.Contains(lab.Values(r, dns.TypeA), h.never) || slices.Contains(lab.Values(r, dns.TypeCNAME), h.never) {
			t.Errorf("%s: A %s answered %s: %s", h.why, h.ask, h.never, lab.Summary(r))
			continue
		}
		t.Logf("%s: A %s -> %s", h.why, h.ask, lab.Summary(r))
	}
	// The published names beside them are answered as before.
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, gatewayA...)
	expect(t, server, "evil.gateway."+lab.ClusterA+"."+ns+".clusters."+lab.Zone, dns.TypeA, dns.RcodeSuccess, gatewayA...)
	expect(t, server, lab.GatewayHost("kuard", lab.ClusterB), dns.TypeA, dns.RcodeSuccess, ipv4(theLab.Gateways[lab.ClusterB].IPs)...)
	// cluster-b's own name never reaches another cluster: cluster-a's
	// DNS, asked directly, does not know it.
	if a := theLab.DNS[lab.ClusterA]; a != nil {
		r, err := lab.Query(a.XCCDNSAddr, handName, dns.TypeA)
		switch {
		case err != nil:
			t.Error(err)
		case slices.Contains(lab.Values(r, dns.TypeA), handAddr):
			t.Errorf("cluster-a's DNS answers cluster-b's hand-written name: %s", lab.Summary(r))
		default:
			t.Logf("cluster-a's own DNS: A %s -> %s", handName, lab.Summary(r))
		}
	}
}

// slice is the EndpointSlice h describes.
func (h hostileSlice) slice() *discoveryv1.EndpointSlice {
	namespace := h.namespace
	if namespace == "" {
		namespace = lab.SliceNamespace
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: h.name, Namespace: namespace, Labels: h.labels,
			Annotations: map[string]string{annotationHostname: h.hostname, annotationGatewayRef: h.ref}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	if h.fqdn {
		s.AddressType = discoveryv1.AddressTypeFQDN
	}
	// At most 100 addresses an endpoint, the API server's limit.
	for addrs := range slices.Chunk(h.addresses, 100) {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: addrs})
	}
	return s
}

// testHostileQueries: any pod of a workload cluster may ask anything. A
// query name with a '/' (the etcd plugin's path separator), a label any,
// or of no published shape gets NXDOMAIN from cluster-b's cluster DNS,
// with no record of the zone in the answer; SRV of a gateway name is
// NODATA, never the keys of its records. The seed name still answers.
func testHostileQueries(t *testing.T) {
	server := clusterDNS(t)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"/." + lab.Zone, dns.TypeSRV},
		{"/." + lab.Zone, dns.TypeA},
		{`\047.` + lab.Zone, dns.TypeTXT},
		{"x./." + lab.ClusterNamespace + ".gateways." + lab.Zone, dns.TypeA},
		{"x.any.clusters." + lab.Zone, dns.TypeSRV},
		{"www.api." + lab.ClusterA + "." + lab.ClusterNamespace + ".clusters." + lab.Zone, dns.TypeA},
	} {
		r, err := lab.Query(server, q.name, q.qtype)
		if err != nil {
			t.Errorf("%s %s: %v", q.name, dns.TypeToString[q.qtype], err)
			continue
		}
		if r.Rcode != dns.RcodeNameError || len(r.Answer) > 0 {
			t.Errorf("%s %s: %s, want NXDOMAIN and no answer", q.name, dns.TypeToString[q.qtype], lab.Summary(r))
		}
	}
	gateway := "gateway." + lab.ClusterA + "." + lab.ClusterNamespace + ".clusters." + lab.Zone
	r, err := lab.Query(server, gateway, dns.TypeSRV)
	switch {
	case err != nil:
		t.Error(err)
	case r.Rcode != dns.RcodeSuccess || len(r.Answer) > 0:
		t.Errorf("SRV %s: %s, want NODATA", gateway, lab.Summary(r))
	}
	expect(t, server, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)
}
