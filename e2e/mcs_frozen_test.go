package e2e

import (
	"testing"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testMCSFrozenMember: a ClusterSet of cluster-a, cluster-b and a third
// member whose API server is frozen (SIGSTOP: it accepts connections and
// answers nothing). A new export of cluster-a reaches cluster-b, and an
// unexport leaves it, within twice the time they take with every member
// healthy (and the slack of troubledSet.troubled), the GatewayDNS name
// answering meanwhile; the frozen member gets the import once it is
// thawed.
func testMCSFrozenMember(t *testing.T) {
	s := newTroubledSet(t, "frozen", "frozen", "xcc-frozen-test", "cluster-f")
	healthyIn, healthyOut := s.healthy()
	if err := s.m.Freeze(); err != nil {
		t.Fatal(err)
	}
	s.troubled("frozen", healthyIn, healthyOut, s.gatewayDNSResolves)
	s.m.Thaw()
	waitImport(t, s.m, s.ns, "two", func(i *lab.Import) bool { return len(i.IPs) > 0 })
}
