package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Lab benchmarks run only when XCC_BENCH is set; `make e2e` skips them
// before they touch the lab. They measure and report; they fail only when
// a measurement cannot complete (a change never arrives, a size never
// converges), never because a figure misses its goal. XCC_BENCH_OUT, when
// set, names a file their tables are appended to.
//
// They change the shared lab (the scale benchmark leaves its Clusters
// behind): suite in main_test.go runs them after the tests that expect it
// unchanged; run them on their own: go test -run '^TestE2E$/^Bench'.
const (
	benchEnv    = "XCC_BENCH"
	benchOutEnv = "XCC_BENCH_OUT"

	// benchQPS is the client-side rate limit of the benchmarks' own API
	// clients: client-go's default (5 per second) would make creating
	// objects, not the system under test, the slow part.
	benchQPS   = 500
	benchBurst = 1000
	// benchWorkers is how many objects are created at once.
	benchWorkers = 8
)

// requireBench skips unless benchmarks were asked for, and otherwise
// applies the walkthrough (idempotent) and waits until cluster-b's cluster
// DNS answers cluster-a's gateway.
func requireBench(t *testing.T) *lab.WorkloadDNS {
	t.Helper()
	if os.Getenv(benchEnv) == "" {
		t.Skipf("a benchmark: set %s=1", benchEnv)
	}
	b := requireDNS(t)
	if err := theLab.ApplyWalkthrough(ctxFor(t)); err != nil {
		t.Fatalf("apply the walkthrough: %v", err)
	}
	expect(t, b.ClusterDNSAddr, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess,
		lab.DefaultGateways()[lab.ClusterA].IPs...)
	return b
}

// report prints a benchmark's table and appends it to $XCC_BENCH_OUT.
func report(t *testing.T, table string) {
	t.Helper()
	t.Log("\n" + table)
	path := os.Getenv(benchOutEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(table + "\n"); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// benchClients are clients of c without client-go's default rate limit.
type benchClients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

func newBenchClients(c *lab.Cluster) (benchClients, error) {
	return newClientsAt(c, benchQPS, benchBurst)
}

// newClientsAt are clients of c held to qps requests a second (burst),
// each client on its own.
func newClientsAt(c *lab.Cluster, qps float32, burst int) (benchClients, error) {
	return newClientsLimited(c, qps, burst, nil)
}

// newClientsLimited are clients of c held to qps requests a second
// (burst), all together by limiter when it is not nil.
func newClientsLimited(c *lab.Cluster, qps float32, burst int, limiter flowcontrol.RateLimiter) (benchClients, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = qps, burst, limiter
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return benchClients{}, fmt.Errorf("clientset of %s: %w", c.Name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return benchClients{}, fmt.Errorf("dynamic client of %s: %w", c.Name, err)
	}
	return benchClients{kube: kube, dyn: dyn}, nil
}

// benchCluster is a Cluster API Cluster the benchmarks create on the
// management cluster, as Cluster API would after provisioning: the Cluster
// (provisioned status) and its <name>-kubeconfig Secret pointing at the
// real workload API server w.
type benchCluster struct {
	namespace, name string
	labels          map[string]any
	w               *lab.Cluster
}

func (m benchClients) createCluster(ctx context.Context, c benchCluster) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lab.ClusterGVR.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": c.name, "namespace": c.namespace, "labels": c.labels},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": theLab.ControlPlaneHostOf(c.w.Name), "port": int64(c.w.Port)},
		},
	}}
	clusters := m.dyn.Resource(lab.ClusterGVR).Namespace(c.namespace)
	if _, err := clusters.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Cluster %s/%s: %w", c.namespace, c.name, err)
	}
	status := `{"status":{"phase":"Provisioned","initialization":{"infrastructureProvisioned":true,"controlPlaneInitialized":true}}}`
	if _, err := clusters.Patch(ctx, c.name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set status of Cluster %s/%s: %w", c.namespace, c.name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      c.name + "-kubeconfig",
			Namespace: c.namespace,
			Labels:    map[string]string{"cluster.x-k8s.io/cluster-name": c.name},
		},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{lab.KubeconfigSecretKey: c.w.KubeconfigBytes},
	}
	if _, err := m.kube.CoreV1().Secrets(c.namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s/%s: %w", c.namespace, secret.Name, err)
	}
	return nil
}

// deleteCluster deletes a Cluster and its kubeconfig Secret (gone already
// is fine).
func (m benchClients) deleteCluster(ctx context.Context, namespace, name string) error {
	err := m.dyn.Resource(lab.ClusterGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Cluster %s/%s: %w", namespace, name, err)
	}
	err = m.kube.CoreV1().Secrets(namespace).Delete(ctx, name+"-kubeconfig", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s/%s-kubeconfig: %w", namespace, name, err)
	}
	return nil
}

// ensureNamespace creates namespace name (there already is fine).
func (m benchClients) ensureNamespace(ctx context.Context, name string) error {
	_, err := m.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// inParallel runs do(0..n-1) on benchWorkers goroutines and returns the
// first error; after an error no new item starts.
func inParallel(n int, do func(i int) error) error {
	return inParallelOn(benchWorkers, n, do)
}

// inParallelOn is inParallel on workers goroutines.
func inParallelOn(workers, n int, do func(i int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next == n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := do(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// procCPU is the user + system CPU time of process pid so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of %d: %w", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("CPU time of %d: unexpected %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("CPU time of %d: unexpected %q", pid, b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil // USER_HZ is 100
}

// procPeakRSS is the peak resident memory (VmHWM) of process pid, bytes.
func procPeakRSS(pid int) (int64, error) { return procMemory(pid, "VmHWM:") }

// procRSS is the resident memory (VmRSS) of process pid now, bytes.
func procRSS(pid int) (int64, error) { return procMemory(pid, "VmRSS:") }

// procMemory reads one kB field of /proc/<pid>/status, in bytes.
func procMemory(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("memory of %d: %q: %w", pid, l, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("memory of %d: no %s", pid, field)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// metricValue reads one unlabelled counter or gauge from a Prometheus
// text endpoint (the controller's /metrics); labelled series of the name
// are summed.
func metricValue(ctx context.Context, url, name string) (float64, error) {
	return metricValueOf(ctx, url, name, nil)
}

// errNoMetric: the endpoint has no series of the name.
var errNoMetric = errors.New("no such metric")

// metricValueOf is metricValue of the series whose labels (the text
// between the braces, "" for none) keep accepts; nil keeps every one.
func metricValueOf(ctx context.Context, url, name string, keep func(labels string) bool) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("request %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // another metric whose name starts with name
		}
		if keep != nil {
			labels := ""
			if rest[0] == '{' {
				labels, _, _ = strings.Cut(rest[1:], "}")
			}
			if !keep(labels) {
				found = true
				continue
			}
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", url, line, err)
		}
		sum, found = sum+v, true
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", url, err)
	}
	if !found {
		return 0, fmt.Errorf("%s: %w %s", url, errNoMetric, name)
	}
	return sum, nil
}

// percentile returns the p-th percentile (nearest rank) of d.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// serveEtcdClient is a client of the serve etcd of b, closed when the
// test ends.
func serveEtcdClient(t *testing.T, b *lab.WorkloadDNS) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{b.EtcdClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client for %s: %v", b.EtcdClientURL, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
