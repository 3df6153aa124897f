package lab

// The walkthrough users follow (the project's README, "Walkthrough"): its
// objects, as the lab creates them.

const (
	// ClusterNamespace is the management namespace the Clusters live in.
	ClusterNamespace = "dev-team"
	// Management is the management cluster's name in the lab.
	Management = "management"
	// ClusterA, ClusterB and ClusterC are the workload clusters.
	ClusterA = "cluster-a"
	ClusterB = "cluster-b"
	ClusterC = "cluster-c"

	// SelectorLabel and SelectorValue are the walkthrough's Cluster label.
	SelectorLabel = "hasContour"
	SelectorValue = "true"

	// GatewayNamespace and GatewayName are Contour's envoy Service.
	GatewayNamespace = "projectcontour"
	GatewayName      = "envoy"

	// SliceNamespace is where the controller writes EndpointSlices and
	// serve reads them, in every workload cluster.
	SliceNamespace = "xcc-dns"
	// Zone is the DNS zone.
	Zone = "xcc.test"

	// GatewayDNSName is the walkthrough's GatewayDNS.
	GatewayDNSName = "dev-team-gateway-dns"

	// GatewayDNSYAML is manifests/example/dev-team-gateway-dns.yaml of the
	// walkthrough, as written there.
	GatewayDNSYAML = `---
apiVersion: connectivity.tanzu.vmware.com/v1alpha1
kind: GatewayDNS
metadata:
  name: dev-team-gateway-dns
  namespace: dev-team
spec:
  clusterSelector:
    matchLabels:
      hasContour: "true"
  service: projectcontour/envoy
  resolutionType: loadBalancer
`

	// ClusterDNSCorefile is kube-system/coredns's Corefile in the
	// walkthrough before its patch step: an older kubeadm default, without
	// the options of forward and cache. The main module's tests derive the
	// same text from internal/testfixture/kubeadm.Corefile; this module
	// keeps its own copy because it cannot import the main module, and the
	// lab (make demo) must not read the main module's test fixtures.
	ClusterDNSCorefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
}
`
)

// Gateway is what a cluster's load balancer (MetalLB in the walkthrough)
// puts into the envoy Service's status: documentation addresses and names
// only, never routed.
type Gateway struct {
	IPs      []string
	Hostname string
}

// DefaultGateways are the lab's load-balancer answers per workload cluster:
// cluster-a IPv4, cluster-b dual-stack, cluster-c a hostname.
func DefaultGateways() map[string]Gateway {
	return map[string]Gateway{
		ClusterA: {IPs: []string{"192.0.2.10"}},
		ClusterB: {IPs: []string{"198.51.100.20", "2001:db8::20"}},
		ClusterC: {Hostname: "envoy.cluster-c.example.net"},
	}
}

// UpstreamRecords are what the lab's stand-in for /etc/resolv.conf
// answers: the targets of hostname load balancers. Names under
// lab.example.net (the API servers) answer 127.0.0.1; every other name is
// NXDOMAIN.
func UpstreamRecords() map[string]string {
	return map[string]string{
		"envoy.cluster-c.example.net.": "203.0.113.30",
	}
}

// walkthroughPatchedCorefile is kube-system/coredns's Corefile after the
// walkthrough's manual patch step, forwarding xcc.test to forwardTo.
func walkthroughPatchedCorefile(forwardTo string) string {
	return ClusterDNSCorefile + `xcc.test {
    forward . ` + forwardTo + `
    reload
}
`
}
