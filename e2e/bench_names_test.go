package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// namesCostServices is how many Services the names benchmark creates
	// in cluster-a; namesCostClaiming of them claim a name.
	namesCostServices  = 1000
	namesCostClaiming  = 10
	namesCostNamespace = "bench-names"
)

// testBenchNamesCost measures what spec.names costs per 1,000 Services
// in one workload cluster. It measures the controller's live heap (after
// a forced GC) and resident memory with names off, after turning names on
// for the walkthrough GatewayDNS, after creating 990 Services in cluster-a
// that claim nothing (ClusterIP Services shaped as kubectl apply leaves
// them: labels, selector, two ports, the last-applied annotation) and
// after 10 more, LoadBalancer Services annotated with the fqdn
// annotation, each with an address and a ready endpoint. Then: how long
// listing every Service of cluster-a takes, the time from turning names
// off and on again until status lists every claimed name Published (the
// informer's list and the first sync), and the time from creating one
// more annotated Service until cluster-b's serve has its record in etcd
// and until cluster-b's cluster DNS answers it.
func testBenchNamesCost(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	a := theLab.Workload(lab.ClusterA)
	aClients, err := newBenchClients(a)
	if err != nil {
		t.Fatal(err)
	}
	cli := serveEtcdClient(t, b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := setNames(ctx, false); err != nil {
			t.Error(err)
		}
		if err := lab.DeleteNamespace(ctx, a, namesCostNamespace); err != nil {
			t.Error(err)
		}
	})
	if err := setNames(ctx, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the names informer, if any, stopped
	var mem [4]struct{ heap, rss int64 }
	measure := func(i int) {
		t.Helper()
		time.Sleep(3 * time.Second) // the sync and its writes land
		var err error
		if mem[i].heap, mem[i].rss, err = controllerMemory(ctx); err != nil {
			t.Fatal(err)
		}
	}
	measure(0)
	// Names on, no Service claiming anything yet: the informer per cluster.
	if err := setNames(ctx, true); err != nil {
		t.Fatal(err)
	}
	measure(1)
	start := time.Now()
	if err := createNamesServices(ctx, aClients, a, false); err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	measure(2)
	if err := createNamesServices(ctx, aClients, a, true); err != nil {
		t.Fatal(err)
	}
	waitBenchNames(ctx, t)
	measure(3)
	start = time.Now()
	list, err := aClients.kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listTook := time.Since(start)
	t.Logf("%d Services created in %s; listing all %d took %s", namesCostServices, created.Round(time.Millisecond), len(list.Items), listTook.Round(time.Millisecond))

	// Names off and on again: the informer lists the 1,000 Services, and
	// every claimed name is Published again.
	if err := setNames(ctx, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	start = time.Now()
	if err := setNames(ctx, true); err != nil {
		t.Fatal(err)
	}
	waitBenchNames(ctx, t)
	enabledTook := time.Since(start)

	// One more annotated Service: until serve's etcd in cluster-b has it,
	// and until cluster-b's cluster DNS answers it.
	const label, ip = "bench-new", "192.0.2.99"
	name := lab.NamesHost(label, lab.ClusterNamespace)
	key := "/skydns/" + strings.Join(reverse(strings.Split(name, ".")), "/") + "/"
	start = time.Now()
	if err := lab.CreateClaimingService(ctx, a, namesCostNamespace, label, label, ip); err != nil {
		t.Fatal(err)
	}
	var etcdTook time.Duration
	for {
		resp, err := cli.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err == nil && resp.Count > 0 {
			etcdTook = time.Since(start)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never reached cluster-b's etcd", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var dnsTook time.Duration
	for {
		r, err := lab.Query(b.ClusterDNSAddr, name, dns.TypeA)
		if err == nil && r.Rcode == dns.RcodeSuccess && strings.Join(lab.Values(r, dns.TypeA), ",") == ip {
			dnsTook = time.Since(start)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never answered by cluster-b's cluster DNS", name)
		}
		time.Sleep(5 * time.Millisecond)
	}

	load, _ := os.ReadFile("/proc/loadavg")
	var tb strings.Builder
	fmt.Fprintf(&tb, "Service names: the cost of spec.names per %d Services in one workload cluster (%d claiming a name)\n", namesCostServices, namesCostClaiming)
	row := func(what string, i int) {
		fmt.Fprintf(&tb, "| %s | %+.2f MiB | %+.2f MiB |\n", what, mib(mem[i].heap-mem[i-1].heap), mib(mem[i].rss-mem[i-1].rss))
	}
	fmt.Fprintf(&tb, "| controller memory | live heap after GC | resident (VmRSS) |\n|---|---|---|\n")
	fmt.Fprintf(&tb, "| names off | %.2f MiB | %.2f MiB |\n", mib(mem[0].heap), mib(mem[0].rss))
	row("names on (a Service informer in cluster-a and cluster-b)", 1)
	row(fmt.Sprintf("%d Services created in cluster-a, none claiming", namesCostServices-namesCostClaiming), 2)
	row(fmt.Sprintf("%d LoadBalancer Services claiming a name, each with an address and a ready endpoint", namesCostClaiming), 3)
	fmt.Fprintf(&tb, "\n| figure | value |\n|---|---|\n")
	fmt.Fprintf(&tb, "| list of every Service of cluster-a (%d) | %s |\n", len(list.Items), listTook.Round(time.Millisecond))
	fmt.Fprintf(&tb, "| names on, %d Services in cluster-a -> %d names Published in status (informer list and first sync) | %s |\n", len(list.Items), namesCostClaiming, enabledTook.Round(time.Millisecond))
	fmt.Fprintf(&tb, "| one more annotated Service -> record in cluster-b's serve etcd | %s |\n", etcdTook.Round(time.Millisecond))
	fmt.Fprintf(&tb, "| one more annotated Service -> answered by cluster-b's cluster DNS | %s |\n", dnsTook.Round(time.Millisecond))
	fmt.Fprintf(&tb, "(load average at the end: %s)\n", strings.TrimSpace(string(load)))
	report(t, tb.String())
}

// createNamesServices creates in namesCostNamespace of w the
// namesCostServices-namesCostClaiming Services that claim nothing, or
// (claiming) the namesCostClaiming ones claiming
// bench-<i>.dev-team.names.xcc.test with an address and a ready endpoint.
func createNamesServices(ctx context.Context, c benchClients, w *lab.Cluster, claiming bool) error {
	from, to := namesCostClaiming, namesCostServices
	if claiming {
		from, to = 0, namesCostClaiming
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namesCostNamespace}}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s on %s: %w", namesCostNamespace, w.Name, err)
	}
	work := make(chan int)
	errs := make(chan error, benchWorkers)
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := createNamesService(ctx, c, w, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
loop:
	for i := from; i < to; i++ {
		select {
		case work <- i:
		case err = <-errs:
			break loop
		}
	}
	close(work)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err = <-errs:
	default:
	}
	return err
}

// waitBenchNames waits until status lists every claimed bench name
// Published with its one source healthy.
func waitBenchNames(ctx context.Context, t *testing.T) {
	t.Helper()
	for {
		got, err := lab.GatewayDNSNames(ctx, theLab.Management, lab.ClusterNamespace, lab.GatewayDNSName)
		n := 0
		for name, st := range got {
			if strings.HasPrefix(name, "bench-") && st.Reason == "Published" && st.HealthySources == 1 {
				n++
			}
		}
		if err == nil && n == namesCostClaiming {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("claimed names published: %d of %d (%v)", n, namesCostClaiming, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func createNamesService(ctx context.Context, c benchClients, w *lab.Cluster, i int) error {
	name := "svc-" + strconv.Itoa(i)
	if i < namesCostClaiming {
		name = "bench-" + strconv.Itoa(i)
		return lab.CreateClaimingService(ctx, w, namesCostNamespace, name, name, fmt.Sprintf("192.0.2.%d", 100+i))
	}
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "bench", "tier": "backend"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namesCostNamespace, Name: name, Labels: labels, Annotations: map[string]string{
			// What kubectl apply leaves on every Service it made.
			"kubectl.kubernetes.io/last-applied-configuration": fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{},"labels":{"app.kubernetes.io/name":%q,"app.kubernetes.io/part-of":"bench","tier":"backend"},"name":%q,"namespace":%q},"spec":{"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080},{"name":"metrics","port":9090,"protocol":"TCP","targetPort":9090}],"selector":{"app.kubernetes.io/name":%q}}}`, name, name, namesCostNamespace, name),
		}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/name": name}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
			{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)},
		}},
	}
	if _, err := c.kube.CoreV1().Services(namesCostNamespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		return fmt.Errorf("Service %s/%s on %s: %w", namesCostNamespace, name, w.Name, err)
	}
	return nil
}

// controllerMemory forces a GC in the controller (its pprof heap profile
// with gc=1) and returns its live heap (go_memstats_heap_alloc_bytes) and
// resident memory (VmRSS).
func controllerMemory(ctx context.Context) (heap, rss int64, err error) {
	url := "http://" + theLab.ControllerHTTP + "/debug/pprof/heap?gc=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("GET %s: %w", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h, err := metricValue(ctx, "http://"+theLab.ControllerHTTP+"/metrics", "go_memstats_heap_alloc_bytes")
	if err != nil {
		return 0, 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", theLab.Controller.Pid()))
	if err != nil {
		return 0, 0, fmt.Errorf("memory of the controller: %w", err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("memory of the controller: %q: %w", l, err)
			}
			return int64(h), kb << 10, nil
		}
	}
	return 0, 0, fmt.Errorf("memory of the controller: no VmRSS")
}

// reverse returns labels in reverse order (an etcd key's path).
func reverse(labels []string) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[len(labels)-1-i] = l
	}
	return out
}
