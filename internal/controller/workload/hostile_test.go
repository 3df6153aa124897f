package workload

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

const hostileUser = "dev-team/gw"

// hostileSet is a Set with real clients (NewClientFromKubeconfig, as in
// production) under limits, and the Cluster of srv in it.
func hostileSet(t *testing.T, srv *testfixture.HostileAPIServer, limits ReadLimits) (*Set, *Cluster) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	set := NewSet(Config{
		NewClient: func(raw []byte) (Client, error) {
			return NewClientFromKubeconfig(raw, kubeconfig.Policy{}, limits.MaxResponseBytes, Requests{})
		},
		SliceNamespace: "xcc-dns", OnNamespace: func(string) {}, OnService: func([]string) {}, Gauge: func(int) {},
		Limits: limits,
	})
	set.Start(ctx)
	secret := testfixture.KubeconfigSecret("hostile", string(srv.Kubeconfig))
	acc := set.Get("dev-team", "hostile", secret, hostileUser)
	if acc.Cluster == nil {
		t.Fatalf("no client: %s %s", acc.Reason, acc.Message)
	}
	return set, acc.Cluster
}

// heapPeak samples the heap in use until stop is called, and returns the
// most it grew above what it was when called.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

// A hostile API server answering lists without end, or far larger than
// asked for, costs the controller a bounded amount of memory: the
// requests fail with a clear error, the informers stop, and the cluster
// is cut off.
func TestHostileListsAreCutOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode testfixture.HostileMode
		want string
	}{
		{"an endless list body", testfixture.EndlessList, "response body too large: more than 1048576 bytes"},
		{"endless pages", testfixture.EndlessPages, "too many objects: more than"},
		{"a huge list ignoring the page size", testfixture.HugeList, "response body too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testfixture.NewHostileAPIServer(t, tc.mode)
			limits := ReadLimits{ListPageSize: 100, MaxResponseBytes: 1 << 20, MaxObjectsPerCluster: 1000, CutOffRetry: time.Hour}
			peak := heapPeak()
			set, w := hostileSet(t, srv, limits)
			uses := map[string]bool{}
			var why string
			err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
				watchedNames(set, w, hostileUser, uses)
				watchedService(set, w, "projectcontour", "envoy", hostileUser)
				why = w.CutOff()
				return why != "", nil
			})
			grew := peak()
			if err != nil {
				t.Fatalf("never cut off; %d lists, %d bytes sent", srv.Lists.Load(), srv.Written.Load())
			}
			if !strings.Contains(why, tc.want) || !strings.Contains(why, "cut off for 1h0m0s") {
				t.Errorf("cut off because %q, want it to say %q", why, tc.want)
			}
			t.Logf("cut off: %s; %d lists, %d bytes sent, heap grew at most %d KiB", why, srv.Lists.Load(), srv.Written.Load(), grew>>10)
			// Generous: the bodies are cut at 1 MiB each; the server
			// would send a GiB each (EndlessList, HugeList) or
			// pages without end.
			if grew > 64<<20 {
				t.Errorf("heap grew by %d MiB", grew>>20)
			}
			// Cut off: no informer of the cluster reads, none starts.
			if _, synced := watchedNames(set, w, hostileUser, uses); synced {
				t.Error("names synced from a cut-off cluster")
			}
			if _, synced := watchedService(set, w, "projectcontour", "envoy", hostileUser); synced {
				t.Error("Service synced from a cut-off cluster")
			}
			time.Sleep(300 * time.Millisecond)
			before := srv.Lists.Load()
			time.Sleep(time.Second)
			if after := srv.Lists.Load(); after != before {
				t.Errorf("%d more lists after the cluster was cut off", after-before)
			}
		})
	}
}

// A list that drips ends at the list timeout; the cluster is not cut
// off (it is slow, as an unreachable one is) and nothing is synced.
func TestHostileSlowListTimesOut(t *testing.T) {
	srv := testfixture.NewHostileAPIServer(t, testfixture.SlowList)
	set, w := hostileSet(t, srv, ReadLimits{ListTimeout: 300 * time.Millisecond})
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if _, synced := watchedService(set, w, "projectcontour", "envoy", hostileUser); synced {
			t.Fatal("synced from a list that never ends")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n, longest := srv.Lists.Load(), time.Duration(srv.LongestRequest.Load()); n < 2 || longest > 2*time.Second {
		t.Errorf("%d lists, the longest served %v: want them ended at the 300ms timeout and tried again", n, longest)
	}
	if why := w.CutOff(); why != "" {
		t.Errorf("a slow cluster is cut off: %s", why)
	}
}

// A watch the server never ends, whatever timeoutSeconds says, is ended
// by the client and made again.
func TestHostileWatchIsBounded(t *testing.T) {
	srv := testfixture.NewHostileAPIServer(t, testfixture.HangingWatch)
	set, w := hostileSet(t, srv, ReadLimits{WatchTimeout: time.Second})
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		watchedService(set, w, "projectcontour", "envoy", hostileUser)
		return srv.Watches.Load() >= 6, nil // 3 informers, each watching twice
	})
	if err != nil {
		t.Fatalf("%d watches: a hanging watch was not ended and made again", srv.Watches.Load())
	}
	for len(srv.WatchTimeouts) > 0 {
		if s := <-srv.WatchTimeouts; s != "1" {
			t.Errorf("a watch asked for timeoutSeconds=%s, want 1", s)
		}
	}
	if svc, synced := watchedService(set, w, "projectcontour", "envoy", hostileUser); !synced || svc != nil {
		t.Errorf("Service %v synced %v: the list answered (without the Service)", svc, synced)
	}
}

// Objects that arrive by watch count as those of a list: the object past
// the cluster's limit stops the informer and cuts the cluster off, and
// the objects it held are given back.
func TestWatchedObjectsAreCounted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := fake.NewClientset()
	set := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil },
		SliceNamespace: "xcc-dns", OnNamespace: func(string) {}, OnService: func([]string) {}, Gauge: func(int) {},
		Limits: ReadLimits{MaxObjectsPerCluster: 5, CutOffRetry: time.Hour}})
	set.Start(ctx)
	secret := testfixture.KubeconfigSecret("c", "c")
	w := set.Get("dev-team", "c", secret, hostileUser).Cluster
	uses := map[string]bool{}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, synced := watchedNames(set, w, hostileUser, uses)
		return synced, nil
	}); err != nil {
		t.Fatal("names never synced")
	}
	for i := range 6 {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "s" + strconv.Itoa(i)}}
		if _, err := client.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var why string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		why = w.CutOff()
		return why != "", nil
	}); err != nil {
		t.Fatalf("not cut off at 6 Services and 0 EndpointSlices; %d objects held", w.reads.held.Load())
	}
	if !strings.Contains(why, "more than 5 objects (Services of every namespace)") {
		t.Errorf("cut off because %q", why)
	}
	if _, synced := watchedNames(set, w, hostileUser, uses); synced {
		t.Error("names synced from a cut-off cluster")
	}
	// The Services informer was dropped: only the Namespace informer and
	// the names EndpointSlice informer (none) hold objects.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return w.reads.held.Load() == 0, nil
	}); err != nil {
		t.Errorf("%d objects still counted after the cut", w.reads.held.Load())
	}
}

// watchedService is what a sync does for a gateway Service: watch it for
// user, then read the cache.
func watchedService(m *Set, w *Cluster, namespace, name, user string) (*corev1.Service, bool) {
	m.WatchService(w, namespace, name, user, false)
	return m.Service(w, namespace, name)
}

// watchedNames is what a sync does for names: watch them for user (noted
// in uses), then read the cache.
func watchedNames(m *Set, w *Cluster, user string, uses map[string]bool) ([]contract.NameService, bool) {
	m.WatchNames(w, user)
	uses[NamesRef] = true
	return m.Names(w)
}

// A hostile API server's bytes are bounded before they are kept: pages
// of one object just under the body limit, each with a continue token,
// pages without end, one object far larger than the body limit, and
// JSON nested deep. The pages of one list count against the list's
// bytes and the cluster's, while they are read, so the heap grows by at
// most a small multiple of the cluster's bytes (docs/threat-model.md,
// "Budgets"), and a list past them cuts the cluster off.
func TestHostileBytesAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode testfixture.HostileMode
		// want is what the cut-off reason says; "" for a list that
		// fails without cutting the cluster off.
		want string
	}{
		{"fat pages", testfixture.FatPages, "too many bytes"},
		{"endless pages", testfixture.EndlessPages, "too many"},
		{"one huge object", testfixture.HugeObject, "response body too large"},
		{"deeply nested JSON", testfixture.DeepJSON, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testfixture.NewHostileAPIServer(t, tc.mode)
			limits := ReadLimits{ListPageSize: 100, MaxResponseBytes: 1 << 20, MaxListBytes: 4 << 20,
				MaxBytesPerCluster: 8 << 20, MaxObjectsPerCluster: 5000, CutOffRetry: time.Hour}
			peak := heapPeak()
			set, w := hostileSet(t, srv, limits)
			uses := map[string]bool{}
			var why string
			synced := false
			deadline := time.Now().Add(20 * time.Second)
			if tc.want == "" {
				deadline = time.Now().Add(3 * time.Second)
			}
			for time.Now().Before(deadline) && why == "" {
				_, namesSynced := watchedNames(set, w, hostileUser, uses)
				_, svcSynced := watchedService(set, w, "projectcontour", "envoy", hostileUser)
				synced = synced || namesSynced || svcSynced
				why = w.CutOff()
				time.Sleep(20 * time.Millisecond)
			}
			grew := peak()
			runtime.GC()
			t.Logf("cut off: %q; %d lists, %d bytes sent, heap grew at most %d KiB", why, srv.Lists.Load(), srv.Written.Load(), grew>>10)
			if synced {
				t.Error("synced from a hostile list")
			}
			switch {
			case tc.want == "" && why != "":
				t.Errorf("cut off: %s", why)
			case tc.want != "" && !strings.Contains(why, tc.want):
				t.Errorf("cut off because %q, want it to say %q", why, tc.want)
			}
			if most := uint64(HeapBudget(limits)); grew > most {
				t.Errorf("heap grew by %d MiB, more than the budget of %d MiB", grew>>20, most>>20)
			}
		})
	}
}

// A hostile API server answering every write with HTTP 500 and a message
// of megabytes costs no more than a bounded body per answer: 1,000
// refused creates, every error kept, grow the heap by less than 50 MiB,
// and each error is still an internal error, its text short and free of
// escape sequences.
func TestHostileWriteErrorsAreCut(t *testing.T) {
	srv := testfixture.NewHostileAPIServer(t, testfixture.HangingWatch)
	srv.WriteErrorBytes.Store(2 << 20)
	_, w := hostileSet(t, srv, ReadLimits{})
	ctx := context.Background()
	const creates, budget = 1000, 50 << 20
	peak := heapPeak()
	kept := make([]error, 0, creates)
	for i := range creates {
		s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
		s.Name, s.Namespace = "s-"+strconv.Itoa(i), "xcc-dns"
		_, err := w.Client().DiscoveryV1().EndpointSlices("xcc-dns").Create(ctx, s, metav1.CreateOptions{})
		if err == nil {
			t.Fatal("a create the server refused succeeded")
		}
		kept = append(kept, err)
		if i%100 == 99 {
			runtime.GC()
		}
	}
	grew := peak()
	if grew > budget {
		t.Errorf("%d refused creates grew the heap by %d MiB, want under %d MiB", creates, grew>>20, budget>>20)
	}
	if n := srv.Writes.Load(); n < creates {
		t.Errorf("the server saw %d writes, want %d", n, creates)
	}
	for _, err := range kept[:10] {
		if !apierrors.IsInternalError(err) {
			t.Errorf("the cut answer is no internal error: %v", err)
		}
		if len(err.Error()) > 1<<10 || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("the error kept is %d bytes, escapes in it: %.200q", len(err.Error()), err.Error())
		}
	}
	runtime.KeepAlive(kept)
}
