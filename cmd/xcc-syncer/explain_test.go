package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/contract"
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
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: u, user: {token: t}}]
`, srv.URL, base64.StdEncoding.EncodeToString(ca))
	mgmt := fake.NewSimpleClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "cluster-a-kubeconfig"},
		Data:       map[string][]byte{"value": []byte(kc)}})
	w := &workloadReader{management: mgmt, sliceNamespace: "xcc-dns"}

	got, err := w.Slices(context.Background(), "dev-team", "cluster-a")
	if err == nil || len(got) != explainMaxSlices || got[0].Source != "cluster-a" || got[0].Addresses[0] != "192.0.2.1" {
		t.Errorf("%d slices (first %+v), err %v; want %d and an error saying the rest is not read", len(got), got[0], err, explainMaxSlices)
	}
	if _, err := w.Slices(context.Background(), "dev-team", "cluster-b"); err == nil || !strings.Contains(err.Error(), "cluster-b-kubeconfig") {
		t.Errorf("no Secret: err %v", err)
	}
}
