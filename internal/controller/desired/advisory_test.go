package desired

import (
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// TestAdvisoryUnvalidatedGatewayAddresses: no address of the classes a
// peer project's advisories found unvalidated (loopback, link-local,
// special ranges, IPv4-mapped IPv6, cloud metadata) is published from a
// gateway Service's load-balancer status or a Cluster's control plane
// endpoint, with no allowed CIDRs set; the valid address beside it is,
// and the cluster's status message names the refusal.
func TestAdvisoryUnvalidatedGatewayAddresses(t *testing.T) {
	const gw = "*.gateway.cluster-a.dev-team.clusters.xcc.test"
	for _, a := range testfixture.AdvisoryAddresses {
		t.Run(a.Addr, func(t *testing.T) {
			in := good("cluster-a", a.Addr, "10.0.0.1")
			in.APIHost = a.Addr
			d := Compute(testfixture.GatewayDNS("gw"), "xcc.test", nil, []Input{in})
			var got []string
			for _, s := range perCluster(d.Slices) {
				got = append(got, testfixture.SliceView(s))
			}
			if len(got) != 1 || got[0] != gw+" IPv4 10.0.0.1" {
				t.Errorf("published %q: want only the gateway's 10.0.0.1", got)
			}
			if len(d.Clusters) != 1 || d.Clusters[0].Reason != ReasonPublished {
				t.Fatalf("status %+v: want cluster-a Published", d.Clusters)
			}
			msg := d.Clusters[0].Message
			if !strings.Contains(msg, "refused") || !strings.Contains(msg, a.Why) {
				t.Errorf("status message %q: want the refusal of %s saying %q", msg, a.Addr, a.Why)
			}
			if !strings.Contains(msg, "api host refused") {
				t.Errorf("status message %q: want the api host %s refused", msg, a.Addr)
			}
		})
	}
}
