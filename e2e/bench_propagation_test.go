package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// The propagation benchmark makes propagationNames x propagationRounds
	// load-balancer IP changes. Each gateway name waits out the record TTL
	// after each of its changes, so the names run side by side, their
	// first changes propagationStagger apart: 200 changes take about
	// propagationRounds x TTL, not 200 x TTL.
	propagationNames  = 40
	propagationRounds = 5
	// recordTTL is the TTL serve writes when a GatewayDNS sets none.
	recordTTL          = 30 * time.Second
	propagationStagger = (recordTTL + 2*time.Second) / propagationNames
	// propagationPoll is how often each name's goroutine asks cluster-b's
	// cluster DNS: the resolution of the end-to-end figure. 40 names at
	// this rate are 400 queries a second, nearly all cache hits.
	propagationPoll = 100 * time.Millisecond
	// changeTimeout is how long one change may take to reach etcd, and
	// then the DNS answers, before the benchmark fails.
	changeTimeout = 90 * time.Second

	// Goals: serve's etcd within a second; answers within the TTL the
	// caches may hold the old one for, plus 2 s.
	etcdGoal = time.Second
	dnsGoal  = recordTTL + 2*time.Second

	// benchLabel selects the benchmarks' Clusters.
	benchLabel = "xcc-bench"
	// benchGatewayNamespace holds the propagation benchmark's gateway
	// Services on cluster-a.
	benchGatewayNamespace = "xcc-bench"
	// benchSkyDNSPrefix is where serve writes every cluster's records.
	benchSkyDNSPrefix = "/skydns/test/xcc/clusters/"
)

// propagationName is one gateway name of the benchmark: a management
// namespace of its own holding a GatewayDNS, the Cluster "gw" it selects
// (kubeconfig: cluster-a) and an unselected Cluster "cluster-b" (kubeconfig:
// cluster-b), so each change is synced to two clusters, as in the
// walkthrough, however many names run; and on cluster-a the gateway
// Service the GatewayDNS names.
type propagationName struct {
	namespace string // on the management cluster
	service   string // in benchGatewayNamespace on cluster-a
	host      string // what a pod in cluster-b asks
}

func newPropagationName(i int) propagationName {
	ns := fmt.Sprintf("xcc-bench-%02d", i)
	return propagationName{
		namespace: ns,
		service:   fmt.Sprintf("envoy-%02d", i),
		host:      fmt.Sprintf("kuard.gateway.gw.%s.clusters.%s.", ns, lab.Zone),
	}
}

// address is the load-balancer address of name i after round r (0: the
// first one). 198.18.0.0/15 is for benchmarks (RFC 2544).
func address(i, r int) string { return fmt.Sprintf("198.18.%d.%d", i, r+1) }

// propagationChange is what was measured for one change.
type propagationChange struct {
	made     time.Time     // just before the Service status write
	primedAt time.Time     // when the cluster DNS last answered the old address
	primeTTL time.Duration // the TTL that answer carried
	inEtcd   time.Time     // serve's etcd had the new address
	inDNS    time.Time     // cluster-b's cluster DNS answered it
}

// testBenchPropagation changes the load-balancer address of gateway
// Services on cluster-a 200 times and measures, for each change, how long
// until cluster-b's serve has written the new address into its etcd, and
// until cluster-b's cluster DNS answers it. Right before each change the
// name is asked once, so both caches (the cluster DNS's and ours) hold the
// old answer with its whole TTL: the end-to-end figure is the longest a
// pod can be served the old address, with the shipped caches and TTL.
func testBenchPropagation(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	mgmt, err := newBenchClients(theLab.Management)
	if err != nil {
		t.Fatal(err)
	}
	a := theLab.Workload(lab.ClusterA)
	gwClients, err := newBenchClients(a)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]propagationName, propagationNames)
	for i := range names {
		names[i] = newPropagationName(i)
	}

	// Every address serve writes, and when it was first seen.
	cli := serveEtcdClient(t, b)
	seen := newFirstSeen()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go seen.watch(watchCtx, cli, benchSkyDNSPrefix)

	t.Cleanup(func() { removePropagationNames(t, mgmt, gwClients, names) })
	began := time.Now()
	if err := createPropagationNames(ctx, mgmt, gwClients, names); err != nil {
		t.Fatal(err)
	}
	// The first addresses are in serve's etcd: the names exist. Nothing has
	// asked for them yet, so each name's first question below is a miss in
	// both caches and fills them with the whole TTL.
	for i := range names {
		if _, err := seen.wait(ctx, address(i, 0), changeTimeout); err != nil {
			t.Fatalf("first address of %s: %v", names[i].host, err)
		}
	}
	t.Logf("%d gateway names in cluster-b's etcd %s after their objects were created",
		len(names), time.Since(began).Round(100*time.Millisecond))

	results := make([][]propagationChange, len(names))
	errs := make([]error, len(names))
	start := time.Now()
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(time.Duration(i) * propagationStagger)))
			results[i], errs[i] = runPropagationName(ctx, gwClients, b.ClusterDNSAddr, seen, names[i], i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)

	var toEtcd, toDNS, pastTTL []time.Duration
	for _, rs := range results {
		for _, c := range rs {
			toEtcd = append(toEtcd, c.inEtcd.Sub(c.made))
			toDNS = append(toDNS, c.inDNS.Sub(c.made))
			pastTTL = append(pastTTL, c.inDNS.Sub(c.primedAt.Add(c.primeTTL)))
		}
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "propagation: %d load-balancer IP changes on cluster-a (%d gateway Services x %d, started %s apart), in %s\n",
		len(toDNS), propagationNames, propagationRounds, propagationStagger.Round(10*time.Millisecond), took.Round(time.Second))
	fmt.Fprintf(&tb, "record TTL %s, shipped caches, each name asked once just before its change\n", recordTTL)
	fmt.Fprintf(&tb, "%-46s %9s %9s %9s  %s\n", "until", "p50", "p99", "max", "goal")
	row := func(what string, d []time.Duration, goal string) {
		fmt.Fprintf(&tb, "%-46s %9s %9s %9s  %s\n", what,
			fmtDuration(percentile(d, 50)), fmtDuration(percentile(d, 99)), fmtDuration(percentile(d, 100)), goal)
	}
	row("cluster-b's serve wrote it to its etcd", toEtcd, goalText("p99", percentile(toEtcd, 99), etcdGoal, "<"))
	row("cluster-b's cluster DNS answered it", toDNS, goalText("max", percentile(toDNS, 100), dnsGoal, "<="))
	row("  of which after the cached answer's TTL ended", pastTTL, "")
	fmt.Fprintf(&tb, "(a change is timed from just before its Service status write; serve's etcd is watched; each name is asked every %s\n", propagationPoll)
	fmt.Fprintf(&tb, " by its own goroutine; TTLs are whole seconds, so the last row can read up to 1 s high)\n")
	report(t, tb.String())
}

// runPropagationName makes propagationRounds changes of one name's gateway
// address, one after the other, each timed to serve's etcd and to the
// cluster DNS's answer.
func runPropagationName(ctx context.Context, gw benchClients, server string, seen *firstSeen, n propagationName, i int) ([]propagationChange, error) {
	var out []propagationChange
	for r := 1; r <= propagationRounds; r++ {
		old, addr := address(i, r-1), address(i, r)
		// Prime: the cluster DNS answers the old address, so it and our
		// CoreDNS behind it have it cached.
		primed, err := lab.Query(server, n.host, dns.TypeA)
		if err != nil {
			return out, fmt.Errorf("prime %s: %w", n.host, err)
		}
		primedAt := time.Now()
		if got := lab.Values(primed, dns.TypeA); !slices.Equal(got, []string{old}) {
			return out, fmt.Errorf("prime %s: want %s, got %s", n.host, old, lab.Summary(primed))
		}
		c := propagationChange{primedAt: primedAt, primeTTL: time.Duration(primed.Answer[0].Header().Ttl) * time.Second}

		c.made = time.Now()
		if err := setBenchGateway(ctx, gw, n.service, addr); err != nil {
			return out, err
		}
		if c.inEtcd, err = seen.wait(ctx, addr, changeTimeout); err != nil {
			return out, fmt.Errorf("%s -> %s in cluster-b's etcd: %w", n.host, addr, err)
		}
		if c.inDNS, err = waitDNSAddress(ctx, server, n.host, addr, old, c.made.Add(changeTimeout)); err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// waitDNSAddress asks server for host every propagationPoll until it
// answers addr, and returns when that answer came. Answers other than
// addr and old fail at once: nothing else was ever published.
func waitDNSAddress(ctx context.Context, server, host, addr, old string, deadline time.Time) (time.Time, error) {
	_, at, err := pollA(ctx, server, host, propagationPoll, deadline, func(got []string) (bool, error) {
		switch {
		case slices.Equal(got, []string{addr}):
			return true, nil
		case !slices.Equal(got, []string{old}):
			return false, fmt.Errorf("want %s or the old %s", addr, old)
		}
		return false, nil
	})
	if err != nil {
		return at, fmt.Errorf("waiting for %s: %w", addr, err)
	}
	return at, nil
}

// pollA asks server for host (A) every interval until done accepts the
// addresses of an answer, and returns that answer and when it came. An
// error of done ends the wait at once (an answer that was never
// published); a failed exchange is retried until deadline.
func pollA(ctx context.Context, server, host string, interval time.Duration, deadline time.Time, done func(got []string) (bool, error)) (*dns.Msg, time.Time, error) {
	var last string
	for {
		r, err := lab.Query(server, host, dns.TypeA)
		at := time.Now()
		if err == nil {
			ok, err := done(lab.Values(r, dns.TypeA))
			if err != nil {
				return r, at, fmt.Errorf("A %s: %s: %w", host, lab.Summary(r), err)
			}
			if ok {
				return r, at, nil
			}
			last = lab.Summary(r)
		} else {
			last = err.Error()
		}
		if at.After(deadline) {
			return r, at, fmt.Errorf("A %s: not as wanted by %s; last: %s", host, deadline.Format(time.TimeOnly), last)
		}
		select {
		case <-ctx.Done():
			return r, at, fmt.Errorf("A %s: %w", host, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// firstSeen records when each address first appeared in an etcd.
type firstSeen struct {
	mu sync.Mutex
	at map[string]time.Time
}

func newFirstSeen() *firstSeen { return &firstSeen{at: map[string]time.Time{}} }

// watch records the host of every record put under prefix until ctx ends.
// The time is when the event arrived: watch events come within
// milliseconds of the write, where polling would add its interval.
func (f *firstSeen) watch(ctx context.Context, cli *clientv3.Client, prefix string) {
	for resp := range cli.Watch(ctx, prefix, clientv3.WithPrefix()) {
		now := time.Now()
		for _, ev := range resp.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			var rec struct {
				Host string `json:"host"`
			}
			if json.Unmarshal(ev.Kv.Value, &rec) != nil || rec.Host == "" {
				continue
			}
			f.mu.Lock()
			if _, ok := f.at[rec.Host]; !ok {
				f.at[rec.Host] = now
			}
			f.mu.Unlock()
		}
	}
}

// wait returns when addr was first seen, waiting up to timeout for it.
func (f *firstSeen) wait(ctx context.Context, addr string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		f.mu.Lock()
		at, ok := f.at[addr]
		f.mu.Unlock()
		if ok {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s not written within %s", addr, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// createPropagationNames creates every name's objects (see
// propagationName), with each gateway at its first address.
func createPropagationNames(ctx context.Context, mgmt, gw benchClients, names []propagationName) error {
	if err := gw.ensureNamespace(ctx, benchGatewayNamespace); err != nil {
		return fmt.Errorf("on %s: %w", lab.ClusterA, err)
	}
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	return inParallel(len(names), func(i int) error {
		n := names[i]
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: n.service, Namespace: benchGatewayNamespace},
			Spec: corev1.ServiceSpec{
				Type:                          corev1.ServiceTypeLoadBalancer,
				AllocateLoadBalancerNodePorts: new(false),
				Ports:                         []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			},
		}
		if _, err := gw.kube.CoreV1().Services(benchGatewayNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Service %s/%s on %s: %w", benchGatewayNamespace, n.service, lab.ClusterA, err)
		}
		if err := setBenchGateway(ctx, gw, n.service, address(i, 0)); err != nil {
			return err
		}
		if err := mgmt.ensureNamespace(ctx, n.namespace); err != nil {
			return fmt.Errorf("on %s: %w", lab.Management, err)
		}
		for _, c := range []benchCluster{
			{namespace: n.namespace, name: "gw", labels: map[string]any{benchLabel: "propagation"}, w: a},
			{namespace: n.namespace, name: lab.ClusterB, w: b},
		} {
			if err := mgmt.createCluster(ctx, c); err != nil {
				return err
			}
		}
		gd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": lab.GatewayDNSGVR.GroupVersion().String(),
			"kind":       "GatewayDNS",
			"metadata":   map[string]any{"name": "bench", "namespace": n.namespace},
			"spec": map[string]any{
				"clusterSelector": map[string]any{"matchLabels": map[string]any{benchLabel: "propagation"}},
				"service":         benchGatewayNamespace + "/" + n.service,
				"resolutionType":  "loadBalancer",
			},
		}}
		if _, err := mgmt.dyn.Resource(lab.GatewayDNSGVR).Namespace(n.namespace).Create(ctx, gd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create GatewayDNS %s/bench: %w", n.namespace, err)
		}
		return nil
	})
}

// setBenchGateway sets a benchmark Service's load-balancer address, as a
// load balancer does, in one write.
func setBenchGateway(ctx context.Context, gw benchClients, service, addr string) error {
	patch := fmt.Sprintf(`{"status":{"loadBalancer":{"ingress":[{"ip":%q,"ipMode":"VIP"}]}}}`, addr)
	if _, err := gw.kube.CoreV1().Services(benchGatewayNamespace).Patch(ctx, service, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set load-balancer address of %s/%s on %s to %s: %w", benchGatewayNamespace, service, lab.ClusterA, addr, err)
	}
	return nil
}

// removePropagationNames deletes the GatewayDNS objects first and waits
// until the controller has removed their slices (its finalizer), then the
// Clusters, Secrets and Services, so the next benchmark starts from the
// walkthrough. The namespaces stay: the lab runs no namespace controller
// to finish deleting them.
func removePropagationNames(t *testing.T, mgmt, gw benchClients, names []propagationName) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gds := func(ns string) dynamic.ResourceInterface { return mgmt.dyn.Resource(lab.GatewayDNSGVR).Namespace(ns) }
	err := inParallel(len(names), func(i int) error {
		ns := names[i].namespace
		if err := gds(ns).Delete(ctx, "bench", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete GatewayDNS %s/bench: %w", ns, err)
		}
		for {
			_, err := gds(ns).Get(ctx, "bench", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("GatewayDNS %s/bench still there (finalizer): %w", ns, ctx.Err())
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, c := range []string{"gw", lab.ClusterB} {
			if err := mgmt.deleteCluster(ctx, ns, c); err != nil {
				return err
			}
		}
		err := gw.kube.CoreV1().Services(benchGatewayNamespace).Delete(ctx, names[i].service, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Service %s/%s on %s: %w", benchGatewayNamespace, names[i].service, lab.ClusterA, err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("remove the propagation benchmark's objects: %v", err)
	}
}

// goalText says whether figure (named what) meets goal under op.
func goalText(what string, figure, goal time.Duration, op string) string {
	met := figure < goal
	if op == "<=" {
		met = figure <= goal
	}
	verdict := "met"
	if !met {
		verdict = "NOT met"
	}
	return fmt.Sprintf("%s %s %s: %s", what, op, fmtDuration(goal), verdict)
}

// fmtDuration shows milliseconds below a second and tenths of a second
// above.
func fmtDuration(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}
