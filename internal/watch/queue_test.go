package watch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// fastLimiter retries at once, so a failing key comes back within the test.
func fastLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond)
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestEnqueueKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  any
		want []string
	}{
		{"object", pod("ns", "a"), []string{"ns/a"}},
		{"cluster-scoped object", pod("", "a"), []string{"a"}},
		{"tombstone with object", cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: pod("ns", "b")}, []string{"ns/b"}},
		{"tombstone takes its key, not its object's", cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: nil}, []string{"ns/c"}},
		{"no metadata", "not an object", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Config{Name: "test", Sync: func(context.Context, string) error { return nil }})
			defer q.ShutDown()
			q.Enqueue(tc.obj)
			var got []string
			for q.Len() > 0 {
				k, _ := q.q.Get()
				got = append(got, k)
				q.q.Done(k)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("keys = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHandlerEnqueuesEveryEvent(t *testing.T) {
	q := New(Config{Name: "test", Sync: func(context.Context, string) error { return nil }})
	defer q.ShutDown()
	h := q.Handler()
	h.OnAdd(pod("ns", "added"), false)
	h.OnUpdate(pod("ns", "old"), pod("ns", "updated"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/deleted", Obj: pod("ns", "deleted")})
	got := map[string]bool{}
	for q.Len() > 0 {
		k, _ := q.q.Get()
		got[k] = true
		q.q.Done(k)
	}
	want := map[string]bool{"ns/added": true, "ns/updated": true, "ns/deleted": true}
	if len(got) != len(want) {
		t.Fatalf("keys = %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("key %s not enqueued; got %v", k, got)
		}
	}
}

// TestRunRetriesUntilSuccess: a failing key is reported and requeued with
// back-off, a succeeding one is forgotten, and Run returns once ctx ends.
func TestRunRetriesUntilSuccess(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	var failures []int
	done := make(chan struct{})
	errFlaky := errors.New("flaky")
	q := New(Config{
		Name:        "test",
		RateLimiter: fastLimiter(),
		Sync: func(_ context.Context, key string) error {
			mu.Lock()
			defer mu.Unlock()
			calls[key]++
			if key == "ns/flaky" && calls[key] < 3 {
				return errFlaky
			}
			if key == "ns/flaky" {
				close(done)
			}
			return nil
		},
		Failed: func(_ context.Context, key string, err error, retries int) {
			if key != "ns/flaky" || !errors.Is(err, errFlaky) {
				t.Errorf("Failed(%q, %v)", key, err)
			}
			mu.Lock()
			failures = append(failures, retries)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { q.Run(ctx, 2); close(stopped) }()
	q.Enqueue(pod("ns", "ok"))
	q.Enqueue(pod("ns", "flaky"))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("flaky key never synced")
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["ns/ok"] != 1 || calls["ns/flaky"] != 3 {
		t.Errorf("calls = %v, want ns/ok once and ns/flaky 3 times", calls)
	}
	if len(failures) != 2 || failures[0] != 0 || failures[1] != 1 {
		t.Errorf("retries reported = %v, want [0 1]", failures)
	}
	if n := q.q.NumRequeues("ns/flaky"); n != 0 {
		t.Errorf("NumRequeues after success = %d, want 0 (forgotten)", n)
	}
}

func TestMetaAndUnwrap(t *testing.T) {
	p := pod("ns", "a")
	for _, tc := range []struct {
		name string
		obj  any
		want metav1.Object
	}{
		{"object", p, p},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: p}, p},
		{"no metadata", 42, nil},
		{"empty tombstone", cache.DeletedFinalStateUnknown{Key: "ns/a"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Meta(tc.obj); got != tc.want {
				t.Errorf("Meta = %v, want %v", got, tc.want)
			}
		})
	}
	if Unwrap(cache.DeletedFinalStateUnknown{Obj: p}) != p || Unwrap(p) != p {
		t.Error("Unwrap did not return the object")
	}
}
