package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// churnPods is the size of cluster-a's StatefulSet in the churn
	// benchmark: one EndpointSlice, as full as the endpoint slice
	// controller makes one.
	churnPods = 100
	// churnRate is the rate of endpoint changes the writer aims at (the
	// goal is measured under at least 20 a second), for churnFor.
	churnRate = 25
	churnFor  = 40 * time.Second
	// churnRest is how long a pod stays unchanged after its last change
	// was seen in cluster-b's etcd, so no change overtakes the one before.
	churnRest = time.Second
	// churnGoal: a pod joins or leaves another cluster's etcd within a
	// second (p99).
	churnGoal = time.Second

	// headlessScalePods is the pods per cluster of the scale benchmark:
	// contract.MaxAddressesPerSlice, the most one port set and family may
	// have, in slices of headlessSlicePods as the endpoint slice
	// controller writes them.
	headlessScalePods = 1000
	headlessSlicePods = 100
	// maxRecordsPerName is contract.MaxRecordsPerName: the most records
	// serve writes for the cross-cluster name and each SRV name (an SRV
	// name holds fewer: what fits in one DNS message).
	maxRecordsPerName = 1000

	// heapMetric is the Go runtime's heap in use, on the controller's /metrics.
	heapMetric = "go_memstats_heap_inuse_bytes"
)

// podAddress is the address of pod i of cluster c (0 or 1) in the
// headless benchmarks, in 198.19.0.0/16 (RFC 2544, benchmarks).
func podAddress(c, i int) string { return fmt.Sprintf("198.19.%d.%d", 100*c+i/250, i%250+1) }

// skyDNSPrefix is the etcd key prefix of name and every name below it.
func skyDNSPrefix(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return "/skydns/" + strings.Join(labels, "/") + "/"
}

// churnChange is one endpoint change of the churn benchmark.
type churnChange struct {
	pod     string
	publish bool      // the pod turns ready or is added (else: leaves)
	kind    string    // what changed, one of churnKinds
	made    time.Time // just before the EndpointSlice write
	inSlice time.Time // the controller's slice in cluster-b has (or no longer has) the pod
	seen    time.Time // cluster-b's serve etcd has (or no longer has) the pod's record
}

// churnKinds are the changes the churn benchmark makes, the first two
// publish a pod, the others take it out.
var churnKinds = []string{"a pod turns ready", "a pod is added", "a pod turns not ready", "a pod is removed"}

// churnWatch matches the events of cluster-b's etcd under the pods'
// names with the changes waiting for them.
type churnWatch struct {
	mu      sync.Mutex
	pending map[string]*churnChange // by pod
	rested  map[string]time.Time    // by pod: when its last change was seen
	// inSlice holds the changes not yet seen in the controller's slice
	// in cluster-b, by pod.
	inSlice map[string]*churnChange
}

// expect registers c as waiting for its pod's event.
func (w *churnWatch) expect(c *churnChange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[c.pod] = c
	w.inSlice[c.pod] = c
}

// free reports whether pod may change: its last change was seen
// churnRest ago.
func (w *churnWatch) free(pod string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, busy := w.pending[pod]
	_, writing := w.inSlice[pod]
	return !busy && !writing && now.Sub(w.rested[pod]) >= churnRest
}

func (w *churnWatch) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) + len(w.inSlice)
}

// slices reads the events of a watch of the controller's headless
// slices of source cluster-a in cluster-b until it ends: a change is in
// its slice at the first event of a slice that has (or, for a pod
// leaving, no longer has) its pod. Together with run it splits each
// change's time between the controller (cluster-a's informer, the sync,
// the write to cluster-b) and serve.
func (w *churnWatch) slices(wi watch.Interface) {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		now := time.Now()
		s, ok := ev.Object.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		has := map[string]bool{}
		if ev.Type != watch.Deleted {
			for _, e := range s.Endpoints {
				if e.Hostname != nil {
					has[*e.Hostname] = true
				}
			}
		}
		w.mu.Lock()
		for pod, c := range w.inSlice {
			if has[pod] == c.publish {
				c.inSlice = now
				delete(w.inSlice, pod)
			}
		}
		w.mu.Unlock()
	}
}

// run reads the events of a watch under the source cluster's name
// <cluster>.X (prefix), whose pod names are <pod>.<cluster>.X, until the
// watch ends. The time is when the event arrived: a watch delivers
// within milliseconds of the write, where polling would add its interval.
// A change counts as seen at the first event of its kind (put when the
// pod joins, delete when it leaves) on a key of its pod's name.
func (w *churnWatch) run(events clientv3.WatchChan, prefix string) {
	for resp := range events {
		now := time.Now()
		for _, ev := range resp.Events {
			pod, leaf, ok := strings.Cut(strings.TrimPrefix(string(ev.Kv.Key), prefix), "/")
			if !ok || leaf == "" {
				continue // the cluster's own name, not a pod's
			}
			w.mu.Lock()
			if c := w.pending[pod]; c != nil && c.publish == (ev.Type == clientv3.EventTypePut) {
				c.seen = now
				delete(w.pending, pod)
				w.rested[pod] = now
			}
			w.mu.Unlock()
		}
	}
}

// testBenchHeadlessChurn exports a headless Service of cluster-a (a
// StatefulSet of churnPods pods in one EndpointSlice) and changes its
// endpoints at churnRate a second for churnFor: a random pod turns not
// ready, is removed, or comes back ready. For each change it measures the
// time from the EndpointSlice write in cluster-a until cluster-b's serve
// etcd holds, or no longer holds, that pod's record (watched). The path:
// the controller's EndpointSlice informer in cluster-a, its sync of the
// GatewayDNS (the slice rewritten in every target), serve's informer in
// cluster-b and its etcd transaction.
func testBenchHeadlessChurn(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	mgmt := theLab.Management
	a := theLab.Workload(lab.ClusterA)
	const gd = "dev-team-churn"
	x := lab.HeadlessHost(gd)
	cli := serveEtcdClient(t, b)
	metrics := "http://" + theLab.ControllerHTTP + "/metrics"
	// The writer's client has no client-side rate limit (client-go's
	// default of 5 a second would be the churn's).
	aClients, err := newBenchClients(a)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := deleteHeadlessExport(ctx, gd); err != nil {
			t.Error(err)
		}
		if err := lab.DeleteHeadless(ctx, a); err != nil {
			t.Error(err)
		}
	})
	pods := make([]lab.HeadlessPod, churnPods)
	present := make([]bool, churnPods)
	for i := range pods {
		pods[i] = lab.HeadlessPod{Name: fmt.Sprintf("db-%d", i), Address: podAddress(0, i), Ready: true}
		present[i] = true
	}
	slice := func() error {
		var in []lab.HeadlessPod
		for i, p := range pods {
			if present[i] {
				in = append(in, p)
			}
		}
		return lab.WriteEndpointSlice(ctx, aClients.kube, a.Name, lab.HeadlessEndpointSlice(lab.HeadlessEndpointsName, in))
	}
	if err := lab.CreateHeadlessService(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := slice(); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, headlessYAML(gd, lab.HeadlessNamespace+"/"+lab.HeadlessService, "Local")); err != nil {
		t.Fatal(err)
	}
	prefix := skyDNSPrefix("cluster-a." + x)
	if err := waitPodNames(ctx, cli, prefix, churnPods, time.Now().Add(changeTimeout)); err != nil {
		t.Fatal(err)
	}
	// serve is done with the export's first writes (the pods' names come
	// before the name across clusters, its SRV names and the names'
	// own records): changes made before would wait for them.
	keys, err := settledKeys(ctx, cli, skyDNSPrefix(x), 2*time.Second, time.Now().Add(changeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pods of cluster-a in cluster-b's etcd, %d keys under %s", churnPods, keys.total, x)

	head, err := cli.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("revision of cluster-b's etcd: %v", err)
	}
	w := &churnWatch{pending: map[string]*churnChange{}, rested: map[string]time.Time{}, inSlice: map[string]*churnChange{}}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	// Both watches are open before the first change: a change made while
	// one is still being set up would be seen late, when it opens.
	events := cli.Watch(watchCtx, prefix, clientv3.WithPrefix(), clientv3.WithRev(head.Header.Revision+1), clientv3.WithCreatedNotify())
	if created, ok := <-events; !ok || !created.Created {
		t.Fatalf("watch %s in cluster-b's etcd: not created (%v)", prefix, created.Err())
	}
	go w.run(events, prefix)
	bClients, err := newBenchClients(b.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	sliceWatch, err := bClients.kube.DiscoveryV1().EndpointSlices(lab.SliceNamespace).Watch(watchCtx, metav1.ListOptions{
		LabelSelector: "xcc-dns.io/record=headless,xcc-dns.io/source-cluster=" + lab.ClusterA})
	if err != nil {
		t.Fatalf("watch the controller's slices in %s: %v", lab.ClusterB, err)
	}
	go w.slices(sliceWatch)
	syncs0, err := metricValue(ctx, metrics, "xcc_controller_syncs_total")
	if err != nil {
		t.Fatal(err)
	}
	written0, err := metricValue(ctx, metrics, "xcc_controller_endpointslices_written_total")
	if err != nil {
		t.Fatal(err)
	}

	var changes []*churnChange
	tick := time.NewTicker(time.Second / churnRate)
	defer tick.Stop()
	began := time.Now()
	for now := range tick.C {
		if now.Sub(began) >= churnFor {
			break
		}
		i := rand.IntN(churnPods)
		for tries := 0; !w.free(pods[i].Name, now) && tries < churnPods; tries++ {
			i = (i + 1) % churnPods
		}
		if !w.free(pods[i].Name, now) {
			continue // every pod is busy: the rate shows it
		}
		c := &churnChange{pod: pods[i].Name}
		switch {
		case !present[i]:
			present[i], pods[i].Ready, c.publish, c.kind = true, true, true, churnKinds[1]
		case !pods[i].Ready:
			pods[i].Ready, c.publish, c.kind = true, true, churnKinds[0]
		case rand.IntN(2) == 0:
			pods[i].Ready, c.kind = false, churnKinds[2]
		default:
			present[i], c.kind = false, churnKinds[3]
		}
		w.expect(c)
		c.made = time.Now()
		if err := slice(); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, c)
	}
	wrote := time.Since(began)
	for end := time.Now().Add(changeTimeout); w.waiting() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d of %d changes never reached cluster-b's etcd", w.waiting(), len(changes))
		}
	}
	syncs, err := metricValue(ctx, metrics, "xcc_controller_syncs_total")
	if err != nil {
		t.Fatal(err)
	}
	written, err := metricValue(ctx, metrics, "xcc_controller_endpointslices_written_total")
	if err != nil {
		t.Fatal(err)
	}

	var all, toSlice, serveJoin, serveLeave []time.Duration
	byKind := map[string][]time.Duration{}
	for _, c := range changes {
		d := c.seen.Sub(c.made)
		all = append(all, d)
		byKind[c.kind] = append(byKind[c.kind], d)
		toSlice = append(toSlice, c.inSlice.Sub(c.made))
		if c.publish {
			serveJoin = append(serveJoin, c.seen.Sub(c.inSlice))
		} else {
			serveLeave = append(serveLeave, c.seen.Sub(c.inSlice))
		}
	}
	slowest := slices.SortedFunc(slices.Values(changes), func(p, q *churnChange) int {
		return cmp.Compare(q.seen.Sub(q.made), p.seen.Sub(p.made))
	})
	for _, c := range slowest[:min(10, len(slowest))] {
		t.Logf("slow: %s %s %s after the churn began: %s, in cluster-b's slice after %s", c.pod, c.kind,
			fmtDuration(c.made.Sub(began)), fmtDuration(c.seen.Sub(c.made)), fmtDuration(c.inSlice.Sub(c.made)))
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "headless churn: %d endpoint changes of cluster-a's Service (%d pods, one EndpointSlice) in %s: %.1f changes/s (aimed at %d/s)\n",
		len(changes), churnPods, wrote.Round(100*time.Millisecond), float64(len(changes))/wrote.Seconds(), churnRate)
	fmt.Fprintf(&tb, "controller: %.0f syncs, %.0f EndpointSlice writes (all targets) meanwhile\n", syncs-syncs0, written-written0)
	fmt.Fprintf(&tb, "%-46s %6s %9s %9s %9s  %s\n", "until cluster-b's serve etcd has it", "n", "p50", "p99", "max", "goal")
	row := func(what string, d []time.Duration, goal string) {
		fmt.Fprintf(&tb, "%-46s %6d %9s %9s %9s  %s\n", what, len(d),
			fmtDuration(percentile(d, 50)), fmtDuration(percentile(d, 99)), fmtDuration(percentile(d, 100)), goal)
	}
	row("every change", all, goalText("p99", percentile(all, 99), churnGoal, "<"))
	for _, k := range churnKinds {
		row("  "+k, byKind[k], "")
	}
	row("the controller's slice in cluster-b has it", toSlice, "")
	row("from there to serve's etcd: a pod joins", serveJoin, "")
	row("  a pod leaves", serveLeave, "")
	fmt.Fprintf(&tb, "(a change is timed from just before its EndpointSlice write in cluster-a until the first watch event of cluster-b's\n")
	fmt.Fprintf(&tb, " serve etcd putting or deleting a key of <pod>.cluster-a.%s; a pod changes again only %s after that)\n", x, churnRest)
	report(t, tb.String())
}

// waitPodNames waits until etcd has keys of n pod names under prefix.
func waitPodNames(ctx context.Context, cli *clientv3.Client, prefix string, n int, deadline time.Time) error {
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		pods := map[string]bool{}
		for _, kv := range resp.Kvs {
			if pod, leaf, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix), "/"); ok && leaf != "" {
				pods[pod] = true
			}
		}
		if len(pods) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d pod names, want %d", prefix, len(pods), n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deleteHeadlessExport deletes GatewayDNS gd of the walkthrough's
// namespace and waits until it is gone: its finalizer has removed its
// slices from every target.
func deleteHeadlessExport(ctx context.Context, gd string) error {
	mgmt := theLab.Management
	if err := lab.DeleteGatewayDNS(ctx, mgmt, lab.ClusterNamespace, gd); err != nil {
		return err
	}
	for {
		_, err := mgmt.Dynamic.Resource(lab.GatewayDNSGVR).Namespace(lab.ClusterNamespace).Get(ctx, gd, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("GatewayDNS %s/%s still there (finalizer): %w", lab.ClusterNamespace, gd, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// testBenchHeadlessScale exports a headless Service with
// headlessScalePods ready pods in each of cluster-a and cluster-b (slices
// of headlessSlicePods, hostnames as a StatefulSet's), policy All, and
// reports what one such export costs: the controller's slices in a
// target and its writes, serve's etcd keys in cluster-b by name, the
// controller's heap in use before and after, the time from the
// GatewayDNS's creation until cluster-b's cluster DNS answers every pod
// (over TCP), and what the cross-cluster name and its SRV name answer at
// 2 x 1,000 pods (MaxRecordsPerName).
func testBenchHeadlessScale(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	mgmt := theLab.Management
	sources := []*lab.Cluster{theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)}
	const gd = "dev-team-scale"
	x := lab.HeadlessHost(gd)
	cli := serveEtcdClient(t, b)
	metrics := "http://" + theLab.ControllerHTTP + "/metrics"
	sliceName := func(i int) string { return fmt.Sprintf("%s-%d", lab.HeadlessEndpointsName, i) }

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := deleteHeadlessExport(ctx, gd); err != nil {
			t.Error(err)
		}
		for _, w := range sources {
			for i := range headlessScalePods / headlessSlicePods {
				if err := lab.DeleteEndpointSlice(ctx, w, lab.HeadlessNamespace, sliceName(i)); err != nil {
					t.Error(err)
				}
			}
			if err := lab.DeleteHeadless(ctx, w); err != nil {
				t.Error(err)
			}
		}
	})
	for c, w := range sources {
		if err := lab.CreateHeadlessService(ctx, w); err != nil {
			t.Fatal(err)
		}
		for s := range headlessScalePods / headlessSlicePods {
			var pods []lab.HeadlessPod
			for i := s * headlessSlicePods; i < (s+1)*headlessSlicePods; i++ {
				pods = append(pods, lab.HeadlessPod{Name: fmt.Sprintf("db-%d", i), Address: podAddress(c, i), Ready: true})
			}
			if err := lab.WriteEndpointSlice(ctx, w.Client, w.Name, lab.HeadlessEndpointSlice(sliceName(s), pods)); err != nil {
				t.Fatal(err)
			}
		}
	}
	heapBefore, err := metricValue(ctx, metrics, heapMetric)
	if err != nil {
		t.Fatal(err)
	}
	written0, err := metricValue(ctx, metrics, "xcc_controller_endpointslices_written_total")
	if err != nil {
		t.Fatal(err)
	}

	applied := time.Now()
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.GatewayDNSGVR, headlessYAML(gd, lab.HeadlessNamespace+"/"+lab.HeadlessService, "All")); err != nil {
		t.Fatal(err)
	}
	// Every pod's name in cluster-b's etcd (watched ends of the data
	// path), then in cluster-b's cluster DNS's answers (which a partial
	// answer cached while the names were being written can delay by up
	// to the TTL).
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		if err := waitPodNames(ctx, cli, skyDNSPrefix(c+"."+x), headlessScalePods, applied.Add(changeTimeout)); err != nil {
			t.Fatal(err)
		}
	}
	inEtcd := time.Since(applied)
	for _, name := range []string{"cluster-a." + x, "cluster-b." + x} {
		if _, _, err := pollTCP(ctx, b.ClusterDNSAddr, name, dns.TypeA, applied.Add(changeTimeout), func(r *dns.Msg) bool {
			return len(lab.Values(r, dns.TypeA)) == headlessScalePods
		}); err != nil {
			t.Fatal(err)
		}
	}
	full := time.Since(applied)
	t.Logf("all %d pods in cluster-b's etcd %s and answered by its cluster DNS %s after the GatewayDNS was created",
		2*headlessScalePods, inEtcd.Round(10*time.Millisecond), full.Round(10*time.Millisecond))
	// serve's etcd settled: the same number of keys for 3 s.
	keys, err := settledKeys(ctx, cli, skyDNSPrefix(x), 3*time.Second, applied.Add(changeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	heapAfter, err := metricValue(ctx, metrics, heapMetric)
	if err != nil {
		t.Fatal(err)
	}
	written, err := metricValue(ctx, metrics, "xcc_controller_endpointslices_written_total")
	if err != nil {
		t.Fatal(err)
	}
	ours, err := b.Cluster.Client.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "endpointslice.kubernetes.io/managed-by=xcc-dns-controller,xcc-dns.io/record=headless"})
	if err != nil {
		t.Fatalf("list the controller's slices in %s: %v", lab.ClusterB, err)
	}
	slicesInB, endpointsInB := 0, 0
	for _, s := range ours.Items {
		if s.Annotations["connectivity.tanzu.vmware.com/gateway-dns-ref"] == lab.ClusterNamespace+"/"+gd {
			slicesInB++
			endpointsInB += len(s.Endpoints)
		}
	}

	// What the names answer over TCP (over UDP the answers are
	// truncated), from cluster-b's cluster DNS and from ours behind it.
	type answerRow struct {
		what          string
		r             *dns.Msg
		wire          int
		fromA, values int
	}
	ofA := map[string]bool{}
	for i := range headlessScalePods {
		ofA[podAddress(0, i)] = true
	}
	var rows []answerRow
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{x, dns.TypeA}, {"_pg._tcp." + x, dns.TypeSRV}} {
		for _, server := range []struct{ what, addr string }{
			{"cluster DNS", b.ClusterDNSAddr}, {"our DNS", b.XCCDNSAddr},
		} {
			r, wire, err := wireExchange(server.addr, q.name, q.qtype)
			if err != nil {
				t.Fatal(err)
			}
			row := answerRow{what: fmt.Sprintf("%s %s, %s over TCP", dns.TypeToString[q.qtype], strings.Replace(q.name, x, "X", 1), server.what), r: r, wire: wire}
			row.values = len(lab.Values(r, q.qtype))
			for _, v := range lab.Values(r, q.qtype) {
				if ofA[v] || strings.Contains(v, " db-") && strings.Contains(v, ".cluster-a.") {
					row.fromA++
				}
			}
			rows = append(rows, row)
		}
	}
	udp, err := lab.Query(b.ClusterDNSAddr, x, dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}

	var tb strings.Builder
	fmt.Fprintf(&tb, "headless scale: one GatewayDNS (policy All) exporting a headless Service with %d ready pods in each of cluster-a and cluster-b\n", headlessScalePods)
	fmt.Fprintf(&tb, "(%d EndpointSlices of %d per cluster, StatefulSet hostnames, one named port)\n", headlessScalePods/headlessSlicePods, headlessSlicePods)
	fmt.Fprintf(&tb, "%-58s %s\n", "GatewayDNS created -> every pod in cluster-b's etcd", fmtDuration(inEtcd))
	fmt.Fprintf(&tb, "%-58s %s\n", "GatewayDNS created -> cluster-b's DNS answers every pod", fmtDuration(full))
	fmt.Fprintf(&tb, "%-58s %d slices, %d endpoints\n", "controller's slices of the export in cluster-b", slicesInB, endpointsInB)
	fmt.Fprintf(&tb, "%-58s %.0f\n", "controller's EndpointSlice writes (all targets)", written-written0)
	fmt.Fprintf(&tb, "%-58s %.1f MiB -> %.1f MiB\n", "controller heap in use (go_memstats_heap_inuse_bytes)", heapBefore/(1<<20), heapAfter/(1<<20))
	fmt.Fprintf(&tb, "%-58s %d\n", "cluster-b's serve etcd keys under X, all", keys.total)
	for _, k := range keys.names() {
		fmt.Fprintf(&tb, "%-58s %d\n", "  "+k, keys.by[k])
	}
	for _, r := range rows {
		fmt.Fprintf(&tb, "%-58s %s, %d records (%d of cluster-a), %d additional, truncated %v, %d bytes\n",
			r.what, dns.RcodeToString[r.r.Rcode], r.values, r.fromA, len(r.r.Extra), r.r.Truncated, r.wire)
	}
	fmt.Fprintf(&tb, "%-58s truncated %v, %d answers\n", "A X, cluster DNS over UDP", udp.Truncated, len(udp.Answer))
	fmt.Fprintf(&tb, "(X = %s; MaxRecordsPerName = %d)\n", x, maxRecordsPerName)
	report(t, tb.String())
}

// pollTCP asks server for name over TCP every pollInterval until done
// accepts the answer, and returns it and when it came.
func pollTCP(ctx context.Context, server, name string, qtype uint16, deadline time.Time, done func(*dns.Msg) bool) (*dns.Msg, time.Time, error) {
	var last string
	for {
		r, err := lab.QueryTCP(server, name, qtype)
		at := time.Now()
		if err == nil && done(r) {
			return r, at, nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%s, %d answers", dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		if at.After(deadline) {
			return r, at, fmt.Errorf("%s %s over TCP: not as wanted by %s; last: %s", dns.TypeToString[qtype], name, deadline.Format(time.TimeOnly), last)
		}
		select {
		case <-ctx.Done():
			return r, at, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// wireExchange asks server for name over TCP, waiting until it answers
// with records, and returns the answer and its size on the wire.
func wireExchange(server, name string, qtype uint16) (*dns.Msg, int, error) {
	deadline := time.Now().Add(answerTimeout)
	for {
		r, n, err := wireOnce(server, name, qtype)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			return r, n, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("no records: %s", dns.RcodeToString[r.Rcode])
			}
			return nil, 0, fmt.Errorf("%s %s @%s over TCP: %w", dns.TypeToString[qtype], name, server, err)
		}
		time.Sleep(pollInterval)
	}
}

func wireOnce(server, name string, qtype uint16) (*dns.Msg, int, error) {
	co, err := dns.DialTimeout("tcp", server, 2*time.Second)
	if err != nil {
		return nil, 0, err
	}
	defer co.Close()
	if err := co.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, 0, err
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = true
	if err := co.WriteMsg(m); err != nil {
		return nil, 0, err
	}
	buf := make([]byte, dns.MaxMsgSize)
	n, err := co.Read(buf)
	if err != nil {
		return nil, 0, err
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf[:n]); err != nil {
		return nil, 0, fmt.Errorf("unpack %d bytes: %w", n, err)
	}
	return r, n, nil
}

// keyCount is the keys under a headless name X, by what they hold.
type keyCount struct {
	total int
	by    map[string]int
}

func (k keyCount) names() []string {
	return []string{"X (_all)", "SRV names (_pg._tcp)", "cluster-a's names", "cluster-b's names", "other"}
}

// settledKeys counts the keys under prefix (a headless name X) until the
// count has not changed for steady.
func settledKeys(ctx context.Context, cli *clientv3.Client, prefix string, steady time.Duration, deadline time.Time) (keyCount, error) {
	var last keyCount
	since := time.Now()
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return last, fmt.Errorf("list %s: %w", prefix, err)
		}
		k := keyCount{total: len(resp.Kvs), by: map[string]int{}}
		for _, kv := range resp.Kvs {
			first, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix), "/")
			switch first {
			case "_all":
				first = "X (_all)"
			case "_tcp":
				first = "SRV names (_pg._tcp)"
			case lab.ClusterA, lab.ClusterB:
				first += "'s names"
			default:
				first = "other"
			}
			k.by[first]++
		}
		if k.total != last.total {
			last, since = k, time.Now()
		} else if time.Since(since) >= steady {
			return k, nil
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("keys under %s never settled (last %d)", prefix, last.total)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
