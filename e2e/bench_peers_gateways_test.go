package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Settings of the gateway names half of testBenchPeers.
const (
	// gwNamespace holds the annotated Services in cluster-a (the timed
	// ones) and cluster-b (the hostile ones).
	gwNamespace = "bench-edns"
	// gwServices are timed gwRounds times each, one change at a time.
	gwServices = 4
	gwRounds   = 5
	// gwChangeTimeout bounds one change's wait for both answers.
	gwChangeTimeout = 60 * time.Second
	// gwHostileWait bounds the wait for the hostile annotations' outcome
	// (ExternalDNS syncs 5 s after an event).
	gwHostileWait = 30 * time.Second
	// gwDownHold is how long cluster-a's API server stays down, asked
	// every gwDownPoll.
	gwDownHold = 60 * time.Second
	gwDownPoll = time.Second
	// gwScale publishers (ExternalDNS instances; Clusters selected by the
	// GatewayDNS), each measured gwScaleWindow after the last started.
	gwScale       = 100
	gwScaleWindow = 90 * time.Second
	// gwScaleMemory caps what the ExternalDNS instances may take, from the
	// first three's resident memory.
	gwScaleMemory = 8 << 30
	// gwScalePrefix names the Clusters added for the scale row.
	gwScalePrefix = "edns-scale-"
	// gwSelected are the Clusters the walkthrough's GatewayDNS selects
	// (cluster-a and cluster-b).
	gwSelected = 2
	// gwComputed is the count the per-publisher cost is multiplied to.
	gwComputed = 1000
)

// gwRun is the state of the gateway names half: xcc-dns's names
// (spec.names of the walkthrough GatewayDNS, the
// connectivity.tanzu.vmware.com/fqdn annotation) beside ExternalDNS
// (external-dns.alpha.kubernetes.io/hostname) on the same Services.
type gwRun struct {
	p     *peersRun
	x     *lab.ExternalDNS
	xcc   string // cluster-b's CoreDNS of ours without cache
	added []string
	rows  [][3]string
	notes []string
}

func gwLabel(i int) string          { return fmt.Sprintf("g-%02d", i) }
func gwXCCHost(i int) string        { return lab.NamesHost(gwLabel(i), lab.ClusterNamespace) }
func gwEDNSHost(i int) string       { return gwLabel(i) + "." + lab.ExternalDNSZone }
func gwAddress(i, round int) string { return fmt.Sprintf("198.18.%d.%d", 200+i, round+1) }

func (g *gwRun) row(what, xcc, edns string) { g.rows = append(g.rows, [3]string{what, xcc, edns}) }

// gateways runs the gateway names half and returns its table; without
// the ExternalDNS binary (make bench-peers builds it; bench-lab does not)
// it says so and runs nothing.
func (r *peersRun) gateways() string {
	t := r.t
	if _, err := os.Stat(theLab.Bin("external-dns-" + lab.ExternalDNSVersion)); err != nil {
		return fmt.Sprintf("peers, gateway names: not run, ExternalDNS %s is not built (make bench-peers builds it): %v\n", lab.ExternalDNSVersion, err)
	}
	g := &gwRun{p: r, xcc: r.xccPlain.Addr}
	t.Cleanup(g.cleanup)
	g.setup()
	g.latency()
	g.hostile()
	g.apiServerDown()
	g.scale()
	return g.table()
}

// setup turns names on for the walkthrough GatewayDNS, starts ExternalDNS
// (its etcd and CoreDNS, one instance per workload cluster) and creates
// in cluster-a the annotated Services both publish, then waits until
// both answer every one.
func (g *gwRun) setup() {
	t, ctx := g.p.t, g.p.ctx
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatal(err)
	}
	if err := setNames(ctx, true); err != nil {
		t.Fatal(err)
	}
	var err error
	if g.x, err = theLab.StartExternalDNS(ctx); err != nil {
		t.Fatal(err)
	}
	for _, w := range theLab.Workloads {
		if _, err := g.x.Publish(ctx, w, w.Name); err != nil {
			t.Fatal(err)
		}
	}
	a := theLab.Workload(lab.ClusterA)
	for i := range gwServices {
		if err := createDualService(ctx, a, gwLabel(i), gwLabel(i), gwEDNSHost(i), gwAddress(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for i := range gwServices {
		want := func(got []string) (bool, error) { return slices.Equal(got, []string{gwAddress(i, 0)}), nil }
		for _, q := range [][2]string{{g.xcc, gwXCCHost(i)}, {g.x.DNSAddr, gwEDNSHost(i)}} {
			if _, _, err := pollA(ctx, q[0], q[1], 100*time.Millisecond, deadline, want); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("gateway names: %d Services of cluster-a answered by both", gwServices)
}

// createDualService creates the LoadBalancer Service name in gwNamespace
// of w (address ip, a ready endpoint) annotated for both: xcc-dns's fqdn
// and ExternalDNS's hostname.
func createDualService(ctx context.Context, w *lab.Cluster, name, fqdn, hostname, ip string) error {
	if err := lab.CreateClaimingService(ctx, w, gwNamespace, name, fqdn, ip); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, lab.ExternalDNSHostnameAnnotation, hostname)
	if _, err := w.Client.CoreV1().Services(gwNamespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotate Service %s/%s on %s: %w", gwNamespace, name, w.Name, err)
	}
	return nil
}

// setGWAddress sets a Service's load-balancer address in one write, as a
// load balancer does.
func setGWAddress(ctx context.Context, w *lab.Cluster, name, ip string) error {
	patch := fmt.Sprintf(`{"status":{"loadBalancer":{"ingress":[{"ip":%q,"ipMode":"VIP"}]}}}`, ip)
	if _, err := w.Client.CoreV1().Services(gwNamespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set address of %s/%s on %s to %s: %w", gwNamespace, name, w.Name, ip, err)
	}
	return nil
}

// latency changes each Service's address gwRounds times, one change at a
// time, and asks both uncached servers every peersPoll from just before
// the write until each answers the new address alone; an answer that is
// neither the old address nor the new one (no address while a publisher
// deletes before it adds) is counted, not an error.
func (g *gwRun) latency() {
	t, ctx := g.p.t, g.p.ctx
	a := theLab.Workload(lab.ClusterA)
	var took [2][]time.Duration
	var gaps [2]int
	for round := 1; round <= gwRounds; round++ {
		for i := range gwServices {
			c, err := g.change(ctx, a, i, round)
			if err != nil {
				t.Fatal(err)
			}
			for k := range 2 {
				took[k] = append(took[k], c.took[k])
				gaps[k] += btoi(c.gap[k])
			}
		}
		t.Logf("gateway names: round %d of %d timed", round, gwRounds)
	}
	cell := func(d []time.Duration) string {
		return fmt.Sprintf("%s / %s (max %s)", fmtDuration(percentile(d, 50)), fmtDuration(percentile(d, 99)), fmtDuration(percentile(d, 100)))
	}
	n := len(took[0])
	g.row(fmt.Sprintf("load-balancer address changed in cluster-a to answer in cluster-b's DNS, no cache, p50 / p99 of %d", n), cell(took[0]), cell(took[1]))
	g.row(fmt.Sprintf("... changes during which the name answered no address (asked every %s)", peersPoll),
		fmt.Sprintf("%d of %d", gaps[0], n), fmt.Sprintf("%d of %d", gaps[1], n))
}

// gwChange is what one change showed of each publisher: how long until
// the new address alone, and whether anything but the old or the new
// address was answered on the way.
type gwChange struct {
	took [2]time.Duration
	gap  [2]bool
}

// change makes one change and times both answers.
func (g *gwRun) change(ctx context.Context, a *lab.Cluster, i, round int) (gwChange, error) {
	var c gwChange
	var errs [2]error
	addr, old := gwAddress(i, round), gwAddress(i, round-1)
	began := time.Now()
	if err := setGWAddress(ctx, a, gwLabel(i), addr); err != nil {
		return c, err
	}
	deadline := began.Add(gwChangeTimeout)
	var wg sync.WaitGroup
	for k, q := range [][2]string{{g.xcc, gwXCCHost(i)}, {g.x.DNSAddr, gwEDNSHost(i)}} {
		wg.Go(func() {
			_, at, err := pollA(ctx, q[0], q[1], peersPoll, deadline, func(got []string) (bool, error) {
				if !slices.Equal(got, []string{addr}) && !slices.Equal(got, []string{old}) {
					c.gap[k] = true
				}
				return slices.Equal(got, []string{addr}), nil
			})
			c.took[k], errs[k] = at.Sub(began), err
		})
	}
	wg.Wait()
	if errs[0] != nil {
		return c, fmt.Errorf("xcc-dns: %w", errs[0])
	}
	if errs[1] != nil {
		return c, fmt.Errorf("ExternalDNS: %w", errs[1])
	}
	return c, nil
}

// gwHostile is one hostile annotation: what each publisher is asked to
// publish from a Service of cluster-b.
type gwHostile struct {
	what, service, fqdn, hostname string
}

func gwHostiles() []gwHostile {
	other := func(label string) string { return lab.NamesHost(label, "other-team") }
	return []gwHostile{
		{"a name another publisher holds (xcc-dns: another namespace's)", "h-taken", other(gwLabel(0)), gwEDNSHost(0)},
		{"a name nobody publishes yet, of another tenant", "h-free", other("shop"), "shop." + lab.ExternalDNSZone},
		{"the zone apex", "h-apex", lab.Zone, lab.ExternalDNSZone},
	}
}

// hostile creates in cluster-b (selected by the GatewayDNS, with an
// ExternalDNS instance of its own) one Service per hostile annotation,
// waits for ExternalDNS to have synced (the free name answered, or
// gwHostileWait) and for xcc-dns's status of each name, then records
// what each answers for the name and for g-00.
func (g *gwRun) hostile() {
	t, ctx := g.p.t, g.p.ctx
	b := theLab.Workload(lab.ClusterB)
	hs := gwHostiles()
	for k, h := range hs {
		if err := createDualService(ctx, b, h.service, h.fqdn, h.hostname, gwHostileAddress(k)); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	_, _, _ = pollA(ctx, g.x.DNSAddr, hs[1].hostname, 100*time.Millisecond, began.Add(gwHostileWait), func(got []string) (bool, error) {
		return len(got) > 0, nil
	})
	reasons := g.waitReasons(hs, began.Add(gwHostileWait))
	for k, h := range hs {
		g.row("hostile annotation in cluster-b: "+h.what,
			fmt.Sprintf("`%s`: %s; answers %s", h.fqdn, reasons[h.fqdn], hostileAnswer(g.xcc, h.fqdn, gwHostileAddress(k))),
			fmt.Sprintf("`%s`: answers %s", h.hostname, hostileAnswer(g.x.DNSAddr, h.hostname, gwHostileAddress(k))))
	}
	g.row("... and cluster-a's g-00 (its address "+gwAddress(0, gwRounds)+")",
		hostileAnswer(g.xcc, gwXCCHost(0), gwHostileAddress(0)), hostileAnswer(g.x.DNSAddr, gwEDNSHost(0), gwHostileAddress(0)))
	t.Logf("gateway names: hostile annotations judged")
}

// gwHostileAddress is the address of hostile Service k.
func gwHostileAddress(k int) string { return fmt.Sprintf("198.18.250.%d", k+1) }

// hostileAnswer is what server answers for name (A): the rcode, the
// addresses (their count when more than three), and whether the hostile
// address is among them.
func hostileAnswer(server, name, hostile string) string {
	m, err := lab.Query(server, name, dns.TypeA)
	if err != nil {
		return "no answer: " + err.Error()
	}
	v := lab.Values(m, dns.TypeA)
	out := dns.RcodeToString[m.Rcode]
	switch {
	case len(v) > 3:
		out += fmt.Sprintf(" with %d addresses", len(v))
	case len(v) > 0:
		out += " " + strings.Join(v, ", ")
	}
	if slices.Contains(v, hostile) {
		out += ", **the hostile " + hostile + " among them**"
	}
	return out
}

// waitReasons waits until the walkthrough GatewayDNS's status.names has
// an entry for every hostile fqdn, or deadline, and returns their
// reasons.
func (g *gwRun) waitReasons(hs []gwHostile, deadline time.Time) map[string]string {
	out := map[string]string{}
	for {
		got, err := lab.GatewayDNSNames(g.p.ctx, theLab.Management, lab.ClusterNamespace, lab.GatewayDNSName)
		all := err == nil
		for _, h := range hs {
			if s, ok := got[h.fqdn]; ok {
				out[h.fqdn] = "status " + s.Reason
			} else {
				out[h.fqdn], all = "no status entry", false
			}
		}
		if all || time.Now().After(deadline) {
			return out
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// answerOf is the rcode and A records server answers for name.
func answerOf(server, name string) string {
	m, err := lab.Query(server, name, dns.TypeA)
	if err != nil {
		return "no answer: " + err.Error()
	}
	if v := lab.Values(m, dns.TypeA); len(v) > 0 {
		return fmt.Sprintf("%s %s", dns.RcodeToString[m.Rcode], strings.Join(v, ", "))
	}
	return dns.RcodeToString[m.Rcode]
}
