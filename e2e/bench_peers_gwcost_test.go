package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// apiServerDown stops cluster-a's API server for gwDownHold and asks both
// servers for g-00 every gwDownPoll: how many asks each answered with its
// last address among the answer's; then starts the API server again.
func (g *gwRun) apiServerDown() {
	t, ctx := g.p.t, g.p.ctx
	a := theLab.Workload(lab.ClusterA)
	want := gwAddress(0, gwRounds)
	queries := [][2]string{{g.xcc, gwXCCHost(0)}, {g.x.DNSAddr, gwEDNSHost(0)}}
	a.Stop()
	t.Logf("gateway names: cluster-a's API server stopped for %s", gwDownHold)
	began := time.Now()
	var right [2]int
	var wrong [2]string
	asks := 0
	for time.Since(began) < gwDownHold {
		asks++
		for k, q := range queries {
			got := answerOf(q[0], q[1])
			if strings.HasPrefix(got, "NOERROR ") && strings.Contains(got+",", " "+want+",") {
				right[k]++
			} else if wrong[k] == "" {
				wrong[k] = fmt.Sprintf("; first other answer after %s: %s", time.Since(began).Round(time.Second), got)
			}
		}
		time.Sleep(gwDownPoll)
	}
	reason := "no status entry"
	if got, err := lab.GatewayDNSNames(ctx, theLab.Management, lab.ClusterNamespace, lab.GatewayDNSName); err == nil {
		if s, ok := got[gwXCCHost(0)]; ok {
			reason = s.Reason
		}
	}
	if err := theLab.RestartCluster(ctx, a); err != nil {
		t.Fatal(err)
	}
	cell := func(k int) string { return fmt.Sprintf("%d / %d asks%s", right[k], asks, wrong[k]) }
	g.row(fmt.Sprintf("cluster-a's API server down %s: g-00 answered with its last address", gwDownHold),
		cell(0)+fmt.Sprintf(" (status of the name at the end: %s)", reason), cell(1))
}

// scale measures what publishing costs at gwScale clusters: for xcc-dns
// the controller's CPU seconds and resident memory before and after
// adding Clusters (selected by the GatewayDNS, names on, their
// kubeconfigs pointing at the three workload API servers in turn) to
// gwScale selected; for ExternalDNS the same with instances added to
// gwScale (one per cluster, at the three API servers in turn). Each is
// read gwScaleWindow after its last addition, one after the other.
func (g *gwRun) scale() {
	t := g.p.t
	ctlCPU, ctlRSS, added := g.scaleXCC()
	xCPU, xRSS, n := g.scaleExternalDNS()
	g.row(fmt.Sprintf("publishers at %d clusters: CPU from the first added to %s after the last, resident memory", gwScale, gwScaleWindow),
		fmt.Sprintf("1 controller: %.1f s, %.0f MiB (+%.2f MiB a cluster for %d added)", ctlCPU[1].Seconds()-ctlCPU[0].Seconds(), mib(ctlRSS[1]),
			(mib(ctlRSS[1])-mib(ctlRSS[0]))/float64(added), added),
		fmt.Sprintf("%d instances: %.1f s, %.0f MiB (%.1f MiB each)", n, xCPU.Seconds(), mib(xRSS), mib(xRSS)/float64(n)))
	perXCC := (mib(ctlRSS[1]) - mib(ctlRSS[0])) / float64(added)
	g.row(fmt.Sprintf("... at %s clusters, **computed** from the row above (not run)", thousands(gwComputed)),
		fmt.Sprintf("%.0f MiB (%.0f + %.2f a cluster)", mib(ctlRSS[0])+perXCC*float64(gwComputed-gwSelected), mib(ctlRSS[0]), perXCC),
		fmt.Sprintf("%s MiB, %.0f s CPU in the same window (x%d)", thousands(mib(xRSS)/float64(n)*gwComputed), xCPU.Seconds()/float64(n)*gwComputed, gwComputed))
	t.Logf("gateway names: scale measured")
}

// scaleXCC adds Clusters until gwScale are selected and returns the
// controller's CPU and resident memory before and after, and how many
// were added.
func (g *gwRun) scaleXCC() ([2]time.Duration, [2]int64, int) {
	t, ctx := g.p.t, g.p.ctx
	ctl := theLab.Controller.Pid()
	var cpu [2]time.Duration
	var rss [2]int64
	read := func(k int) {
		var err error
		if cpu[k], err = procCPU(ctl); err != nil {
			t.Fatal(err)
		}
		if rss[k], err = procRSS(ctl); err != nil {
			t.Fatal(err)
		}
	}
	mgmt, err := newBenchClients(theLab.Management)
	if err != nil {
		t.Fatal(err)
	}
	read(0)
	n := gwScale - gwSelected
	for i := range n {
		g.added = append(g.added, fmt.Sprintf("%s%03d", gwScalePrefix, i))
	}
	err = inParallel(n, func(i int) error {
		return mgmt.createCluster(ctx, benchCluster{
			namespace: lab.ClusterNamespace, name: g.added[i],
			labels: map[string]any{lab.SelectorLabel: lab.SelectorValue},
			w:      theLab.Workloads[i%len(theLab.Workloads)],
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway names: %d Clusters added, waiting %s", n, gwScaleWindow)
	time.Sleep(gwScaleWindow)
	read(1)
	return cpu, rss, n
}

// scaleExternalDNS starts instances until gwScale run (fewer if the first
// three's memory says gwScale would pass gwScaleMemory) and returns their
// CPU since the first added started, their resident memory, and how many
// ran.
func (g *gwRun) scaleExternalDNS() (time.Duration, int64, int) {
	t, ctx := g.p.t, g.p.ctx
	cpu0, rss0 := g.publishersCost()
	have := len(g.x.Publishers())
	n := gwScale
	if per := rss0 / int64(have); per*int64(n) > gwScaleMemory {
		n = int(gwScaleMemory / per)
		g.notes = append(g.notes, fmt.Sprintf("ExternalDNS instances capped at %d: %.0f MiB each would pass %d GiB at %d", n, mib(per), gwScaleMemory>>30, gwScale))
	}
	began := time.Now()
	err := inParallelOn(4, n-have, func(i int) error {
		if _, err := g.x.Publish(ctx, theLab.Workloads[i%len(theLab.Workloads)], fmt.Sprintf("scale-%03d", i)); err != nil {
			return err
		}
		if (i+1)%20 == 0 {
			t.Logf("gateway names: %d more ExternalDNS instances started", i+1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway names: %d ExternalDNS instances running (%d started in %s), waiting %s", n, n-have, time.Since(began).Round(time.Second), gwScaleWindow)
	time.Sleep(gwScaleWindow)
	cpu1, rss1 := g.publishersCost()
	return cpu1 - cpu0, rss1, n
}

// publishersCost is the CPU used so far and the resident memory of every
// running ExternalDNS instance.
func (g *gwRun) publishersCost() (time.Duration, int64) {
	var cpu time.Duration
	var rss int64
	for owner, p := range g.x.Publishers() {
		c, err := procCPU(p.Pid())
		if err != nil {
			g.p.t.Fatalf("ExternalDNS %s: %v", owner, err)
		}
		m, err := procRSS(p.Pid())
		if err != nil {
			g.p.t.Fatalf("ExternalDNS %s: %v", owner, err)
		}
		cpu, rss = cpu+c, rss+m
	}
	return cpu, rss
}

// cleanup stops ExternalDNS and removes the Clusters, Services and names
// the half added.
func (g *gwRun) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t := g.p.t
	if g.x != nil {
		g.x.Stop()
	}
	if mgmt, err := newBenchClients(theLab.Management); err == nil {
		if err := inParallel(len(g.added), func(i int) error { return mgmt.deleteCluster(ctx, lab.ClusterNamespace, g.added[i]) }); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		if err := lab.DeleteNamespace(ctx, theLab.Workload(c), gwNamespace); err != nil {
			t.Error(err)
		}
	}
	if err := setNames(ctx, false); err != nil {
		t.Error(err)
	}
}

// table is the half's report.
func (g *gwRun) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "peers, gateway names: the same LoadBalancer Services published by xcc-dns (spec.names) and by ExternalDNS %s (coredns provider, an instance per workload cluster into one etcd, served by stock CoreDNS %s `etcd`)\n\n",
		lab.ExternalDNSVersion, lab.StockCoreDNSVersion)
	fmt.Fprintf(&b, "| | xcc-dns (controller, serve, our CoreDNS without cache) | ExternalDNS %s (`--events --min-event-sync-interval=%s`; stock CoreDNS `etcd`, no cache) |\n|:--|:--|:--|\n",
		lab.ExternalDNSVersion, lab.ExternalDNSEventSync)
	for _, row := range g.rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
	b.WriteString("\n")
	for _, n := range g.notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	return b.String()
}
