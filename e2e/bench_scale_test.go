package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// scaleSizesEnv overrides defaultScaleSizes, e.g. "100,1000,10000".
	scaleSizesEnv     = "XCC_BENCH_SCALE"
	defaultScaleSizes = "100,1000"
	// scaleTimeout bounds the wait for one size to converge.
	scaleTimeout = 20 * time.Minute
	// scalePrefix names the Clusters the benchmark adds.
	scalePrefix = "scale-"
)

// TestBenchScale adds Cluster API Clusters, selected by the walkthrough's
// GatewayDNS, in steps up to each size (their kubeconfig Secrets point at
// the lab's real workload API servers in turn), and measures how long
// until cluster-b's serve has every new cluster's gateway in its etcd, what
// the controller and cluster-b's serve used (peak memory, CPU seconds) and
// the size of serve's etcd.
func TestBenchScale(t *testing.T) {
	b := requireBench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	sizes, err := scaleSizes()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{b.EtcdClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()

	var tb strings.Builder
	fmt.Fprintf(&tb, "scale: Clusters selected by one GatewayDNS, kubeconfigs pointing at %d real workload API servers\n", len(theLab.Workloads))
	fmt.Fprintf(&tb, "%8s %10s %12s %14s %14s %11s %11s %9s %9s\n",
		"clusters", "created in", "converged in", "controller MiB", "controller CPU", "serve MiB", "serve CPU", "etcd keys", "etcd MiB")
	created := 0
	for _, n := range sizes {
		ctlCPU0, err := procCPU(theLab.Controller.Pid())
		if err != nil {
			t.Fatal(err)
		}
		serveCPU0, err := procCPU(b.Serve.Pid())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for ; created < n; created++ {
			w := theLab.Workloads[created%len(theLab.Workloads)]
			if err := createScaleCluster(ctx, theLab.Management, w, fmt.Sprintf("%s%05d", scalePrefix, created)); err != nil {
				t.Fatal(err)
			}
		}
		createdIn := time.Since(start)
		have, err := waitScaleGateways(ctx, cli, n, scaleTimeout)
		convergedIn := time.Since(start)
		if err != nil {
			report(t, tb.String())
			t.Fatalf("%d clusters: %d of them in cluster-b's etcd after %s: %v", n, have, convergedIn.Round(time.Second), err)
		}
		ctlCPU, err := procCPU(theLab.Controller.Pid())
		if err != nil {
			t.Fatal(err)
		}
		serveCPU, err := procCPU(b.Serve.Pid())
		if err != nil {
			t.Fatal(err)
		}
		ctlMem, err := procPeakRSS(theLab.Controller.Pid())
		if err != nil {
			t.Fatal(err)
		}
		serveMem, err := procPeakRSS(b.Serve.Pid())
		if err != nil {
			t.Fatal(err)
		}
		keys, err := cli.Get(ctx, "/skydns/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("count etcd keys: %v", err)
		}
		st, err := cli.Status(ctx, b.EtcdClientURL)
		if err != nil {
			t.Fatalf("etcd status: %v", err)
		}
		fmt.Fprintf(&tb, "%8d %10s %12s %14.0f %13.1fs %11.0f %10.1fs %9d %9.1f\n",
			n, createdIn.Round(100*time.Millisecond), convergedIn.Round(100*time.Millisecond),
			mib(ctlMem), (ctlCPU - ctlCPU0).Seconds(), mib(serveMem), (serveCPU - serveCPU0).Seconds(),
			keys.Count, mib(st.DbSize))
		t.Logf("%d clusters converged in %s", n, convergedIn.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&tb, "(converged: every added cluster's gateway records in cluster-b's serve etcd; CPU: used during that step; MiB: peak resident, VmHWM)\n")
	report(t, tb.String())
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

// createScaleCluster creates a Cluster, selected by the walkthrough's
// GatewayDNS, with a kubeconfig Secret pointing at workload cluster w, as
// Cluster API would.
func createScaleCluster(ctx context.Context, mgmt, w *lab.Cluster, name string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lab.ClusterGVR.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata": map[string]any{
			"name": name, "namespace": lab.ClusterNamespace,
			"labels": map[string]any{lab.SelectorLabel: lab.SelectorValue},
		},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": theLab.ControlPlaneHostOf(w.Name), "port": int64(w.Port)},
		},
	}}
	clusters := mgmt.Dynamic.Resource(lab.ClusterGVR).Namespace(lab.ClusterNamespace)
	if _, err := clusters.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Cluster %s: %w", name, err)
	}
	status := `{"status":{"phase":"Provisioned","initialization":{"infrastructureProvisioned":true,"controlPlaneInitialized":true}}}`
	if _, err := clusters.Patch(ctx, name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set status of Cluster %s: %w", name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name + "-kubeconfig",
			Namespace: lab.ClusterNamespace,
			Labels:    map[string]string{"cluster.x-k8s.io/cluster-name": name},
		},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{lab.KubeconfigSecretKey: w.KubeconfigBytes},
	}
	if _, err := mgmt.Client.CoreV1().Secrets(lab.ClusterNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	return nil
}

// waitScaleGateways waits until serve's etcd holds gateway records of n
// scale clusters, and returns how many it last saw.
func waitScaleGateways(ctx context.Context, cli *clientv3.Client, n int, timeout time.Duration) (int, error) {
	prefix := "/skydns/test/xcc/clusters/" + lab.ClusterNamespace + "/"
	deadline := time.Now().Add(timeout)
	have := 0
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return have, fmt.Errorf("list %s: %w", prefix, err)
		}
		seen := map[string]bool{}
		for _, kv := range resp.Kvs {
			// .../<ns>/<cluster>/gateway/<leaf>
			parts := strings.Split(strings.TrimPrefix(string(kv.Key), prefix), "/")
			if len(parts) == 3 && parts[1] == "gateway" && strings.HasPrefix(parts[0], scalePrefix) {
				seen[parts[0]] = true
			}
		}
		have = len(seen)
		if have >= n {
			return have, nil
		}
		if time.Now().After(deadline) {
			return have, fmt.Errorf("timed out after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return have, ctx.Err()
		case <-time.After(time.Second):
		}
	}
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
func procPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("memory of %d: %q: %w", pid, l, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("memory of %d: no VmHWM", pid)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
