package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/xcc-dns/xcc-dns/internal/overview"
)

// Bounds of status's read of serve in the workload clusters, each of
// which its tenant runs: a frozen API server or pod costs its cluster's
// deadline and no more, a flood of pods or a long body is cut.
const (
	// serveClusterTimeout is each cluster's deadline: its kubeconfig
	// Secret, its pod list and every pod's /metrics.
	serveClusterTimeout = 10 * time.Second
	// serveConcurrency is how many clusters are read at once.
	serveConcurrency = 4
	// serveMaxPods is the most serve pods read in one cluster; the
	// workload chart runs 2 replicas.
	serveMaxPods = 16
	// serveMaxMetricsBytes is the longest /metrics body read: serve's is
	// mostly the Go runtime's and etcd's series.
	serveMaxMetricsBytes = 4 << 20
)

// The workload chart's serve pods: their namespace (the controller's
// --slice-namespace, where the chart is installed), the labels every
// release's DNS pods carry, and serve's HTTP port (ports.syncerHTTP,
// named http in the pod).
const (
	defaultServeNamespace = "xcc-dns"
	servePodSelector      = "app.kubernetes.io/name=xcc-dns-workload,app.kubernetes.io/component=dns"
	servePortName         = "http"
	defaultServePort      = 8080
)

// serveConfigFunc is the client configuration of the workload Cluster
// namespace/cluster (workloadConfig, or a test's).
type serveConfigFunc func(ctx context.Context, namespace, cluster string) (*rest.Config, error)

// serveReader reads the serve pods of workload clusters.
type serveReader struct {
	configFor serveConfigFunc
	// namespace of the serve pods in every workload cluster.
	namespace string
	// timeout is each cluster's deadline (serveClusterTimeout).
	timeout time.Duration
}

// read reads, for every cluster of clusters, the records each of its
// serve pods holds: its pods in the serve namespace, and each pod's
// /metrics through the workload API server's pod proxy. Clusters are
// read serveConcurrency at a time, each within its deadline; what
// cannot be read is said in the cluster's or pod's Unread.
func (s serveReader) read(ctx context.Context, clusters []overview.ServeCluster) []overview.ServeCluster {
	out := make([]overview.ServeCluster, len(clusters))
	sem := make(chan struct{}, serveConcurrency)
	var wg sync.WaitGroup
	for i, c := range clusters {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = s.cluster(ctx, c)
		}()
	}
	wg.Wait()
	return out
}

// cluster reads the serve pods of one cluster within its deadline.
func (s serveReader) cluster(ctx context.Context, c overview.ServeCluster) overview.ServeCluster {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	namespace, cluster, _ := strings.Cut(c.Cluster, "/")
	cfg, err := s.configFor(ctx, namespace, cluster)
	if err != nil {
		c.Unread = err.Error()
		return c
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		c.Unread = fmt.Sprintf("client: %v", err)
		return c
	}
	items, more, err := listPods(ctx, client, "serve pods", s.namespace, servePodSelector)
	if err != nil {
		c.Unread = err.Error()
		return c
	}
	c.MorePods = more
	if len(items) == 0 {
		c.Unread = fmt.Sprintf("no serve pod in namespace %s (--serve-namespace) with the workload chart's labels", s.namespace)
		return c
	}
	for i := range items {
		c.Pods = append(c.Pods, readServePod(ctx, client, &items[i]))
	}
	return c
}

// readServePod reads one serve pod's /metrics through the pod proxy.
func readServePod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) overview.ServePod {
	p := overview.ServePod{Name: pod.Namespace + "/" + pod.Name}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		p.Unread = fmt.Sprintf("pod is %s, not running with an address", pod.Status.Phase)
		return p
	}
	body, err := proxyGet(ctx, client, pod, servePort(pod), "/metrics", nil)
	if err != nil {
		p.Unread = err.Error()
		return p
	}
	defer func() { _ = body.Close() }()
	m, err := overview.ParseServeMetrics(body, serveMaxMetricsBytes)
	if err != nil {
		p.Unread = err.Error()
		return p
	}
	p.Records, p.LastReconcile = m.Records, m.LastReconcile
	return p
}

// servePort is the port of the container port named http in pod (the
// chart's serve container), else the chart's default.
func servePort(pod *corev1.Pod) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == servePortName && p.ContainerPort > 0 && p.ContainerPort < 1<<16 {
				return p.ContainerPort
			}
		}
	}
	return defaultServePort
}

// listPods lists the pods of namespace that selector selects (what they
// are, for the error), at most serveMaxPods of them; more says there were
// more.
func listPods(ctx context.Context, client kubernetes.Interface, what, namespace, selector string) (pods []corev1.Pod, more bool, err error) {
	l, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: serveMaxPods})
	if err != nil {
		return nil, false, fmt.Errorf("list %s in %s: %w", what, namespace, err)
	}
	items := l.Items
	if len(items) > serveMaxPods || l.Continue != "" {
		items, more = items[:min(len(items), serveMaxPods)], true
	}
	return items, more, nil
}

// proxyGet GETs path (with params) from pod's port through the workload
// API server's pod proxy; the caller closes the body and bounds its read.
func proxyGet(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, port int32, path string, params map[string]string) (io.ReadCloser, error) {
	p := strconv.Itoa(int(port))
	body, err := client.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, p, path, params).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("get %s on port %s of %s/%s through the pod proxy: %w", path, p, pod.Namespace, pod.Name, err)
	}
	return body, nil
}
