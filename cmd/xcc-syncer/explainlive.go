package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
	"github.com/xcc-dns/xcc-dns/internal/explain"
	"github.com/xcc-dns/xcc-dns/internal/serve"
)

// Bounds of explain's live reads of a workload cluster: each part (the
// serve pod's /answer, the cluster DNS pods' metrics) has
// serveClusterTimeout; the bodies are cut.
const (
	// maxAnswerBytes is the longest /answer body read: two answers of
	// at most dnsanswer.MaxRecords short lines per section.
	maxAnswerBytes = 1 << 20
	// maxCoreDNSMetricsBytes is the longest CoreDNS /metrics body read.
	maxCoreDNSMetricsBytes = 4 << 20
	// defaultCoreDNSMetricsPort is where the prometheus plugin of the
	// cluster DNS listens unless its pod names a port metrics: kubeadm's.
	defaultCoreDNSMetricsPort = 9153
	// defaultDNSPort is the port of a --dns address without one.
	defaultDNSPort = "53"
)

// queryType is the type explain asks the DNS servers: the one asked
// about, A by default; an error for one the servers are not asked.
func queryType(n explain.Name) (string, error) {
	t := n.Type
	if t == "" {
		t = "A"
	}
	if _, err := dnsanswer.ParseType(t); err != nil {
		return "", err
	}
	return strings.ToUpper(t), nil
}

// Answers asks one Ready serve pod of the cluster, through the pod proxy,
// what its CoreDNS and the cluster DNS answer now for name; it returns
// the answers and the pod asked.
func (w *workloadReader) Answers(ctx context.Context, namespace, cluster, name, qtype string) ([]dnsanswer.Answer, string, error) {
	ctx, cancel := context.WithTimeout(ctx, serveClusterTimeout)
	defer cancel()
	client, err := w.client(ctx, namespace, cluster)
	if err != nil {
		return nil, "", err
	}
	pods, _, err := listPods(ctx, client, "serve pods", w.sliceNamespace, servePodSelector)
	if err != nil {
		return nil, "", err
	}
	var pod *corev1.Pod
	for i := range pods {
		if podReady(&pods[i]) {
			pod = &pods[i]
			break
		}
	}
	if pod == nil {
		return nil, "", fmt.Errorf("no Ready serve pod of %d in %s", len(pods), w.sliceNamespace)
	}
	asked := pod.Namespace + "/" + pod.Name
	body, err := proxyGet(ctx, client, pod, servePort(pod), serve.AnswerPath, map[string]string{"name": name, "type": qtype})
	if err != nil {
		return nil, asked, err
	}
	defer func() { _ = body.Close() }()
	b, err := io.ReadAll(io.LimitReader(body, maxAnswerBytes+1))
	if err != nil {
		return nil, asked, fmt.Errorf("read %s of %s: %w", serve.AnswerPath, asked, err)
	}
	if len(b) > maxAnswerBytes {
		return nil, asked, fmt.Errorf("%s of %s: more than %d bytes", serve.AnswerPath, asked, maxAnswerBytes)
	}
	var resp serve.AnswerResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, asked, fmt.Errorf("%s of %s (a serve older than it?): %w", serve.AnswerPath, asked, err)
	}
	return resp.Answers, asked, nil
}

// podReady: running with an address and Ready.
func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Reload reads whether the cluster DNS pods (those of the Service
// svcRef's selector) run the Corefile text of the ConfigMap cmRef, last
// changed at changed: each pod's reload metrics through the pod proxy.
func (w *workloadReader) Reload(ctx context.Context, namespace, cluster, svcRef, cmRef, text string, changed, now time.Time) (*explain.Reload, error) {
	ctx, cancel := context.WithTimeout(ctx, serveClusterTimeout)
	defer cancel()
	client, err := w.client(ctx, namespace, cluster)
	if err != nil {
		return nil, err
	}
	svcNamespace, svcName, err := corefile.SplitRef(svcRef)
	if err != nil {
		return nil, err
	}
	svc, err := client.CoreV1().Services(svcNamespace).Get(ctx, svcName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get Service %s: %w", svcRef, err)
	}
	if len(svc.Spec.Selector) == 0 {
		return nil, fmt.Errorf("the Service %s selects no pods", svcRef)
	}
	pods, more, err := listPods(ctx, client, "cluster DNS pods", svcNamespace, labels.SelectorFromSet(svc.Spec.Selector).String())
	if err != nil {
		return nil, err
	}
	r := &explain.Reload{ConfigMap: cmRef, Changed: changed, MorePods: more}
	hashes := map[string]string{}
	for i := range pods {
		pod := &pods[i]
		e, path := readCoreDNSPod(ctx, client, pod)
		h, ok := hashes[path]
		if !ok {
			h, err = corefile.ReloadHash(path, text)
			if err != nil {
				r.HashUnknown = err.Error()
			}
			hashes[path] = h
		}
		r.Hash = h
		r.Pods = append(r.Pods, explain.Judge(e, h, r.HashUnknown, changed, now))
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("no pod of Service %s", svcRef)
	}
	return r, nil
}

// readCoreDNSPod reads what a cluster DNS pod says of its Corefile: its
// CoreDNS container's start, its reload metrics, and the path it loads
// the Corefile from (-conf).
func readCoreDNSPod(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) (explain.PodEvidence, string) {
	e := explain.PodEvidence{Pod: pod.Namespace + "/" + pod.Name}
	c, path := coreDNSContainer(pod)
	for _, st := range pod.Status.ContainerStatuses {
		if c != nil && st.Name == c.Name && st.State.Running != nil {
			e.Started = st.State.Running.StartedAt.Time
		}
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		e.Unread = fmt.Sprintf("pod is %s, not running with an address", pod.Status.Phase)
		return e, path
	}
	body, err := proxyGet(ctx, client, pod, coreDNSMetricsPort(c), "/metrics", nil)
	if err != nil {
		e.Unread = err.Error()
		return e, path
	}
	defer func() { _ = body.Close() }()
	m, err := corefile.ParseReloadMetrics(body, maxCoreDNSMetricsBytes)
	if err != nil {
		e.Unread = err.Error()
		return e, path
	}
	e.Hashes, e.Failed = m.Hashes, m.Failed
	return e, path
}

// coreDNSContainer is the pod's container that runs CoreDNS with -conf
// (else its first), and the Corefile path it loads: -conf as written, or
// CoreDNS's default.
func coreDNSContainer(pod *corev1.Pod) (*corev1.Container, string) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		args := append(append([]string{}, c.Command...), c.Args...)
		for j, a := range args {
			switch {
			case (a == "-conf" || a == "--conf") && j+1 < len(args):
				return c, args[j+1]
			case strings.HasPrefix(a, "-conf="), strings.HasPrefix(a, "--conf="):
				_, v, _ := strings.Cut(a, "=")
				return c, v
			}
		}
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, corefile.DefaultConfPath
	}
	return &pod.Spec.Containers[0], corefile.DefaultConfPath
}

// coreDNSMetricsPort is the container's port named metrics, else the
// prometheus plugin's usual one.
func coreDNSMetricsPort(c *corev1.Container) int32 {
	if c != nil {
		for _, p := range c.Ports {
			if p.Name == "metrics" && p.ContainerPort > 0 && p.ContainerPort < 1<<16 {
				return p.ContainerPort
			}
		}
	}
	return defaultCoreDNSMetricsPort
}

// lastChange is when an object was last written: the latest time of its
// managed fields, else its creation.
func lastChange(m metav1.ObjectMeta) time.Time {
	t := m.CreationTimestamp.Time
	for _, f := range m.ManagedFields {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}

// askDNS asks each of servers (ADDR[:PORT], port 53 by default) for
// name from where explain runs.
func askDNS(ctx context.Context, servers []string, name, qtype string) ([]dnsanswer.Answer, []string) {
	var out []dnsanswer.Answer
	var unread []string
	t, err := dnsanswer.ParseType(qtype)
	if err != nil {
		return nil, []string{"--dns: " + err.Error()}
	}
	for _, s := range servers {
		addr, err := dnsAddress(s)
		if err != nil {
			unread = append(unread, fmt.Sprintf("--dns %s: %v", s, err))
			continue
		}
		out = append(out, dnsanswer.Ask(ctx, "--dns", addr, name, t, dnsanswer.DefaultTimeout))
	}
	return out, unread
}

// dnsAddress is s as host:port: an IP, [IPv6]:port, IP:port or a host
// name, with port 53 when none is given.
func dnsAddress(s string) (string, error) {
	if host, port, err := net.SplitHostPort(s); err == nil {
		if host == "" || port == "" {
			return "", fmt.Errorf("want ADDR[:PORT]")
		}
		return s, nil
	}
	if strings.Count(s, ":") > 1 || (s != "" && !strings.Contains(s, ":")) {
		return net.JoinHostPort(strings.Trim(s, "[]"), defaultDNSPort), nil
	}
	return "", fmt.Errorf("want ADDR[:PORT]")
}
