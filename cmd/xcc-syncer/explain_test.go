package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/explain"
)

// Flags may come before, between and after NAME and TYPE.
func TestParseInterleaved(t *testing.T) {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	kc := fs.String("kubeconfig", "", "")
	out := fs.String("o", "text", "")
	got := parseInterleaved(fs, []string{"-o", "json", "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "--kubeconfig", "k", "AAAA"})
	if want := []string{"kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "AAAA"}; !reflect.DeepEqual(got, want) || *kc != "k" || *out != "json" {
		t.Errorf("positional %v, kubeconfig %q, -o %q", got, *kc, *out)
	}
}

// --from reads the workload cluster's contract slices through its
// kubeconfig Secret, page by page, and stops at explainMaxSlices.
func TestWorkloadSlices(t *testing.T) {
	var pages atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/discovery.k8s.io/v1/namespaces/xcc-dns/endpointslices" ||
			r.URL.Query().Get("labelSelector") != contract.LabelManagedBy+"="+contract.ManagedByValue {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		n := pages.Add(1)
		l := discoveryv1.EndpointSliceList{TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"}}
		l.Continue = "more" // an endless list: the bound must end it
		for i := range explainSlicePage {
			l.Items = append(l.Items, discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d-%d", n, i),
					Annotations: map[string]string{contract.AnnotationHostname: "*.gateway.cluster-a.dev-team.clusters.xcc.test"},
					Labels:      map[string]string{contract.LabelSourceCluster: "cluster-a"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}}},
			})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(l)
	}))
	defer srv.Close()
	mgmt := fake.NewSimpleClientset(kubeconfigSecret(srv, "cluster-a", "t"))
	w := &workloadReader{management: mgmt, sliceNamespace: "xcc-dns"}

	got, err := w.Slices(context.Background(), "dev-team", "cluster-a")
	if err == nil || len(got) != explainMaxSlices || got[0].Source != "cluster-a" || got[0].Addresses[0] != "192.0.2.1" {
		t.Errorf("%d slices (first %+v), err %v; want %d and an error saying the rest is not read", len(got), got[0], err, explainMaxSlices)
	}
	if _, err := w.Slices(context.Background(), "dev-team", "cluster-b"); err == nil || !strings.Contains(err.Error(), "cluster-b-kubeconfig") {
		t.Errorf("no Secret: err %v", err)
	}
}

// --from compares the forward of the zone's block with the xcc-dns
// Service the managed block names (or --xcc-dns-service): its address
// read in the cluster, or why it could not be.
func TestReadFromService(t *testing.T) {
	corefileText := `.:53 {
    forward . /etc/resolv.conf
}
# xcc-dns begin: managed by xcc-syncer patch-corefile; edits inside are overwritten; service xcc-dns/dns
xcc.test:53 {
    forward . 10.96.0.99:53
}
# xcc-dns end
`
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/namespaces/kube-system/configmaps/coredns":
			_ = json.NewEncoder(w).Encode(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"}, Data: map[string]string{"Corefile": corefileText}})
		case "/api/v1/namespaces/xcc-dns/services/dns":
			_ = json.NewEncoder(w).Encode(corev1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: "dns"},
				Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.53", Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}})
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, r.URL.Path)
		}
	}))
	defer srv.Close()
	mgmt := fake.NewSimpleClientset(kubeconfigSecret(srv, "cluster-b", "t"))
	n := explain.Classify("kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "", explain.Config{Zone: "xcc.test"})

	for _, tc := range []struct {
		flag, service, unread string
		addresses             []string
	}{
		{service: "xcc-dns/dns", addresses: []string{"10.96.0.53:53"}},
		{flag: "xcc-dns/other", service: "xcc-dns/other", unread: "the xcc-dns Service of cluster-b, to compare the block's forward with: get Service xcc-dns/other: "},
	} {
		w := &workloadReader{management: mgmt, sliceNamespace: "xcc-dns"}
		var f explain.Facts
		readFrom(context.Background(), n, w, "dev-team", "cluster-b", "kube-system/coredns", tc.flag, &f)
		fw := f.Forward
		if fw == nil || fw.Service != tc.service || !reflect.DeepEqual(fw.ServiceAddresses, tc.addresses) || !reflect.DeepEqual(fw.ForwardTo, []string{"10.96.0.99:53"}) {
			t.Errorf("--xcc-dns-service %q: forward %+v; want Service %s at %v", tc.flag, fw, tc.service, tc.addresses)
		}
		if got := strings.Join(f.Unread, "; "); tc.unread == "" && got != "" || !strings.HasPrefix(got, tc.unread) {
			t.Errorf("--xcc-dns-service %q: unread %q, want %q", tc.flag, got, tc.unread)
		}
		if r := explain.Build(n, f, time.Now()); tc.unread == "" && r.Reason != explain.ReasonForwardsElsewhere {
			t.Errorf("reason %s: %s; want %s", r.Reason, r.Why, explain.ReasonForwardsElsewhere)
		}
	}
}

// A cluster DNS ConfigMap is the workload cluster admin's text: one that
// would fill a forward from the environment ({%VAR%}, {$VAR}) is not
// parsed, and the value of this machine's variable appears nowhere in
// what explain prints, text or JSON; the unread line says why.
func TestExplainCorefileReadsNoEnvironment(t *testing.T) {
	const secret = "s3cr3t-of-the-operator"
	t.Setenv("XCC_TEST_SECRET", secret)
	for _, ref := range []string{"{%XCC_TEST_SECRET%}", "{$XCC_TEST_SECRET}", "{%XCC_TEST_SECRET:default%}"} {
		corefileText := "xcc.test:53 {\n    forward . " + ref + "\n}\n"
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path != "/api/v1/namespaces/kube-system/configmaps/coredns" {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
				return
			}
			_ = json.NewEncoder(w).Encode(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"}, Data: map[string]string{"Corefile": corefileText}})
		}))
		mgmt := fake.NewSimpleClientset(kubeconfigSecret(srv, "cluster-b", "t"))
		n := explain.Classify("kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "", explain.Config{Zone: "xcc.test"})
		w := &workloadReader{management: mgmt, sliceNamespace: "xcc-dns"}
		var f explain.Facts
		readFrom(context.Background(), n, w, "dev-team", "cluster-b", "kube-system/coredns", "", &f)
		r := explain.Build(n, f, time.Now())
		var text strings.Builder
		if err := r.WriteText(&text, time.Now()); err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text.String(), secret) || strings.Contains(string(js), secret) {
			t.Errorf("%s: the environment's value is printed:\n%s\n%s", ref, text.String(), js)
		}
		if !strings.Contains(strings.Join(f.Unread, "\n"), "reads environment variables") {
			t.Errorf("%s: unread %q, want it to say the Corefile reads environment variables", ref, f.Unread)
		}
		srv.Close()
	}
}
