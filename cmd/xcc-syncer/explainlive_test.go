package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
	"github.com/xcc-dns/xcc-dns/internal/explain"
	"github.com/xcc-dns/xcc-dns/internal/serve"
)

// liveCorefile is a patched kubeadm-like Corefile with the reload plugin.
const liveCorefile = `.:53 {
    errors
    reload
    forward . /etc/resolv.conf
}
# xcc-dns begin: managed by xcc-syncer patch-corefile; edits inside are overwritten; service xcc-dns/xcc-dns
xcc.test:53 {
    errors
    cache 30
    forward . 10.96.0.53:53
}
# xcc-dns end
`

func running(name, namespace string, ready bool, started time.Time, c corev1.Container) corev1.Pod {
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.7", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: c.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}}
}

// --from reads, through the workload API server's pod proxy, what a Ready
// serve pod's /answer says and each cluster DNS pod's reload metrics; a
// pod that cannot be read is unknown, the others judged.
func TestReadLive(t *testing.T) {
	changed := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	hash, err := corefile.ReloadHash("/etc/coredns/Corefile", liveCorefile)
	if err != nil {
		t.Fatal(err)
	}
	coredns := corev1.Container{Name: "coredns", Args: []string{"-conf", "/etc/coredns/Corefile"}}
	serveC := corev1.Container{Name: "xcc-syncer", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	var answerQuery string
	answerBody := func(w http.ResponseWriter) {
		_ = json.NewEncoder(w).Encode(serve.AnswerResponse{Name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test.", Type: "A", Answers: []dnsanswer.Answer{
			{Server: "xcc-dns", Rcode: "NOERROR", Answer: []string{"kuard.gateway.cluster-a.dev-team.clusters.xcc.test. 30 IN A 172.18.0.10"}},
			{Server: "cluster DNS", Rcode: "NXDOMAIN"}}})
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		switch r.URL.Path {
		case "/api/v1/namespaces/kube-system/configmaps/coredns":
			_ = json.NewEncoder(w).Encode(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns", CreationTimestamp: metav1.NewTime(changed.Add(-time.Hour)),
					ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubeadm", Time: &metav1.Time{Time: changed.Add(-time.Hour)}}, {Manager: "xcc-syncer", Time: &metav1.Time{Time: changed}}}},
				Data: map[string]string{"Corefile": liveCorefile}})
		case "/api/v1/namespaces/xcc-dns/services/xcc-dns":
			_ = json.NewEncoder(w).Encode(corev1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: "xcc-dns"},
				Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.53", Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}})
		case "/api/v1/namespaces/kube-system/services/kube-dns":
			_ = json.NewEncoder(w).Encode(corev1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
				Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.10", Selector: map[string]string{"k8s-app": "kube-dns"}}})
		case "/api/v1/namespaces/xcc-dns/pods":
			if q.Get("labelSelector") != servePodSelector {
				http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{
				running("xcc-dns-0", "xcc-dns", false, changed, serveC), running("xcc-dns-1", "xcc-dns", true, changed, serveC)}})
		case "/api/v1/namespaces/kube-system/pods":
			if q.Get("labelSelector") != "k8s-app=kube-dns" || q.Get("limit") != fmt.Sprint(serveMaxPods) {
				http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{
				running("coredns-a", "kube-system", true, changed.Add(-time.Hour), coredns),
				running("coredns-b", "kube-system", true, changed.Add(-time.Hour), coredns),
				running("coredns-c", "kube-system", true, changed.Add(time.Minute), coredns),
				running("coredns-d", "kube-system", true, changed.Add(-time.Hour), coredns)}})
		case "/api/v1/namespaces/xcc-dns/pods/http:xcc-dns-1:8080/proxy/answer":
			answerQuery = r.URL.RawQuery
			answerBody(w)
		case "/api/v1/namespaces/kube-system/pods/http:coredns-a:9153/proxy/metrics":
			fmt.Fprintf(w, "coredns_reload_failed_total 0\ncoredns_reload_version_info{hash=\"sha512\",value=\"%s\"} 1\n", hash)
		case "/api/v1/namespaces/kube-system/pods/http:coredns-b:9153/proxy/metrics", "/api/v1/namespaces/kube-system/pods/http:coredns-c:9153/proxy/metrics":
			fmt.Fprint(w, "coredns_reload_failed_total 0\n")
		case "/api/v1/namespaces/kube-system/pods/http:coredns-d:9153/proxy/metrics":
			line := "# " + strings.Repeat("x", 1000) + "\n"
			for range maxCoreDNSMetricsBytes/len(line) + 10 {
				fmt.Fprint(w, line)
			}
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, r.URL.Path)
		}
	}))
	defer srv.Close()
	mgmt := fake.NewSimpleClientset(kubeconfigSecret(srv, "cluster-b", "t"))
	n := explain.Classify("kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "", explain.Config{Zone: "xcc.test"})
	w := &workloadReader{management: mgmt, sliceNamespace: "xcc-dns"}
	var f explain.Facts
	f.From = "cluster-b"
	readFrom(context.Background(), n, w, "dev-team", "cluster-b", "kube-system/coredns", "", &f)
	readLive(context.Background(), n, w, "dev-team", "cluster-b", "kube-system/coredns", serve.DefaultAnswerClusterDNSService, &f)

	if q, _ := url.ParseQuery(answerQuery); strings.TrimSuffix(q.Get("name"), ".") != "kuard.gateway.cluster-a.dev-team.clusters.xcc.test" || q.Get("type") != "A" {
		t.Errorf("/answer asked with %q", answerQuery)
	}
	if len(f.Answers) != 2 || f.AnswersFrom != "xcc-dns/xcc-dns-1" || f.Answers[1].Rcode != "NXDOMAIN" {
		t.Errorf("answers %+v from %q, want two from the Ready pod xcc-dns-1", f.Answers, f.AnswersFrom)
	}
	if f.Forward == nil || f.Forward.Cache == nil || f.Forward.Cache.Success != 30 {
		t.Errorf("forward %+v, want the block's cache 30", f.Forward)
	}
	want := map[string]string{
		"kube-system/coredns-a": explain.ReloadRunning, // its hash
		"kube-system/coredns-b": explain.ReloadOlder,   // no hash, started before the change
		"kube-system/coredns-c": explain.ReloadRunning, // no hash, started after it
		"kube-system/coredns-d": explain.ReloadUnknown, // metrics past the bound
	}
	if f.Reload == nil || len(f.Reload.Pods) != len(want) || !f.Reload.Changed.Equal(changed) || f.Reload.Hash != hash {
		t.Fatalf("reload %+v, unread %v", f.Reload, f.Unread)
	}
	for _, p := range f.Reload.Pods {
		if p.State != want[p.Pod] {
			t.Errorf("%s: %s (%s), want %s", p.Pod, p.State, p.Why, want[p.Pod])
		}
	}
	if len(f.Unread) != 0 {
		t.Errorf("unread %v", f.Unread)
	}
	r := explain.Build(n, f, time.Now())
	if r.Reason != explain.ReasonNotReloaded || !strings.Contains(r.Why, "kube-system/coredns-b") {
		t.Errorf("reason %s: %s; want NotReloaded naming coredns-b", r.Reason, r.Why)
	}

	// A serve pod whose /answer is past the bound: unread, the rest read.
	answerBody = func(w http.ResponseWriter) {
		fmt.Fprint(w, `{"answers":[`+strings.Repeat(" ", maxAnswerBytes)+`]}`)
	}
	w = &workloadReader{management: mgmt, sliceNamespace: "xcc-dns"}
	f = explain.Facts{From: "cluster-b"}
	readFrom(context.Background(), n, w, "dev-team", "cluster-b", "kube-system/coredns", "", &f)
	readLive(context.Background(), n, w, "dev-team", "cluster-b", "kube-system/coredns", "kube-system/none", &f)
	if got := strings.Join(f.Unread, "; "); !strings.Contains(got, fmt.Sprintf("more than %d bytes", maxAnswerBytes)) || !strings.Contains(got, "get Service kube-system/none") || len(f.Answers) != 0 {
		t.Errorf("unread %q, answers %v; want the long /answer and the missing Service", got, f.Answers)
	}
}

// --dns: ADDR[:PORT], 53 by default.
func TestDNSAddress(t *testing.T) {
	for in, want := range map[string]string{"10.96.0.10": "10.96.0.10:53", "10.96.0.10:5353": "10.96.0.10:5353", "fd00::10": "[fd00::10]:53",
		"[fd00::10]:5353": "[fd00::10]:5353", "[fd00::10]": "[fd00::10]:53", "dns.example": "dns.example:53", ":53": "", "": ""} {
		got, err := dnsAddress(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
}
