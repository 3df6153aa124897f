package workload

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// A cluster is unreachable once every read has failed for
// UnreachableAfter, and says since when; a read that goes through, or a
// refusal (the server answered), ends it; an informer stopped by the
// controller says nothing. Turning unreachable and answering again each
// notify once.
func TestReadsReachability(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := newReads(ReadLimits{UnreachableAfter: 50 * time.Millisecond}, klog.Background())
	r.now = func() time.Time { return now }
	var notified atomic.Int32
	r.onReachability = func() { notified.Add(1) }
	refused := errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")

	r.failed(context.Canceled)
	r.failed(apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "", errors.New("no")))
	r.failed(refused)
	later := now.Add(10 * time.Second)
	r.failed(errors.New("another error"))
	if got := r.unreachable(); got != "" {
		t.Errorf("unreachable at once: %q", got)
	}
	now = later
	got := r.unreachable()
	if !strings.Contains(got, "since 2026-01-02T03:04:05Z") || !strings.Contains(got, "connection refused") {
		t.Errorf("unreachable %q, want since the first failure, with its error", got)
	}
	for end := time.Now().Add(5 * time.Second); notified.Load() == 0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
	}
	if n := notified.Load(); n != 1 {
		t.Fatalf("notified %d times on turning unreachable, want 1", n)
	}

	r.answered()
	if got := r.unreachable(); got != "" || notified.Load() != 2 {
		t.Errorf("after an answer: unreachable %q, notified %d times, want reachable and a second notice", got, notified.Load())
	}
	r.answered()
	if notified.Load() != 2 {
		t.Errorf("an answer while reachable notified")
	}

	// A refusal is an answer: it ends a failure.
	r.failed(refused)
	r.failed(apierrors.NewUnauthorized("no"))
	now = now.Add(time.Minute)
	if got := r.unreachable(); got != "" {
		t.Errorf("unreachable after the server refused a read: %q", got)
	}
}
