package workload

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	mcsfake "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/fake"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// The exports of a member read their endpoints from one informer of the
// member: exports of two namespaces are one watch; a slice of a Service
// nobody exports is no event, one of an export is; the controller's own
// slices are never read back; and once no export is read the member's
// slices are no longer watched.
func TestWatchExportEndpoints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slice := func(ns, svc, name, addr string) *discoveryv1.EndpointSlice {
		s := testfixture.ServiceEndpoints(ns, svc, name)
		s.Endpoints = append(s.Endpoints, testfixture.Endpoint(addr, true))
		return s
	}
	imported := slice("shop", "web", "web-imported", "10.245.0.1")
	imported.Labels[contract.LabelManagedBy] = contract.ManagedByValue
	client := memberClient{
		Clientset: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
			slice("shop", "web", "web-1", "10.244.0.1"), slice("shop", "api", "api-1", "10.244.0.2"),
			slice("shop", "batch", "batch-1", "10.244.0.3"), slice("tools", "ci", "ci-1", "10.244.0.4"), imported),
		mcs: mcsfake.NewSimpleClientset(),
	}
	var events atomic.Int32
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func(users []string) {
			if reflect.DeepEqual(users, []string{"set"}) {
				events.Add(1)
			}
		}, Gauge: func(int) {}})
	m.Start(ctx)
	w := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "set").Cluster
	m.WatchExports(w, "set")
	m.WatchExportEndpoints(w, "set", map[string]bool{"shop/web": true, "shop/api": true})
	read := func(ns, name string) []string {
		t.Helper()
		var got []string
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			s, synced := m.ExportEndpoints(w, ns, name)
			got = nil
			for _, x := range s {
				got = append(got, x.Name)
			}
			slices.Sort(got)
			return synced, nil
		})
		if err != nil {
			t.Fatalf("%s/%s never synced", ns, name)
		}
		return got
	}
	if got := read("shop", "web"); !reflect.DeepEqual(got, []string{"web-1"}) {
		t.Errorf("shop/web slices %q, want only web-1 (the imported one is the controller's)", got)
	}
	if got := read("shop", "api"); !reflect.DeepEqual(got, []string{"api-1"}) {
		t.Errorf("shop/api slices %q, want api-1", got)
	}
	if informers, exports := m.ExportReads(); informers != 1 || exports != 2 {
		t.Errorf("%d informers for %d exports, want 1 for 2", informers, exports)
	}

	// settle waits out the events of informers that just listed.
	settle := func() {
		for n := int32(-1); n != events.Load(); {
			n = events.Load()
			time.Sleep(200 * time.Millisecond)
		}
	}
	quiet := func(what string, change func()) {
		t.Helper()
		settle()
		before := events.Load()
		change()
		time.Sleep(200 * time.Millisecond)
		if n := events.Load() - before; n != 0 {
			t.Errorf("%s: %d events, want none", what, n)
		}
	}
	loud := func(what string, change func()) {
		t.Helper()
		before := events.Load()
		change()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return events.Load() > before, nil
		})
		if err != nil {
			t.Errorf("%s: no event", what)
		}
	}
	update := func(s *discoveryv1.EndpointSlice) func() {
		return func() {
			if _, err := client.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	quiet("a slice of a Service nobody exports", update(slice("shop", "batch", "batch-1", "10.244.9.9")))
	loud("a slice of an export", update(slice("shop", "web", "web-1", "10.244.9.8")))

	// tools/ci exported from now on: read from the same informer; web
	// is no longer read, and its changes are no events.
	m.WatchExportEndpoints(w, "set", map[string]bool{"shop/api": true, "tools/ci": true})
	if got := read("tools", "ci"); !reflect.DeepEqual(got, []string{"ci-1"}) {
		t.Errorf("tools/ci slices %q, want ci-1", got)
	}
	quiet("a slice of an export no longer read", update(slice("shop", "web", "web-1", "10.244.9.7")))
	m.WatchExportEndpoints(w, "set", map[string]bool{"tools/ci": true})
	if informers, exports := m.ExportReads(); informers != 1 || exports != 1 {
		t.Errorf("%d informers for %d exports, want 1 for 1", informers, exports)
	}
	m.WatchExportEndpoints(w, "set", map[string]bool{})
	if informers, _ := m.ExportReads(); informers != 0 {
		t.Errorf("%d informers with no export read, want none", informers)
	}
	m.WatchExportEndpoints(w, "set", map[string]bool{"tools/ci": true})
	if got := read("tools", "ci"); !reflect.DeepEqual(got, []string{"ci-1"}) {
		t.Errorf("tools/ci slices %q once watched again, want ci-1", got)
	}
	m.Release("set", nil)
	if informers, exports := m.ExportReads(); informers != 0 || exports != 0 {
		t.Errorf("%d informers for %d exports after Release", informers, exports)
	}
}

// exportingMember is a member with n namespaces, each with one Service's
// slice, and the keys of those Services.
func exportingMember(n int) (memberClient, map[string]bool) {
	var objs []k8sruntime.Object
	keys := map[string]bool{}
	for i := range n {
		ns := fmt.Sprintf("team-%d", i)
		s := testfixture.ServiceEndpoints(ns, "web", "web-1")
		s.Endpoints = append(s.Endpoints, testfixture.Endpoint(fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), true))
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, s)
		keys[ns+"/web"] = true
	}
	return memberClient{Clientset: fake.NewClientset(objs...), mcs: mcsfake.NewSimpleClientset()}, keys
}

// goroutinesOfExportReads is how many goroutines reading the endpoints
// of the exports of a member with n exporting namespaces adds, once
// every export's slices are read, and how many informers it runs.
func goroutinesOfExportReads(t *testing.T, n int) (goroutines, informers int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, keys := exportingMember(n)
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func([]string) {}, Gauge: func(int) {}})
	m.Start(ctx)
	w := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "set").Cluster
	m.WatchExports(w, "set")
	settleGoroutines()
	before := runtime.NumGoroutine()
	m.WatchExportEndpoints(w, "set", keys)
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for k := range keys {
			ns, name, _ := strings.Cut(k, "/")
			if s, synced := m.ExportEndpoints(w, ns, name); !synced || len(s) != 1 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the slices of %d exports never read", n)
	}
	settleGoroutines()
	goroutines = runtime.NumGoroutine() - before
	informers, _ = m.ExportReads()
	m.Release("set", nil)
	cancel()
	settleGoroutines() // the next measure starts from none of these
	return goroutines, informers
}

// settleGoroutines waits until the count of goroutines stops moving.
func settleGoroutines() {
	for n := -1; n != runtime.NumGoroutine(); {
		n = runtime.NumGoroutine()
		time.Sleep(100 * time.Millisecond)
	}
}

// The endpoints of a member's exports are read through one watch of
// the member, whatever the namespaces of the exports: 1,000 exporting
// namespaces cost the goroutines 10 do, not an informer each.
func TestExportEndpointsOneWatchPerMember(t *testing.T) {
	few, fewInformers := goroutinesOfExportReads(t, 10)
	many, manyInformers := goroutinesOfExportReads(t, 1000)
	t.Logf("goroutines added: %d for 10 exporting namespaces, %d for 1,000", few, many)
	if fewInformers != 1 || manyInformers != 1 {
		t.Errorf("%d and %d informers of exported endpoints, want 1 each", fewInformers, manyInformers)
	}
	if many > few+10 {
		t.Errorf("1,000 exporting namespaces add %d goroutines, 10 add %d: they grow with the namespaces", many, few)
	}
}
