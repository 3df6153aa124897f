package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// mcsMember is one member of the scale benchmark's ClusterSet.
type mcsMember struct {
	cluster *lab.Cluster
	clients benchClients
	added   bool // started by the benchmark
}

// mcsCost is what the controller and cluster-b's serve hold at one point.
type mcsCost struct {
	imports, services, slices, contract int   // summed over the members
	keys                                int64 // clusterset records in cluster-b's serve etcd
	dbInUse                             int64
	ctlCPU                              time.Duration
	ctlHeap, ctlLive, goroutines        float64
	ctlRSS, ctlPeak                     int64
	// writes and reads are the controller's requests to workload
	// clusters, limitWait their time waiting for the clusters' client
	// rate limits (summed); -1 from a controller without those metrics.
	writes, reads, limitWait float64
}

// testBenchMCSScale measures the cost of exports in a ClusterSet (by
// default 1,000 in five members: the lab's three workload clusters and
// two more API servers; XCC_BENCH_MCS_EXPORTS and XCC_BENCH_MCS_MEMBERS
// set another size): the time until every member holds every import and
// cluster-b's serve etcd every name, the objects written, the serve etcd
// keys, the controller's CPU, memory and goroutines; then the time of one
// more export with them in place, and of the ClusterSet's deletion.
func testBenchMCSScale(t *testing.T) {
	b := requireBench(t)
	sz, err := mcsScaleSizeFromEnv(len(theLab.Workloads))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sz.scaled(mcsScaleContext))
	defer cancel()
	if flags := sz.controllerFlags(); len(flags) > 0 {
		// Before the first measurement: the controller is measured from
		// its start.
		withController(t, flags...)
	}
	const set = "bench-scale"
	members, err := mcsScaleMembers(ctx, t, sz)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, sz.exports+mcsMoreRounds)
	for i := range names {
		names[i] = fmt.Sprintf("svc-%04d", i)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sz.scaled(mcsCleanupTimeout))
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, theLab.Management, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		// Each export from the member and namespace it was made in.
		err := inParallel(len(names), func(i int) error {
			return deleteBenchExport(ctx, members[sz.member(i)].clients, sz.namespace(i), names[i])
		})
		if err != nil {
			t.Error(err)
		}
		for _, m := range members {
			if m.added {
				if err := theLab.RemoveMember(ctx, m.cluster); err != nil {
					t.Error(err)
				}
			} else if err := lab.LabelCluster(ctx, theLab.Management, m.cluster.Name, mcsScaleLabel, ""); err != nil {
				t.Error(err)
			}
		}
	})
	for _, m := range members {
		for ns := range sz.namespaces() {
			if err := m.clients.ensureNamespace(ctx, mcsScaleNamespaceName(ns)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cli := serveEtcdClient(t, b)
	metrics := "http://" + theLab.ControllerHTTP + "/metrics"
	base, err := measureMCS(ctx, members, cli, b.EtcdClientURL, metrics, mcsCost{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.ApplyYAML(ctx, theLab.Management, lab.ClusterSetGVR, lab.ClusterSetSelecting(set, mcsScaleLabel, "true")); err != nil {
		t.Fatal(err)
	}

	// Each export lives in one member; its namespace exists in all.
	start := time.Now()
	err = inParallel(sz.exports, func(i int) error {
		m := members[sz.member(i)]
		s := benchService(sz.namespace(i), names[i], i%mcsHeadlessEvery == 0, i)
		if err := m.clients.createService(ctx, s); err != nil {
			return err
		}
		return m.clients.export(ctx, s.Namespace, s.Name)
	})
	if err != nil {
		t.Fatal(err)
	}
	createdIn := time.Since(start)
	t.Logf("%d Services with their EndpointSlices and ServiceExports created in %s", sz.exports, createdIn.Round(100*time.Millisecond))
	if err := waitMCSFilled(ctx, t, members, cli, sz.exports, start.Add(sz.scaled(mcsScaleTimeout))); err != nil {
		t.Fatal(err)
	}
	filledIn := time.Since(start)
	full, err := measureMCS(ctx, members, cli, b.EtcdClientURL, metrics, base)
	if err != nil {
		t.Fatal(err)
	}
	// The exports' Ready is written once their import is in every
	// member, after the fill: one more export is measured on a set at
	// rest, as a user adds one, not behind that last wave of writes.
	if err := waitMCSReady(ctx, t, members, sz.exports, start.Add(sz.scaled(mcsScaleTimeout))); err != nil {
		t.Fatal(err)
	}
	readyIn := time.Since(start)
	t.Logf("every export Ready %s after the first create", readyIn.Round(100*time.Millisecond))

	// The heap the controller keeps at rest, after a collection: the
	// live column above is read mid-write, with what a sync holds then.
	saveProfile(ctx, t, "heap?gc=1", sz.file("heap-filled.pprof"))
	restLive, err := metricValue(ctx, metrics, liveHeapMetric)
	if err != nil {
		t.Fatal(err)
	}
	// One more export at a time, with the others in place, profiled.
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		saveProfile(ctx, t, fmt.Sprintf("profile?seconds=%d", mcsProfileSeconds), sz.file("cpu-more.pprof"))
	}()
	var more []time.Duration
	for i := sz.exports; i < len(names); i++ {
		m := members[sz.member(i)]
		s := benchService(sz.namespace(i), names[i], false, i)
		if err := m.clients.createService(ctx, s); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if err := m.clients.export(ctx, s.Namespace, s.Name); err != nil {
			t.Fatal(err)
		}
		if err := waitMCSOne(ctx, members, cli, s.Namespace, s.Name, began, sz.scaled(mcsChangeTimeout)); err != nil {
			t.Fatal(err)
		}
		more = append(more, time.Since(began))
	}

	<-profiled
	began := time.Now()
	if err := lab.DeleteClusterSet(ctx, theLab.Management, lab.ClusterNamespace, set); err != nil {
		t.Fatal(err)
	}
	if err := waitMCSFilled(ctx, t, members, cli, 0, began.Add(sz.scaled(mcsScaleTimeout))); err != nil {
		t.Fatal(err)
	}
	emptiedIn := time.Since(began)
	// The floor, in the same run, once the controller's objects are gone.
	floor, err := measureMCSFloor(ctx, sz, members, names)
	if err != nil {
		t.Fatal(err)
	}
	report(t, mcsScaleTable(sz, members, base, full, createdIn, filledIn, readyIn, emptiedIn, more, restLive)+floorLines(floor, filledIn, emptiedIn))
}

// mcsScaleMembers labels the lab's workload clusters and starts and
// labels the extra ones the size needs.
func mcsScaleMembers(ctx context.Context, t *testing.T, sz mcsScaleSize) ([]mcsMember, error) {
	var members []mcsMember
	for _, w := range theLab.Workloads {
		if err := lab.LabelCluster(ctx, theLab.Management, w.Name, mcsScaleLabel, "true"); err != nil {
			return nil, err
		}
		members = append(members, mcsMember{cluster: w})
	}
	for _, name := range sz.extraMembers(len(theLab.Workloads)) {
		began := time.Now()
		c, err := theLab.AddMember(ctx, name, mcsScaleLabel, "true")
		if c != nil {
			members = append(members, mcsMember{cluster: c, added: true})
		}
		if err != nil {
			return members, err
		}
		t.Logf("member %s started in %s", name, time.Since(began).Round(100*time.Millisecond))
	}
	for i := range members {
		var err error
		if members[i].clients, err = newBenchClients(members[i].cluster); err != nil {
			return members, err
		}
	}
	return members, nil
}

func mcsScaleNamespaceName(n int) string { return fmt.Sprintf("bench-mcs-%02d", n) }

// waitMCSReady waits until n exports of the benchmark, over the members,
// say Ready=True.
func waitMCSReady(ctx context.Context, t *testing.T, members []mcsMember, n int, deadline time.Time) error {
	return pollMCS(ctx, t, deadline, func() (bool, string, error) {
		ready := 0
		for _, m := range members {
			list, err := m.clients.dyn.Resource(lab.ServiceExportGVR).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, "", fmt.Errorf("list ServiceExports in %s: %w", m.cluster.Name, err)
			}
			for _, u := range list.Items {
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				for _, c := range conds {
					if c, ok := c.(map[string]any); ok && c["type"] == "Ready" && c["status"] == "True" && strings.HasPrefix(u.GetNamespace(), "bench-mcs-") {
						ready++
					}
				}
			}
		}
		return ready >= n, fmt.Sprintf("want %d exports Ready: %d are", n, ready), nil
	})
}

// waitMCSFilled waits until every member holds n ServiceImports (those
// of ClusterSetIP imports with an address) and n contract slices, and
// cluster-b's serve etcd holds records of n imports. The benchmark's
// imports have one source and one family: one contract slice each.
func waitMCSFilled(ctx context.Context, t *testing.T, members []mcsMember, cli *clientv3.Client, n int, deadline time.Time) error {
	return pollMCS(ctx, t, deadline, func() (bool, string, error) {
		imports := make([]int, len(members))
		contract := make([]int, len(members))
		for i, m := range members {
			var err error
			if imports[i], contract[i], err = mcsMemberCounts(ctx, m); err != nil {
				return false, "", err
			}
		}
		names, err := mcsNamesInEtcd(ctx, cli)
		if err != nil {
			return false, "", err
		}
		done := names == n
		for i := range members {
			done = done && imports[i] == n && contract[i] == n
		}
		return done, fmt.Sprintf("want %d imports: members hold %v, their contract slices %v, cluster-b's etcd names %d", n, imports, contract, names), nil
	})
}

// pollMCS calls check every mcsPollEvery until it is done, logging its
// progress every scaleProgressEvery; past deadline the progress is the
// error.
func pollMCS(ctx context.Context, t *testing.T, deadline time.Time, check func() (done bool, progress string, err error)) error {
	lastLog := time.Now()
	for {
		done, progress, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New(progress)
		}
		if time.Since(lastLog) >= scaleProgressEvery {
			t.Log(progress)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(mcsPollEvery):
		}
	}
}

// mcsMemberCounts counts the member's usable ServiceImports of the
// benchmark and the contract slices in its xcc-dns namespace, from the
// API server's watch cache (resourceVersion 0): the poll must not load
// the API servers the controller is writing to.
func mcsMemberCounts(ctx context.Context, m mcsMember) (imports, contract int, err error) {
	list, err := m.clients.dyn.Resource(lab.ServiceImportGVR).List(ctx, metav1.ListOptions{LabelSelector: mcsImportSelector, ResourceVersion: "0"})
	if err != nil {
		return 0, 0, fmt.Errorf("list ServiceImports in %s: %w", m.cluster.Name, err)
	}
	for _, u := range list.Items {
		typ, _, _ := unstructured.NestedString(u.Object, "spec", "type")
		ips, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "ips")
		if strings.HasPrefix(u.GetNamespace(), "bench-mcs-") && (typ == "Headless" || len(ips) > 0) {
			imports++
		}
	}
	slices, err := m.clients.kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx,
		metav1.ListOptions{LabelSelector: clusterSetSliceSelector, ResourceVersion: "0"})
	if err != nil {
		return 0, 0, fmt.Errorf("list contract slices in %s: %w", m.cluster.Name, err)
	}
	for _, s := range slices.Items {
		if strings.HasPrefix(s.Annotations["xcc-dns.io/service-import"], "bench-mcs-") {
			contract++
		}
	}
	return imports, contract, nil
}

// mcsNamesInEtcd counts the imports of the benchmark's namespaces that
// have records in cluster-b's serve etcd.
func mcsNamesInEtcd(ctx context.Context, cli *clientv3.Client) (int, error) {
	resp, err := cli.Get(ctx, mcsSkyDNSPrefix+"bench-mcs-", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, fmt.Errorf("list %s in cluster-b's etcd: %w", mcsSkyDNSPrefix, err)
	}
	names := map[string]bool{}
	for _, kv := range resp.Kvs {
		parts := strings.SplitN(strings.TrimPrefix(string(kv.Key), mcsSkyDNSPrefix), "/", 3)
		if len(parts) >= 2 {
			names[parts[0]+"/"+parts[1]] = true
		}
	}
	return len(names), nil
}

// measureMCS takes the figures of one point; CPU is relative to base.
func measureMCS(ctx context.Context, members []mcsMember, cli *clientv3.Client, etcdURL, metrics string, base mcsCost) (mcsCost, error) {
	var c mcsCost
	for _, m := range members {
		for _, count := range []struct {
			n    *int
			list func() (int, error)
		}{
			{&c.imports, func() (int, error) {
				l, err := m.clients.dyn.Resource(lab.ServiceImportGVR).List(ctx, metav1.ListOptions{LabelSelector: mcsImportSelector})
				if err != nil {
					return 0, err
				}
				return len(l.Items), nil
			}},
			{&c.services, func() (int, error) {
				l, err := m.clients.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: mcsImportSelector})
				if err != nil {
					return 0, err
				}
				return len(l.Items), nil
			}},
			{&c.slices, func() (int, error) {
				l, err := m.clients.kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{LabelSelector: mcsImportSelector})
				if err != nil {
					return 0, err
				}
				return len(l.Items), nil
			}},
			{&c.contract, func() (int, error) {
				l, err := m.clients.kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{LabelSelector: clusterSetSliceSelector})
				if err != nil {
					return 0, err
				}
				return len(l.Items), nil
			}},
		} {
			n, err := count.list()
			if err != nil {
				return c, fmt.Errorf("count the controller's objects in %s: %w", m.cluster.Name, err)
			}
			*count.n += n
		}
	}
	keys, err := cli.Get(ctx, mcsSkyDNSPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return c, fmt.Errorf("count keys in cluster-b's etcd: %w", err)
	}
	c.keys = keys.Count
	st, err := cli.Status(ctx, etcdURL)
	if err != nil {
		return c, fmt.Errorf("status of cluster-b's etcd: %w", err)
	}
	c.dbInUse = st.DbSizeInUse
	pid := theLab.Controller.Pid()
	if c.ctlCPU, err = procCPU(pid); err != nil {
		return c, err
	}
	c.ctlCPU -= base.ctlCPU
	if c.ctlPeak, err = procPeakRSS(pid); err != nil {
		return c, err
	}
	if c.ctlRSS, err = procRSS(pid); err != nil {
		return c, err
	}
	if c.ctlHeap, err = metricValue(ctx, metrics, heapMetric); err != nil {
		return c, err
	}
	if c.ctlLive, err = metricValue(ctx, metrics, liveHeapMetric); err != nil {
		return c, err
	}
	if c.goroutines, err = metricValue(ctx, metrics, goroutinesMetric); err != nil {
		return c, err
	}
	isGet := func(labels string) bool { return strings.Contains(labels, `method="GET"`) }
	for _, m := range []struct {
		v    *float64
		name string
		keep func(string) bool
	}{
		{&c.writes, requestsMetric, func(l string) bool { return !isGet(l) }},
		{&c.reads, requestsMetric, isGet},
		{&c.limitWait, rateLimitWaitMetric, nil},
	} {
		v, err := metricValueOf(ctx, metrics, m.name, m.keep)
		switch {
		case errors.Is(err, errNoMetric):
			*m.v = -1
		case err != nil:
			return c, err
		default:
			*m.v = v
		}
	}
	if base.writes > 0 || base.reads > 0 {
		c.writes, c.reads, c.limitWait = c.writes-base.writes, c.reads-base.reads, c.limitWait-base.limitWait
	}
	return c, nil
}

// floorLines compares the fill and the deletion with the floor's.
func floorLines(f mcsFloor, filledIn, emptiedIn time.Duration) string {
	return fmt.Sprintf("floor (a bare client per member at the controller's %d requests/s, the same objects, %d writes): fill %s, delete %s\n"+
		"controller / floor: fill x%.2f, delete x%.2f\n",
		floorQPS, f.writes, f.fill.Round(100*time.Millisecond), f.del.Round(100*time.Millisecond),
		filledIn.Seconds()/f.fill.Seconds(), emptiedIn.Seconds()/f.del.Seconds())
}

func mcsScaleTable(sz mcsScaleSize, members []mcsMember, base, full mcsCost, createdIn, filledIn, readyIn, emptiedIn time.Duration,
	more []time.Duration, restLive float64) string {
	var tb strings.Builder
	var names []string
	for _, m := range members {
		names = append(names, m.cluster.Name)
	}
	fmt.Fprintf(&tb, "mcs scale: %d exports (1 in %d headless) spread over a ClusterSet of %d members (%s), %d namespaces in each\n",
		sz.exports, mcsHeadlessEvery, len(members), strings.Join(names, ", "), sz.namespaces())
	fmt.Fprintf(&tb, "created in %s; every member holds every import and cluster-b's etcd every name %s after the first create\n",
		createdIn.Round(100*time.Millisecond), filledIn.Round(100*time.Millisecond))
	fmt.Fprintf(&tb, "every export Ready (its import written in every member) %s after the first create\n", readyIn.Round(100*time.Millisecond))
	fmt.Fprintf(&tb, "%-10s %8s %8s %8s %9s %8s %9s | %7s %8s %8s %8s %8s %10s\n",
		"", "imports", "services", "slices", "contract", "keys", "etcd MiB", "ctl CPU", "heap MiB", "live MiB", "RSS MiB", "peak MiB", "goroutines")
	for _, r := range []struct {
		label string
		c     mcsCost
	}{{"before", base}, {sz.exportsLabel(), full}} {
		cpu := "-"
		if r.c.ctlCPU > 0 && r.label != "before" {
			cpu = fmt.Sprintf("%.1fs", r.c.ctlCPU.Seconds())
		}
		fmt.Fprintf(&tb, "%-10s %8d %8d %8d %9d %8d %9.1f | %7s %8.0f %8.0f %8.0f %8.0f %10.0f\n", r.label,
			r.c.imports, r.c.services, r.c.slices, r.c.contract, r.c.keys, mib(r.c.dbInUse),
			cpu, r.c.ctlHeap/(1<<20), r.c.ctlLive/(1<<20), mib(r.c.ctlRSS), mib(r.c.ctlPeak), r.c.goroutines)
	}
	if full.writes >= 0 {
		fmt.Fprintf(&tb, "controller requests to workload clusters from before until filled: %.0f writes, %.0f reads; %.1f s waited for the clusters' client rate limits (summed over requests)\n",
			full.writes, full.reads, full.limitWait)
	}
	fmt.Fprintf(&tb, "controller heap live at rest once every export is Ready, after a forced GC: %.0f MiB\n", restLive/(1<<20))
	fmt.Fprintf(&tb, "one more export with %d in place, until every member holds it and cluster-b's etcd its name: p50 %s, max %s (%d)\n",
		sz.exports, ms(percentile(more, 50)), ms(percentile(more, 100)), len(more))
	fmt.Fprintf(&tb, "ClusterSet deleted: every import and name gone from every member in %s\n", emptiedIn.Round(100*time.Millisecond))
	fmt.Fprintf(&tb, "(imports, services (derived), slices (imported endpoints), contract (serve's slices): the controller's objects summed over\n")
	fmt.Fprintf(&tb, " the members; keys: clusterset records in cluster-b's serve etcd; ctl CPU: user+system since before; heap: in use;\n live: the heap the last GC found live)\n")
	return tb.String()
}

// waitMCSOne waits until every member holds the import of ns/name
// (a ClusterSetIP one with its address) and its contract slice, and
// cluster-b's serve etcd its name. It asks for that import alone, every
// mcsPoll, so a change of a second or less is seen as such: counting
// every import of every member takes about a second itself at 1,000.
// It fails timeout after began, the export's moment.
func waitMCSOne(ctx context.Context, members []mcsMember, cli *clientv3.Client, ns, name string, began time.Time, timeout time.Duration) error {
	deadline := began.Add(timeout)
	sel := clusterSetSliceSelector + ",kubernetes.io/service-name=" + name + ".x"
	held := func(m mcsMember) (bool, error) {
		u, err := m.clients.dyn.Resource(lab.ServiceImportGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("get ServiceImport %s/%s in %s: %w", ns, name, m.cluster.Name, err)
		}
		typ, _, _ := unstructured.NestedString(u.Object, "spec", "type")
		ips, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "ips")
		if typ != "Headless" && len(ips) == 0 {
			return false, nil
		}
		l, err := m.clients.kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: "0"})
		if err != nil {
			return false, fmt.Errorf("list the contract slices of %s/%s in %s: %w", ns, name, m.cluster.Name, err)
		}
		for _, s := range l.Items {
			if s.Annotations["xcc-dns.io/service-import"] == ns+"/"+name {
				return true, nil
			}
		}
		return false, nil
	}
	for {
		done := true
		for _, m := range members {
			ok, err := held(m)
			if err != nil {
				return err
			}
			done = done && ok
		}
		if done {
			resp, err := cli.Get(ctx, mcsSkyDNSPrefix+ns+"/"+name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return fmt.Errorf("get %s/%s in cluster-b's etcd: %w", ns, name, err)
			}
			if resp.Count > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("import %s/%s not held by every member and cluster-b's etcd within %s", ns, name, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(mcsPoll):
		}
	}
}
