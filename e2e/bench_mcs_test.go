package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// The latency benchmark exports one Service at a time from cluster-a
	// to a ClusterSet of cluster-a and cluster-b: mcsQuietRounds whose
	// name nobody asks before it is written, then mcsPolledRounds that a
	// client asks every mcsPoll from the export on.
	mcsQuietRounds  = 30
	mcsPolledRounds = 10
	mcsPoll         = 100 * time.Millisecond
	// mcsBenchNamespace holds the benchmarks' Services in every member.
	mcsBenchNamespace = "bench-mcs"
	// mcsChangeTimeout is how long one export may take to be answered.
	mcsChangeTimeout = time.Minute

	// The scale benchmark (its size: bench_mcs_size_test.go): exports
	// spread over the lab's three workload clusters and more API servers,
	// in namespaces that exist in every member; every mcsHeadlessEvery-th
	// is headless. mcsScaleContext bounds the whole run, mcsScaleTimeout
	// the fill and the deletion, mcsCleanupTimeout the cleanup, each at
	// the default size and scaled with it (mcsScaleSize.scaled), as
	// mcsChangeTimeout is for the single exports.
	mcsHeadlessEvery  = 10
	mcsScaleLabel     = "xcc-bench-mcs"
	mcsScaleContext   = 90 * time.Minute
	mcsScaleTimeout   = 40 * time.Minute
	mcsCleanupTimeout = 20 * time.Minute
	// mcsMoreRounds is how many single exports are timed with the fill
	// in place.
	mcsMoreRounds = 5
	// mcsProfileSeconds is how long the controller's CPU is profiled
	// from the first of those.
	mcsProfileSeconds = 30
	// mcsPollEvery is how often the scale benchmark counts what the
	// members hold.
	mcsPollEvery = time.Second

	// mcsSkyDNSPrefix is where serve writes the names of imports,
	// <svc>.<ns>.svc.clusterset.local: /skydns/local/clusterset/svc/<ns>/<svc>/...
	mcsSkyDNSPrefix = "/skydns/local/clusterset/svc/"
	// mcsImportSelector selects the controller's ServiceImports, derived
	// Services and EndpointSlices in a member.
	mcsImportSelector = "app.kubernetes.io/managed-by=xcc-dns-controller,multicluster.kubernetes.io/service-name"
	// clusterSetSliceSelector selects the contract slices serve answers
	// the clusterset zone from.
	clusterSetSliceSelector = "endpointslice.kubernetes.io/managed-by=xcc-dns-controller,xcc-dns.io/record=clusterset"
	goroutinesMetric        = "go_goroutines"
	liveHeapMetric          = "go_gc_heap_live_bytes"
	requestsMetric          = "xcc_controller_workload_requests_total"
	rateLimitWaitMetric     = "xcc_controller_workload_rate_limit_wait_seconds_total"
)

// mcsTimes are the moments of one export in the latency benchmark.
type mcsTimes struct {
	floor                      time.Duration // the floor measured just before it
	imported, inEtcd, answered time.Duration
}

// testBenchMCSLatency measures the time from a ServiceExport in
// cluster-a to cluster-b's answer of the import's name, and its parts:
// the ServiceImport with its ClusterSetIP in cluster-b (the controller),
// the record in cluster-b's serve etcd (serve) and the answer of
// cluster-b's cluster DNS. The baseline, measured before each export, is
// the floor of any aggregator: a create in cluster-a seen by a watch,
// then a create in cluster-b seen by a watch.
func testBenchMCSLatency(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	a, bw := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	aC, err := newBenchClients(a)
	if err != nil {
		t.Fatal(err)
	}
	bC, err := newBenchClients(bw)
	if err != nil {
		t.Fatal(err)
	}
	const set = "bench-latency"
	n := mcsQuietRounds + mcsPolledRounds
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("lat-%03d", i)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, theLab.Management, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		if err := deleteBenchExports(ctx, aC, mcsBenchNamespace, names); err != nil {
			t.Error(err)
		}
		for _, c := range []benchClients{aC, bC} {
			err := c.kube.CoreV1().ConfigMaps(mcsBenchNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			if err != nil {
				t.Errorf("delete the floor's ConfigMaps: %v", err)
			}
		}
	})
	for _, c := range []benchClients{aC, bC} {
		if err := c.ensureNamespace(ctx, mcsBenchNamespace); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range names {
		if err := aC.createService(ctx, benchService(mcsBenchNamespace, name, false, i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, theLab.Management, lab.ClusterSetGVR, lab.ClusterSetYAML(set)); err != nil {
		t.Fatal(err)
	}
	cli := serveEtcdClient(t, b)
	seen := newMCSSeen()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go seen.etcd(cli.Watch(wctx, mcsSkyDNSPrefix+mcsBenchNamespace+"/", clientv3.WithPrefix()))
	iw, err := bC.dyn.Resource(lab.ServiceImportGVR).Namespace(mcsBenchNamespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch ServiceImports in %s: %v", lab.ClusterB, err)
	}
	go seen.imports(iw)

	floor := newFloor(ctx, aC, bC)
	defer floor.stop()
	var quiet, polled []mcsTimes
	for i, name := range names {
		f, err := floor.measure(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		ask := i >= mcsQuietRounds
		times, err := timeExport(ctx, aC, b.ClusterDNSAddr, seen, name, ask)
		if err != nil {
			t.Fatal(err)
		}
		times.floor = f
		if ask {
			polled = append(polled, times)
		} else {
			quiet = append(quiet, times)
		}
	}
	report(t, mcsLatencyTable(quiet, polled))
}

// timeExport exports name from cluster-a and waits for cluster-b's
// cluster DNS to answer it; with ask, a client asks every mcsPoll from
// the export on (and meets the negative cache), else the name is asked
// once its record is in cluster-b's etcd.
func timeExport(ctx context.Context, aC benchClients, dnsAddr string, seen *mcsSeen, name string, ask bool) (mcsTimes, error) {
	var times mcsTimes
	host := lab.ClusterSetHost(mcsBenchNamespace, name)
	start := time.Now()
	if err := aC.export(ctx, mcsBenchNamespace, name); err != nil {
		return times, err
	}
	deadline := start.Add(mcsChangeTimeout)
	for {
		if !ask {
			if _, ok := seen.inEtcd(name); !ok {
				if time.Now().After(deadline) {
					return times, fmt.Errorf("%s not in cluster-b's etcd %s after its export", host, mcsChangeTimeout)
				}
				time.Sleep(5 * time.Millisecond)
				continue
			}
		}
		r, err := lab.Query(dnsAddr, host, dns.TypeA)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(lab.Values(r, dns.TypeA)) > 0 {
			times.answered = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the last answer: %s", lab.Summary(r))
			}
			return times, fmt.Errorf("%s not answered %s after its export: %w", host, mcsChangeTimeout, err)
		}
		time.Sleep(mcsPoll)
	}
	imported, ok1 := seen.imported(name)
	inEtcd, ok2 := seen.inEtcd(name)
	if !ok1 || !ok2 {
		return times, fmt.Errorf("%s answered before its ServiceImport (%v) or record (%v) was seen", host, ok1, ok2)
	}
	times.imported, times.inEtcd = imported.Sub(start), inEtcd.Sub(start)
	return times, nil
}

// mcsSeen holds when each name was first seen in cluster-b: its
// ServiceImport with addresses, and its record in serve's etcd.
type mcsSeen struct {
	mu               sync.Mutex
	importAt, etcdAt map[string]time.Time
}

func newMCSSeen() *mcsSeen {
	return &mcsSeen{importAt: map[string]time.Time{}, etcdAt: map[string]time.Time{}}
}

func (s *mcsSeen) imported(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.importAt[name]
	return at, ok
}

func (s *mcsSeen) inEtcd(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.etcdAt[name]
	return at, ok
}

func (s *mcsSeen) imports(w watch.Interface) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		now := time.Now()
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		if ips, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "ips"); len(ips) == 0 {
			continue
		}
		s.mu.Lock()
		if _, ok := s.importAt[u.GetName()]; !ok {
			s.importAt[u.GetName()] = now
		}
		s.mu.Unlock()
	}
}

func (s *mcsSeen) etcd(wc clientv3.WatchChan) {
	for resp := range wc {
		now := time.Now()
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			// <prefix><ns>/<svc>/<leaf>
			rest := strings.TrimPrefix(string(ev.Kv.Key), mcsSkyDNSPrefix+mcsBenchNamespace+"/")
			name, _, _ := strings.Cut(rest, "/")
			s.mu.Lock()
			if _, ok := s.etcdAt[name]; !ok {
				s.etcdAt[name] = now
			}
			s.mu.Unlock()
		}
	}
}

// floor measures the baseline: a ConfigMap created in cluster-a until a
// watch of cluster-a has it, then one created in cluster-b until a watch
// of cluster-b has it.
type floor struct {
	a, b         benchClients
	wa, wb       watch.Interface
	seenA, seenB chan string
}

func newFloor(ctx context.Context, a, b benchClients) *floor {
	f := &floor{a: a, b: b, seenA: make(chan string, 16), seenB: make(chan string, 16)}
	f.wa, _ = a.kube.CoreV1().ConfigMaps(mcsBenchNamespace).Watch(ctx, metav1.ListOptions{})
	f.wb, _ = b.kube.CoreV1().ConfigMaps(mcsBenchNamespace).Watch(ctx, metav1.ListOptions{})
	for _, p := range []struct {
		w  watch.Interface
		ch chan string
	}{{f.wa, f.seenA}, {f.wb, f.seenB}} {
		if p.w == nil {
			continue
		}
		go func() {
			for ev := range p.w.ResultChan() {
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added {
					p.ch <- cm.Name
				}
			}
		}()
	}
	return f
}

func (f *floor) stop() {
	for _, w := range []watch.Interface{f.wa, f.wb} {
		if w != nil {
			w.Stop()
		}
	}
}

func (f *floor) measure(ctx context.Context, i int) (time.Duration, error) {
	if f.wa == nil || f.wb == nil {
		return 0, fmt.Errorf("watch ConfigMaps in %s", mcsBenchNamespace)
	}
	name := fmt.Sprintf("floor-%03d", i)
	start := time.Now()
	for _, s := range []struct {
		c    benchClients
		seen chan string
	}{{f.a, f.seenA}, {f.b, f.seenB}} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mcsBenchNamespace}}
		if _, err := s.c.kube.CoreV1().ConfigMaps(mcsBenchNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("create ConfigMap %s: %w", name, err)
		}
		if err := waitWatched(ctx, s.seen, name); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func waitWatched(ctx context.Context, ch chan string, name string) error {
	timeout := time.After(mcsChangeTimeout)
	for {
		select {
		case got := <-ch:
			if got == name {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("ConfigMap %s not seen by a watch in %s", name, mcsChangeTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func mcsLatencyTable(quiet, polled []mcsTimes) string {
	pick := func(ts []mcsTimes, f func(mcsTimes) time.Duration) []time.Duration {
		out := make([]time.Duration, len(ts))
		for i, t := range ts {
			out[i] = f(t)
		}
		return out
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "mcs latency: a ServiceExport in cluster-a until cluster-b answers %s (ClusterSet of cluster-a and cluster-b)\n",
		lab.ClusterSetHost(mcsBenchNamespace, "<svc>"))
	fmt.Fprintf(&tb, "%-52s %8s %8s %8s %8s\n", "", "p50", "p99", "max", "p50/floor")
	floorP50 := percentile(pick(quiet, func(m mcsTimes) time.Duration { return m.floor }), 50)
	row := func(label string, d []time.Duration) {
		ratio := "-"
		if floorP50 > 0 {
			ratio = fmt.Sprintf("x%.1f", float64(percentile(d, 50))/float64(floorP50))
		}
		fmt.Fprintf(&tb, "%-52s %8s %8s %8s %8s\n", label, ms(percentile(d, 50)), ms(percentile(d, 99)), ms(percentile(d, 100)), ratio)
	}
	row(fmt.Sprintf("floor: watched create in a, then in b (%d)", len(quiet)), pick(quiet, func(m mcsTimes) time.Duration { return m.floor }))
	row("ServiceImport with its ClusterSetIP in cluster-b", pick(quiet, func(m mcsTimes) time.Duration { return m.imported }))
	row("record in cluster-b's serve etcd", pick(quiet, func(m mcsTimes) time.Duration { return m.inEtcd }))
	row("answer of cluster-b's cluster DNS, asked then", pick(quiet, func(m mcsTimes) time.Duration { return m.answered }))
	row(fmt.Sprintf("answer to a client asking every %s (%d)", mcsPoll, len(polled)), pick(polled, func(m mcsTimes) time.Duration { return m.answered }))
	fmt.Fprintf(&tb, "(one export at a time; the last row meets the negative answers the zone's cache keeps 5 s)\n")
	return tb.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// benchService is the exported Service name of the MCS benchmarks:
// ClusterSetIP with one port and two ready endpoints, or headless with
// two named pods; i picks its addresses in 198.19.0.0/16 (RFC 2544).
func benchService(namespace, name string, headless bool, i int) lab.ExportedService {
	s := lab.ExportedService{Namespace: namespace, Name: name, Headless: headless,
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}
	for p := range 2 {
		pod := lab.HeadlessPod{Address: fmt.Sprintf("198.19.%d.%d", 200+i/120, (i%120)*2+p+1), Ready: true}
		if headless {
			pod.Name = fmt.Sprintf("%s-%d", name, p)
		}
		s.Pods = append(s.Pods, pod)
	}
	return s
}

// createService creates the Service of s and its EndpointSlice, not yet
// exported.
func (m benchClients) createService(ctx context.Context, s lab.ExportedService) error {
	svc, slice := s.Objects()
	if _, err := m.kube.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s/%s: %w", s.Namespace, s.Name, err)
	}
	if _, err := m.kube.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create EndpointSlice %s/%s: %w", s.Namespace, slice.Name, err)
	}
	return nil
}

func (m benchClients) export(ctx context.Context, namespace, name string) error {
	_, err := m.dyn.Resource(lab.ServiceExportGVR).Namespace(namespace).Create(ctx, lab.ServiceExport(namespace, name), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceExport %s/%s: %w", namespace, name, err)
	}
	return nil
}

// deleteBenchExports deletes the ServiceExports, Services and lab
// EndpointSlices of names in namespace (gone already is fine). The lab
// runs no namespace controller, so namespaces are left, emptied.
func deleteBenchExports(ctx context.Context, m benchClients, namespace string, names []string) error {
	return inParallel(len(names), func(i int) error { return deleteBenchExport(ctx, m, namespace, names[i]) })
}

// deleteBenchExport deletes the ServiceExport, Service and lab
// EndpointSlice of namespace/name (gone already is fine).
func deleteBenchExport(ctx context.Context, m benchClients, namespace, name string) error {
	for _, del := range []func() error{
		func() error {
			return m.dyn.Resource(lab.ServiceExportGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		},
		func() error { return m.kube.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{}) },
		func() error {
			return m.kube.DiscoveryV1().EndpointSlices(namespace).Delete(ctx, name+"-lab", metav1.DeleteOptions{})
		},
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s/%s: %w", namespace, name, err)
		}
	}
	return nil
}
