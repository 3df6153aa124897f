package e2e

import (
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// answerTimeout bounds how long a change may take to show in cluster
	// DNS answers: propagation plus the record TTL (30 s) that caches may
	// hold an old answer for.
	answerTimeout = 90 * time.Second
	// steadyFor is how long answers are watched while the management
	// cluster is down.
	steadyFor = 10 * time.Second
	// pollInterval is the pause between two questions while waiting.
	pollInterval = 200 * time.Millisecond
	// newGatewayA is the address cluster-a's load balancer moves to.
	newGatewayA = "192.0.2.11"
	// upstreamTargetAddr is the stand-in upstream's address of cluster-c's
	// load-balancer hostname (see lab.UpstreamRecords).
	upstreamTargetAddr = "203.0.113.30"
)

// requireDNS skips when the GatewayDNS CRD is not in the repository yet,
// and fails when the xcc-dns processes did not start.
func requireDNS(t *testing.T) *lab.WorkloadDNS {
	t.Helper()
	if !theLab.GatewayDNSCRD {
		t.Skipf("GatewayDNS CRD %s not in the repository yet", lab.GatewayDNSCRDPath)
	}
	b := theLab.DNS[lab.ClusterB]
	if b == nil || b.ClusterDNS == nil || theLab.Controller == nil {
		t.Fatalf("the xcc-dns processes are not running: %v", theLab.Skipped)
	}
	return b
}

// clusterDNS is what a pod in cluster-b asks.
func clusterDNS(t *testing.T) string { return requireDNS(t).ClusterDNSAddr }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// expect waits until server answers name/qtype with rcode and exactly want
// (values of type qtype), and returns how long that took.
func expect(t *testing.T, server, name string, qtype uint16, rcode int, want ...string) time.Duration {
	t.Helper()
	took, _, err := lab.WaitAnswer(ctxFor(t), server, name, qtype, rcode, want, answerTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s -> %s %v after %s", dns.TypeToString[qtype], name, dns.RcodeToString[rcode], want, took.Round(10*time.Millisecond))
	return took
}

// expectCNAME waits until server answers name (type A) with a CNAME to target.
func expectCNAME(t *testing.T, server, name, target string) *dns.Msg {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		r, err := lab.Query(server, name, dns.TypeA)
		if err == nil && r.Rcode == dns.RcodeSuccess && strings.Join(lab.Values(r, dns.TypeCNAME), ",") == target {
			t.Logf("A %s -> %s", name, lab.Summary(r))
			return r
		}
		if time.Now().After(deadline) {
			got := ""
			if r != nil {
				got = lab.Summary(r)
			}
			t.Fatalf("A %s: want CNAME %s within %s; got %s %v", name, target, answerTimeout, got, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// testWalkthrough follows the walkthrough's last two sections to the letter
// and asks cluster-b's DNS what its test pod would ask.
func testWalkthrough(t *testing.T) {
	server := clusterDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	kuardA := lab.GatewayHost("kuard", lab.ClusterA)

	// Before anything is wired up the name does not exist.
	expect(t, server, kuardA, dns.TypeA, dns.RcodeNameError)

	// kubectl -n dev-team label cluster cluster-a hasContour=true --overwrite (and cluster-b)
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		if err := lab.LabelCluster(ctx, mgmt, c, lab.SelectorLabel, lab.SelectorValue); err != nil {
			t.Fatal(err)
		}
	}
	// kubectl -n dev-team apply -f manifests/example/dev-team-gateway-dns.yaml
	applied := time.Now()
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, lab.GatewayDNSYAML); err != nil {
		t.Fatal(err)
	}
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)
	t.Logf("walkthrough: cluster-b resolves cluster-a's gateway %s after the GatewayDNS was applied", time.Since(applied).Round(10*time.Millisecond))
	// Any name below gateway.<cluster> answers, with the name asked.
	r := expectAnswerName(t, server, "anything.else."+kuardA)
	_ = r
	// cluster-b's own gateway, IPv4 part.
	expect(t, server, lab.GatewayHost("kuard", lab.ClusterB), dns.TypeA, dns.RcodeSuccess, ipv4(theLab.Gateways[lab.ClusterB].IPs)...)
}

// expectAnswerName checks that a deeper wildcard name answers with records
// that carry the name that was asked.
func expectAnswerName(t *testing.T, server, name string) *dns.Msg {
	t.Helper()
	expect(t, server, name, dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)
	r, err := lab.Query(server, name, dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range r.Answer {
		if !strings.EqualFold(rr.Header().Name, dns.Fqdn(name)) {
			t.Errorf("answer record %q does not carry the asked name %s", rr.String(), name)
		}
	}
	return r
}

func ipv4(ips []string) []string {
	var out []string
	for _, ip := range ips {
		if !strings.Contains(ip, ":") {
			out = append(out, ip)
		}
	}
	return out
}

func ipv6(ips []string) []string {
	var out []string
	for _, ip := range ips {
		if strings.Contains(ip, ":") {
			out = append(out, ip)
		}
	}
	return out
}

// testGatewayIPChange moves cluster-a's load balancer to a new address and
// measures how long cluster-b's DNS takes to answer it.
func testGatewayIPChange(t *testing.T) {
	server := clusterDNS(t)
	b := theLab.DNS[lab.ClusterB]
	kuardA := lab.GatewayHost("kuard", lab.ClusterA)
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)

	gw := lab.Gateway{IPs: []string{newGatewayA}}
	changed := time.Now()
	if err := lab.SetGateway(ctxFor(t), theLab.Workload(lab.ClusterA), gw); err != nil {
		t.Fatal(err)
	}
	theLab.Gateways[lab.ClusterA] = gw
	// The data path: controller -> EndpointSlice in cluster-b -> serve -> etcd.
	if _, err := lab.WaitEtcdContains(ctxFor(t), b.EtcdClientURL, lab.GatewayKeyPrefix(lab.ClusterA), newGatewayA, answerTimeout); err != nil {
		t.Fatal(err)
	}
	inEtcd := time.Since(changed)
	// Our DNS server, asked directly (its cache may hold the old answer).
	expect(t, b.XCCDNSAddr, kuardA, dns.TypeA, dns.RcodeSuccess, newGatewayA)
	ours := time.Since(changed)
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, newGatewayA)
	t.Logf("load-balancer IP change: in cluster-b's etcd after %s, answered by our DNS after %s, by cluster-b's cluster DNS after %s (from the Service status update)",
		inEtcd.Round(10*time.Millisecond), ours.Round(10*time.Millisecond), time.Since(changed).Round(10*time.Millisecond))
}

// testIPv6Gateway: cluster-b's dual-stack gateway answers AAAA; the
// IPv4-only gateway of cluster-a answers AAAA with no data, not NXDOMAIN.
func testIPv6Gateway(t *testing.T) {
	server := clusterDNS(t)
	expect(t, server, lab.GatewayHost("kuard", lab.ClusterB), dns.TypeAAAA, dns.RcodeSuccess, ipv6(theLab.Gateways[lab.ClusterB].IPs)...)
	expect(t, server, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeAAAA, dns.RcodeSuccess)
}

// testReverseLookup: `dig -x` from cluster-b. Addresses inside the
// operator's reverse CIDRs answer a PTR to the gateway name that has them.
// One outside is never answered by xcc-dns: our server sends it upstream
// (which knows no such name), and cluster DNS names no xcc.test name for it.
// (Cluster DNS's kubernetes plugin does answer it, from the gateway slice's
// kubernetes.io/service-name label: 198-51-100-20.<gatewaydns>.xcc-dns.svc.)
func testReverseLookup(t *testing.T) {
	server := clusterDNS(t)
	ours := theLab.DNS[lab.ClusterB].XCCDNSAddr
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		for _, ip := range theLab.Gateways[c].IPs {
			name, err := dns.ReverseAddr(ip)
			if err != nil {
				t.Fatal(err)
			}
			if inReverseCIDRs(t, ip) {
				expect(t, server, name, dns.TypePTR, dns.RcodeSuccess, "gateway."+c+"."+lab.ClusterNamespace+".clusters."+lab.Zone+".")
				continue
			}
			expect(t, ours, name, dns.TypePTR, dns.RcodeNameError)
			r, err := lab.Query(server, name, dns.TypePTR)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range lab.Values(r, dns.TypePTR) {
				if strings.HasSuffix(v, "."+lab.Zone+".") {
					t.Errorf("PTR %s outside the reverse CIDRs answered %s", name, v)
				}
			}
		}
	}
}

func inReverseCIDRs(t *testing.T, ip string) bool {
	t.Helper()
	addr := netip.MustParseAddr(ip)
	for c := range strings.SplitSeq(lab.ReverseCIDRs, ",") {
		if netip.MustParsePrefix(c).Contains(addr) {
			return true
		}
	}
	return false
}

// testAPIName: api.<cluster> answers the Cluster's controlPlaneEndpoint.host
// (a hostname in the lab, so a CNAME).
func testAPIName(t *testing.T) {
	server := clusterDNS(t)
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		expectCNAME(t, server, lab.APIHost(c), dns.Fqdn(theLab.ControlPlaneHostOf(c)))
	}
}

// testThirdClusterAndHostnameGateway: cluster-c, not labelled, has no
// names; labelled later, its hostname gateway answers a CNAME (and the
// target's address from upstream); unlabelled again, its names go.
func testThirdClusterAndHostnameGateway(t *testing.T) {
	server := clusterDNS(t)
	ctx := ctxFor(t)
	kuardC := lab.GatewayHost("kuard", lab.ClusterC)
	expect(t, server, kuardC, dns.TypeA, dns.RcodeNameError)

	if err := lab.LabelCluster(ctx, theLab.Management, lab.ClusterC, lab.SelectorLabel, lab.SelectorValue); err != nil {
		t.Fatal(err)
	}
	target := dns.Fqdn(theLab.Gateways[lab.ClusterC].Hostname)
	r := expectCNAME(t, server, kuardC, target)
	if got := lab.Values(r, dns.TypeA); len(got) != 1 || got[0] != upstreamTargetAddr {
		t.Errorf("A %s: CNAME target's addresses %v, want [%s] (followed through the upstream)", kuardC, got, upstreamTargetAddr)
	}

	// kubectl label cluster cluster-c hasContour-
	if err := lab.LabelCluster(ctx, theLab.Management, lab.ClusterC, lab.SelectorLabel, ""); err != nil {
		t.Fatal(err)
	}
	expect(t, server, kuardC, dns.TypeA, dns.RcodeNameError)
	expect(t, server, lab.APIHost(lab.ClusterC), dns.TypeA, dns.RcodeNameError)
	// The others stay.
	expect(t, server, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)
}

// testGatewayDNSDeleted: deleting the GatewayDNS removes its names; applying
// it again brings them back.
func testGatewayDNSDeleted(t *testing.T) {
	server := clusterDNS(t)
	ctx := ctxFor(t)
	kuardA := lab.GatewayHost("kuard", lab.ClusterA)
	if err := lab.DeleteGatewayDNS(ctx, theLab.Management, lab.ClusterNamespace, lab.GatewayDNSName); err != nil {
		t.Fatal(err)
	}
	expect(t, server, kuardA, dns.TypeA, dns.RcodeNameError)
	expect(t, server, lab.GatewayHost("kuard", lab.ClusterB), dns.TypeA, dns.RcodeNameError)

	if _, err := lab.ApplyYAML(ctx, theLab.Management, lab.GatewayDNSGVR, lab.GatewayDNSYAML); err != nil {
		t.Fatal(err)
	}
	expect(t, server, kuardA, dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)
}

// testPatchCorefile: kube-system/coredns was patched by `xcc-syncer
// patch-corefile`, keeps the walkthrough's Corefile, and patching again
// changes nothing; --remove gives the original back.
func testPatchCorefile(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	c := theLab.DNS[lab.ClusterC]
	if !c.PatchedByBinary {
		t.Fatalf("kube-system/coredns was not patched by xcc-syncer patch-corefile: %v", theLab.Skipped)
	}
	w := c.Cluster
	patched, err := lab.ClusterCorefile(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(lab.ClusterDNSCorefile, "\n") {
		if !strings.Contains(patched, line) {
			t.Errorf("patched Corefile lost the line %q:\n%s", line, patched)
		}
	}
	if !strings.Contains(patched, c.XCCDNSAddr) || !strings.Contains(patched, lab.Zone) {
		t.Errorf("patched Corefile does not forward %s to %s:\n%s", lab.Zone, c.XCCDNSAddr, patched)
	}
	patch := func(extra ...string) string {
		t.Helper()
		args := append([]string{"patch-corefile", "--kubeconfig", w.Kubeconfig, "--forward-to", c.XCCDNSAddr, "--reverse-cidrs", lab.ReverseCIDRs}, extra...)
		out, err := exec.CommandContext(ctx, theLab.Bin("xcc-syncer"), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("xcc-syncer %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		got, err := lab.ClusterCorefile(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if again := patch(); again != patched {
		t.Errorf("patching again changed the Corefile:\n%s\nwas:\n%s", again, patched)
	}
	if removed := patch("--remove"); strings.TrimSpace(removed) != strings.TrimSpace(lab.ClusterDNSCorefile) {
		t.Errorf("--remove left:\n%s\nwant the original:\n%s", removed, lab.ClusterDNSCorefile)
	}
	if again := patch(); again != patched {
		t.Errorf("patching after --remove gave:\n%s\nwant:\n%s", again, patched)
	}
}

func summary(r *dns.Msg) string {
	if r == nil {
		return "no answer"
	}
	return lab.Summary(r)
}
