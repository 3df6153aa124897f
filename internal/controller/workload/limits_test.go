package workload

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// The probe's failure counts as a failed read; its answer clears only a
// failure it started, so an API server answering the probe while every
// read fails still turns unreachable.
func TestReadsProbe(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newReads(ReadLimits{UnreachableAfter: 10 * time.Second}, klog.Background())
	r.now = func() time.Time { return now }
	down := errors.New("connection refused")

	r.probed(down)
	now = now.Add(11 * time.Second)
	if r.unreachable() == "" {
		t.Fatal("probe failing for longer than UnreachableAfter: want unreachable")
	}
	r.probed(nil)
	if r.unreachable() != "" {
		t.Fatal("the probe answers again: want reachable")
	}

	r.probed(down)
	r.failed(down) // a read fails too
	now = now.Add(11 * time.Second)
	r.probed(nil)
	if r.unreachable() == "" {
		t.Error("reads failing while the probe answers: want unreachable")
	}
	r.answered()
	if r.unreachable() != "" {
		t.Error("a read went through: want reachable")
	}

	r.probed(apierrors.NewForbidden(schema.GroupResource{}, "readyz", errors.New("no")))
	now = now.Add(11 * time.Second)
	if r.unreachable() != "" {
		t.Error("a probe refused with 403 is an answer: want reachable")
	}
}
