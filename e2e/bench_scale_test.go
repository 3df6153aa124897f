package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// scaleSizesEnv overrides defaultScaleSizes, e.g. "100,1000,10000".
	scaleSizesEnv     = "XCC_BENCH_SCALE"
	defaultScaleSizes = "100,1000,10000"
	// scaleTimeout bounds the wait for one size to converge.
	scaleTimeout = 40 * time.Minute
	// scalePrefix names the Clusters the benchmark adds.
	scalePrefix = "scale-"
	// scaleStatusTimeout bounds the wait, once the records converged,
	// for the GatewayDNS's status to count every selected Cluster.
	scaleStatusTimeout = 2 * time.Minute
	// scaleProgressEvery is how often the wait logs how far it got.
	scaleProgressEvery = 30 * time.Second
)

// scaleFigures is one row of the scale table.
type scaleFigures struct {
	clusters               int
	createdIn, convergedIn time.Duration
	syncs, slicesWritten   float64       // controller metrics since the baseline
	ctlCPU, serveCPU       time.Duration // since the baseline
	ctlPeak, servePeak     int64         // VmHWM, bytes
	ctlHeapPeak            int64         // the largest in-use heap sampled while the step converged
	slices                 int           // the controller's slices in cluster-b
	keys                   int64         // under /skydns/ in cluster-b's serve etcd
	dbSize, dbInUse        int64         // that etcd's database file, and the part in use
}

// testBenchScale adds Cluster API Clusters to the walkthrough's namespace,
// all selected by its GatewayDNS, up to each size in turn (their kubeconfig
// Secrets point at the lab's three workload API servers in turn, so every
// one is also a target the controller writes slices to). For each size it
// measures how long until cluster-b's serve has, in its etcd, the gateway
// and api records of every added Cluster ("converged": the end of the data
// path that does not depend on DNS caches), and what that cost: controller
// and serve CPU seconds and peak memory, the controller's syncs, and
// serve's etcd (keys, database size).
//
// It leaves its Clusters behind: run it last.
func testBenchScale(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	sizes, err := scaleSizes()
	if err != nil {
		t.Fatal(err)
	}
	mgmt, err := newBenchClients(theLab.Management)
	if err != nil {
		t.Fatal(err)
	}
	bClients, err := newBenchClients(b.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	cli := serveEtcdClient(t, b)
	metrics := "http://" + theLab.ControllerHTTP + "/metrics"

	base, err := measureScale(ctx, b, bClients, cli, metrics, scaleFigures{})
	if err != nil {
		t.Fatal(err)
	}
	rows := []scaleFigures{base}
	created := 0
	for _, n := range sizes {
		start := time.Now()
		heap := sampleHeap(ctx)
		err := inParallel(n-created, func(i int) error {
			i += created
			return mgmt.createCluster(ctx, benchCluster{
				namespace: lab.ClusterNamespace,
				name:      fmt.Sprintf("%s%05d", scalePrefix, i),
				labels:    map[string]any{lab.SelectorLabel: lab.SelectorValue},
				w:         theLab.Workloads[i%len(theLab.Workloads)],
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		created = n
		createdIn := time.Since(start)
		t.Logf("%d Clusters and kubeconfig Secrets created in %s", n, createdIn.Round(100*time.Millisecond))
		have, err := waitScaleRecords(ctx, t, cli, n, start.Add(scaleTimeout))
		heapPeak := heap.end(t, fmt.Sprintf("scale-%d-heap-peak.pprof", n))
		if err != nil {
			report(t, scaleTable(rows))
			t.Fatalf("%d clusters: %d of them complete in cluster-b's etcd after %s: %v", n, have, time.Since(start).Round(time.Second), err)
		}
		f, err := measureScale(ctx, b, bClients, cli, metrics, base)
		if err != nil {
			t.Fatal(err)
		}
		f.clusters, f.createdIn, f.convergedIn, f.ctlHeapPeak = n, createdIn, time.Since(start), heapPeak
		t.Logf("%d clusters converged in %s", n, f.convergedIn.Round(100*time.Millisecond))
		rows = append(rows, f)
		if err := waitScaleStatus(ctx, mgmt, n, time.Now().Add(scaleStatusTimeout)); err != nil {
			report(t, scaleTable(rows))
			t.Fatalf("%d clusters: %v", n, err)
		}
	}
	report(t, scaleTable(rows))
}

// measureScale takes the figures of a row; counters are relative to base.
func measureScale(ctx context.Context, b *lab.WorkloadDNS, bClients benchClients, cli *clientv3.Client, metrics string, base scaleFigures) (scaleFigures, error) {
	var f scaleFigures
	var err error
	ctlPid, servePid := theLab.Controller.Pid(), b.Serve.Pid()
	if f.ctlCPU, err = procCPU(ctlPid); err != nil {
		return f, err
	}
	if f.serveCPU, err = procCPU(servePid); err != nil {
		return f, err
	}
	if f.ctlPeak, err = procPeakRSS(ctlPid); err != nil {
		return f, err
	}
	if f.servePeak, err = procPeakRSS(servePid); err != nil {
		return f, err
	}
	if f.syncs, err = metricValue(ctx, metrics, "xcc_controller_syncs_total"); err != nil {
		return f, err
	}
	if f.slicesWritten, err = metricValue(ctx, metrics, "xcc_controller_endpointslices_written_total"); err != nil {
		return f, err
	}
	f.ctlCPU -= base.ctlCPU
	f.serveCPU -= base.serveCPU
	f.syncs -= base.syncs
	f.slicesWritten -= base.slicesWritten

	slices, err := bClients.kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "endpointslice.kubernetes.io/managed-by=xcc-dns-controller"})
	if err != nil {
		return f, fmt.Errorf("list the controller's EndpointSlices in %s: %w", lab.ClusterB, err)
	}
	f.slices = len(slices.Items)
	keys, err := cli.Get(ctx, "/skydns/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return f, fmt.Errorf("count keys in cluster-b's etcd: %w", err)
	}
	f.keys = keys.Count
	st, err := cli.Status(ctx, b.EtcdClientURL)
	if err != nil {
		return f, fmt.Errorf("status of cluster-b's etcd: %w", err)
	}
	f.dbSize, f.dbInUse = st.DbSize, st.DbSizeInUse
	return f, nil
}

// scaleTable is the scale benchmark's report: one row per size, then how
// each figure grew from one size to the next.
func scaleTable(rows []scaleFigures) string {
	var tb strings.Builder
	fmt.Fprintf(&tb, "scale: Clusters selected by one GatewayDNS, kubeconfigs pointing at the %d real workload API servers in turn\n", len(theLab.Workloads))
	fmt.Fprintf(&tb, "%8s %9s %10s %6s %7s | %8s %8s %8s | %8s %8s | %7s %7s %10s\n",
		"clusters", "created", "converged", "syncs", "written",
		"ctl CPU", "ctl MiB", "ctl heap", "srv CPU", "srv MiB", "slices", "keys", "etcd MiB")
	for _, r := range rows {
		// The first row is the zero point of the counters: only its
		// levels are shown.
		created, converged, syncs, written, ctlCPU, serveCPU, heap := "-", "-", "-", "-", "-", "-", "-"
		if r.clusters > 0 {
			heap = fmt.Sprintf("%.0f", mib(r.ctlHeapPeak))
			created, converged = r.createdIn.Round(100*time.Millisecond).String(), r.convergedIn.Round(100*time.Millisecond).String()
			syncs, written = fmt.Sprintf("%.0f", r.syncs), fmt.Sprintf("%.0f", r.slicesWritten)
			ctlCPU, serveCPU = fmt.Sprintf("%.1fs", r.ctlCPU.Seconds()), fmt.Sprintf("%.1fs", r.serveCPU.Seconds())
		}
		fmt.Fprintf(&tb, "%8d %9s %10s %6s %7s | %8s %8.0f %8s | %8s %8.0f | %7d %7d %4.1f/%4.1f\n",
			r.clusters, created, converged, syncs, written,
			ctlCPU, mib(r.ctlPeak), heap, serveCPU, mib(r.servePeak),
			r.slices, r.keys, mib(r.dbSize), mib(r.dbInUse))
	}
	fmt.Fprintf(&tb, "(converged: from the first create of the step until cluster-b's serve etcd has the gateway and api records of every added Cluster;\n")
	fmt.Fprintf(&tb, " syncs, written (EndpointSlices, all clusters) and CPU: controller metrics and user+system CPU since the first row; MiB: peak resident\n")
	fmt.Fprintf(&tb, " (VmHWM) since the process started; ctl heap: the controller's largest heap in use, sampled every %s while the step converged;\n", heapSampleEvery)
	fmt.Fprintf(&tb, " slices: the controller's EndpointSlices in cluster-b; etcd MiB: database size/in use)\n")
	for i := 2; i < len(rows); i++ {
		p, r := rows[i-1], rows[i]
		ratio := func(a, b float64) string {
			if a <= 0 {
				return "-"
			}
			return fmt.Sprintf("x%.1f", b/a)
		}
		fmt.Fprintf(&tb, "%d -> %d clusters (x%.0f): converge time per added cluster %s, controller CPU %s, controller peak MiB %s, serve CPU %s, serve peak MiB %s, etcd keys %s, etcd MiB in use %s\n",
			p.clusters, r.clusters, float64(r.clusters)/float64(p.clusters),
			ratio(p.convergedIn.Seconds()/float64(p.clusters-rows[i-2].clusters), r.convergedIn.Seconds()/float64(r.clusters-p.clusters)),
			ratio(p.ctlCPU.Seconds(), r.ctlCPU.Seconds()), ratio(mib(p.ctlPeak), mib(r.ctlPeak)),
			ratio(p.serveCPU.Seconds(), r.serveCPU.Seconds()), ratio(mib(p.servePeak), mib(r.servePeak)),
			ratio(float64(p.keys), float64(r.keys)), ratio(mib(p.dbInUse), mib(r.dbInUse)))
	}
	return tb.String()
}

func scaleSizes() ([]int, error) {
	s := os.Getenv(scaleSizesEnv)
	if s == "" {
		s = defaultScaleSizes
	}
	var out []int
	last := 0
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= last {
			return nil, fmt.Errorf("%s=%q: want increasing positive numbers", scaleSizesEnv, s)
		}
		out, last = append(out, n), n
	}
	return out, nil
}

// waitScaleRecords waits until serve's etcd holds both the gateway and the
// api records of n scale Clusters, and returns how many it last saw.
func waitScaleRecords(ctx context.Context, t *testing.T, cli *clientv3.Client, n int, deadline time.Time) (int, error) {
	prefix := benchSkyDNSPrefix + lab.ClusterNamespace + "/"
	have := 0
	lastLog := time.Now()
	for {
		resp, err := cli.Get(ctx, prefix+scalePrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return have, fmt.Errorf("list %s: %w", prefix, err)
		}
		kinds := map[string]int{} // cluster -> 1 gateway | 2 api
		for _, kv := range resp.Kvs {
			// <prefix><cluster>/gateway/<leaf> or <prefix><cluster>/api/<leaf>;
			// without a leaf it is the name's own record.
			parts := strings.Split(strings.TrimPrefix(string(kv.Key), prefix), "/")
			if len(parts) != 3 {
				continue
			}
			switch parts[1] {
			case "gateway":
				kinds[parts[0]] |= 1
			case "api":
				kinds[parts[0]] |= 2
			}
		}
		have = 0
		for _, k := range kinds {
			if k == 3 {
				have++
			}
		}
		if have >= n {
			return have, nil
		}
		if time.Now().After(deadline) {
			return have, fmt.Errorf("not converged by %s", deadline.Format(time.TimeOnly))
		}
		if time.Since(lastLog) >= scaleProgressEvery {
			t.Logf("%d of %d clusters complete in cluster-b's etcd", have, n)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return have, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// waitScaleStatus waits until the walkthrough's GatewayDNS's status counts
// at least n selected Clusters: the records converging says the slices
// were written, not that the status was (every added Cluster shares a
// gateway address with a third of the others, which the status reports).
func waitScaleStatus(ctx context.Context, mgmt benchClients, n int, deadline time.Time) error {
	var selected int64
	var lastErr error
	for time.Now().Before(deadline) {
		u, err := mgmt.dyn.Resource(lab.GatewayDNSGVR).Namespace(lab.ClusterNamespace).Get(ctx, lab.GatewayDNSName, metav1.GetOptions{})
		if err != nil {
			lastErr = err
		} else if selected, _, _ = unstructured.NestedInt64(u.Object, "status", "selectedClusters"); selected >= int64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	err := fmt.Errorf("GatewayDNS %s/%s's status counts %d selected Clusters, want at least %d",
		lab.ClusterNamespace, lab.GatewayDNSName, selected, n)
	if lastErr != nil {
		err = fmt.Errorf("%w (last read: %w)", err, lastErr)
	}
	return err
}
