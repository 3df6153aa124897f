package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/xcc-dns/xcc-dns/internal/overview"
)

// fakeWorkloads is one TLS API server standing for several workload
// clusters, told apart by their kubeconfig's token: each answers the
// serve pod list and the pods' /metrics through the pod proxy as its
// cluster's behaviour says.
type fakeWorkloads struct {
	srv *httptest.Server
	// pods and bodies per cluster; frozen clusters never answer.
	pods   map[string][]corev1.Pod
	more   map[string]bool
	bodies map[string]func(pod string, w http.ResponseWriter)
	frozen map[string]bool

	mu sync.Mutex
	// starts are when each frozen cluster's first request came.
	starts []time.Time
}

func (f *fakeWorkloads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cluster := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if f.frozen[cluster] {
		f.mu.Lock()
		f.starts = append(f.starts, time.Now())
		f.mu.Unlock()
		<-r.Context().Done()
		return
	}
	switch {
	case r.URL.Path == "/api/v1/namespaces/xcc-dns/pods":
		if r.URL.Query().Get("labelSelector") != servePodSelector || r.URL.Query().Get("limit") != fmt.Sprint(serveMaxPods) {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		l := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: f.pods[cluster]}
		if f.more[cluster] {
			l.Continue = "more"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(l)
	case strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/xcc-dns/pods/http:") && strings.HasSuffix(r.URL.Path, "/proxy/metrics"):
		pod := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/xcc-dns/pods/http:"), "/proxy/metrics")
		f.bodies[cluster](pod, w)
	default:
		http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
	}
}

// secret is the <cluster>-kubeconfig Secret of cluster on f's server.
func (f *fakeWorkloads) secret(cluster string) *corev1.Secret {
	return kubeconfigSecret(f.srv, cluster, cluster)
}

// kubeconfigSecret is the <cluster>-kubeconfig Secret in dev-team of a
// kubeconfig for the TLS test server srv, with the bearer token token.
func kubeconfigSecret(srv *httptest.Server, cluster, token string) *corev1.Secret {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: u, user: {token: %s}}]
`, srv.URL, base64.StdEncoding.EncodeToString(ca), token)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: cluster + "-kubeconfig"}, Data: map[string][]byte{"value": []byte(kc)}}
}

func servePod(name string, port int32) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: name},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9"}}
	if port > 0 {
		p.Spec.Containers = []corev1.Container{{Name: "serve", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}}}}
	}
	return p
}

// status reads every workload cluster's serve pods through its kubeconfig
// Secret and the pod proxy; a frozen API server costs its cluster's
// deadline only, at most serveConcurrency clusters are read at once, and
// a flood of pods, a long body, a refusal or a missing Secret is each
// said for its cluster or pod, the others read.
func TestReadServe(t *testing.T) {
	f := &fakeWorkloads{
		pods: map[string][]corev1.Pod{
			"cluster-a": {servePod("xcc-dns-0", 8080), servePod("xcc-dns-1", 9090), {ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: "xcc-dns-2"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}},
			"cluster-b": {servePod("xcc-dns-0", 0), servePod("xcc-dns-1", 8080)},
		},
		more:   map[string]bool{"cluster-c": true},
		frozen: map[string]bool{},
		bodies: map[string]func(string, http.ResponseWriter){
			"cluster-a": func(pod string, w http.ResponseWriter) {
				switch pod {
				case "xcc-dns-0:8080":
					fmt.Fprint(w, "# TYPE xcc_serve_records gauge\nxcc_serve_records 12\nxcc_serve_last_reconcile_timestamp_seconds 1.7801568e+09\n")
				case "xcc-dns-1:9090": // the port named http in the pod
					fmt.Fprint(w, "xcc_serve_records 0\n")
				default:
					http.Error(w, "no such port", http.StatusBadGateway)
				}
			},
			"cluster-b": func(pod string, w http.ResponseWriter) {
				if pod == "xcc-dns-0:8080" { // no port named http: the chart's
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusForbidden)
					fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"pods \"xcc-dns-0\" is forbidden: cannot get resource \"pods/proxy\""}`)
					return
				}
				line := "# " + strings.Repeat("x", 1000) + "\n"
				for range serveMaxMetricsBytes/len(line) + 10 {
					fmt.Fprint(w, line)
				}
			},
		},
	}
	for i := range serveMaxPods + 4 {
		f.pods["cluster-c"] = append(f.pods["cluster-c"], servePod(fmt.Sprintf("xcc-dns-%d", i), 8080))
	}
	f.bodies["cluster-c"] = func(string, http.ResponseWriter) {}
	// Pods whose /metrics never answer: the cluster's deadline is for
	// all of them together.
	f.pods["slow"] = []corev1.Pod{servePod("xcc-dns-0", 8080), servePod("xcc-dns-1", 8080), servePod("xcc-dns-2", 8080)}
	slow := make(chan struct{})
	f.bodies["slow"] = func(string, http.ResponseWriter) { <-slow }
	clusters := []overview.ServeCluster{{Cluster: "dev-team/cluster-a", ExpectedBy: "GatewayDNS dev-team/web"}, {Cluster: "dev-team/cluster-b"}, {Cluster: "dev-team/cluster-c"}, {Cluster: "dev-team/cluster-none"}}
	const frozen = 2 * serveConcurrency
	for i := range frozen {
		name := fmt.Sprintf("frozen-%d", i)
		f.frozen[name] = true
		clusters = append(clusters, overview.ServeCluster{Cluster: "dev-team/" + name})
	}
	f.srv = httptest.NewTLSServer(f)
	defer f.srv.Close()
	defer close(slow)
	objs := []runtime.Object{f.secret("slow")}
	for _, c := range clusters {
		if c.Cluster != "dev-team/cluster-none" {
			objs = append(objs, f.secret(strings.TrimPrefix(c.Cluster, "dev-team/")))
		}
	}
	mgmt := fake.NewClientset(objs...)
	// Long enough that the clusters that answer do so within it on a
	// loaded machine; the frozen ones each cost all of it.
	const timeout = 2 * time.Second
	sr := serveReader{namespace: "xcc-dns", timeout: timeout, configFor: func(ctx context.Context, namespace, cluster string) (*rest.Config, error) {
		return workloadConfig(ctx, mgmt, namespace, cluster, statusUserAgent, timeout)
	}}

	start := time.Now()
	s := sr.read(context.Background(), []overview.ServeCluster{{Cluster: "dev-team/slow"}})
	if took := time.Since(start); took > 2*timeout || len(s[0].Pods) != 3 || !strings.Contains(s[0].Pods[2].Unread, "context deadline exceeded") {
		t.Errorf("3 pods that never answer: took %v, %+v; want the cluster's deadline, %v", took, s[0], timeout)
	}

	start = time.Now()
	got := sr.read(context.Background(), clusters)
	took := time.Since(start)
	// The frozen clusters take 2 rounds of serveConcurrency deadlines:
	// the first serveConcurrency start at once, the next once they end.
	slices.SortFunc(f.starts, time.Time.Compare)
	if took > 4*timeout || len(f.starts) != frozen || f.starts[serveConcurrency].Sub(f.starts[0]) < timeout*9/10 {
		t.Errorf("took %v with %d frozen clusters, started at %v; want under %v, %d at a time", took, frozen, f.starts, 4*timeout, serveConcurrency)
	}
	a := got[0]
	if a.Unread != "" || len(a.Pods) != 3 || a.ExpectedBy != "GatewayDNS dev-team/web" {
		t.Fatalf("cluster-a: %+v", a)
	}
	if p := a.Pods[0]; p.Name != "xcc-dns/xcc-dns-0" || p.Records != 12 || !p.LastReconcile.Equal(time.Unix(1780156800, 0)) || p.Unread != "" {
		t.Errorf("cluster-a pod 0: %+v", p)
	}
	if p := a.Pods[1]; p.Records != 0 || p.Unread != "" {
		t.Errorf("cluster-a pod 1 (port 9090): %+v", p)
	}
	if p := a.Pods[2]; !strings.Contains(p.Unread, "Pending") {
		t.Errorf("cluster-a pod 2 (Pending): %+v", p)
	}
	b := got[1]
	if len(b.Pods) != 2 || !strings.Contains(b.Pods[0].Unread, "forbidden") || !strings.Contains(b.Pods[1].Unread, fmt.Sprintf("more than %d bytes", serveMaxMetricsBytes)) {
		t.Errorf("cluster-b: want pod 0 forbidden, pod 1 past the body bound: %+v", b)
	}
	if c := got[2]; !c.MorePods || len(c.Pods) != serveMaxPods {
		t.Errorf("cluster-c: %d pods read, more %t; want %d and more", len(c.Pods), c.MorePods, serveMaxPods)
	}
	if n := got[3]; !strings.Contains(n.Unread, "cluster-none-kubeconfig") {
		t.Errorf("cluster-none: %+v", n)
	}
	for _, c := range got[4:] {
		if !strings.Contains(c.Unread, "list serve pods in xcc-dns") || !strings.Contains(c.Unread, "context deadline exceeded") && !strings.Contains(c.Unread, "Timeout") {
			t.Errorf("%s: %q, want the deadline", c.Cluster, c.Unread)
		}
	}
}
