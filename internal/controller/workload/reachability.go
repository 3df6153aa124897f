package workload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
)

// The reachability of one workload cluster: its reads (informers' lists
// and watches, and the readiness probe) fail or go through, and once
// every one has failed for UnreachableAfter the cluster counts as
// unreachable until one goes through again. Beside it, whether the
// cluster is cut off for passing its read limits (limits.go).

// reads is what bounds the reads from one workload cluster: its limits,
// the objects and bytes its informers hold together, and whether it is
// cut off.
type reads struct {
	limits ReadLimits
	// held counts the objects in the informers' stores, listed those of
	// the lists being paged.
	held, listed atomic.Int64
	// bytes counts the bytes of the objects in the stores (cachedBytes)
	// and of the lists being read (listRead).
	bytes  atomic.Int64
	now    func() time.Time
	logger klog.Logger

	mu     sync.Mutex
	cutMsg string
	cutAt  time.Time
	// failSince is when the reads of the cluster started failing, none
	// going through since (zero: the last one went through), failErr the
	// first error; failTimer says so once UnreachableAfter has passed.
	failSince time.Time
	failErr   error
	failTimer *time.Timer
	// failByProbe: only the probe (probed) has failed since failSince, so
	// the probe answering again clears it; once a read fails too, only a
	// read that goes through does.
	failByProbe bool
	// onReachability is called when the cluster turns unreachable or
	// answers again: nothing else would sync the GatewayDNS that use it.
	onReachability func()
}

func newReads(limits ReadLimits, logger klog.Logger) *reads {
	return &reads{limits: limits.withDefaults(), now: time.Now, logger: logger}
}

// cutOff records that the cluster is cut off, and why.
func (r *reads) cutOff(msg string) {
	r.mu.Lock()
	r.cutMsg, r.cutAt = msg, r.now()
	r.mu.Unlock()
	r.logger.Info("Workload cluster cut off", "reason", msg, "retryAfter", r.limits.CutOffRetry)
}

// cut returns why the cluster is cut off, or "" once it is not (never,
// or longer ago than CutOffRetry: its informers may start again).
func (r *reads) cut() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cutMsg == "" || r.now().Sub(r.cutAt) >= r.limits.CutOffRetry {
		return ""
	}
	return r.cutMsg
}

// failed records a read of the cluster that did not go through. One
// ended by the controller (an informer stopped) says nothing of it, and
// one the API server refused (forbidden, not found, ...) is an answer.
func (r *reads) failed(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code > 0 && status.Status().Code < http.StatusInternalServerError {
		r.answered()
		return
	}
	r.fail(err, false)
}

// probed records what the probe of the cluster's API server got: a
// failure counts as a failed read; an answer clears only a failure the
// probe itself started, so an API server that answers the probe while
// every read fails still turns unreachable.
func (r *reads) probed(err error) {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code > 0 && status.Status().Code < http.StatusInternalServerError {
		err = nil // refused (forbidden, ...): an answer
	}
	if err != nil {
		r.fail(err, true)
		return
	}
	r.mu.Lock()
	byProbe := !r.failSince.IsZero() && r.failByProbe
	r.mu.Unlock()
	if byProbe {
		r.answered()
	}
}

func (r *reads) fail(err error, byProbe bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failSince.IsZero() {
		r.failByProbe = r.failByProbe && byProbe
		return
	}
	since := r.now()
	// The error is the API server's to word: it is kept, and said in
	// every status of the cluster until a read goes through, so cut.
	r.failSince, r.failErr, r.failByProbe = since, kubeclient.Cut(err), byProbe
	r.failTimer = time.AfterFunc(r.limits.UnreachableAfter, func() {
		r.mu.Lock()
		still := r.failSince.Equal(since)
		r.mu.Unlock()
		if still {
			r.logger.Info("Workload cluster unreachable", "since", since, "err", err)
			r.notify()
		}
	})
}

// answered records a read of the cluster that went through.
func (r *reads) answered() {
	r.mu.Lock()
	was := !r.failSince.IsZero() && r.now().Sub(r.failSince) >= r.limits.UnreachableAfter
	if r.failTimer != nil {
		r.failTimer.Stop()
	}
	r.failSince, r.failErr, r.failTimer, r.failByProbe = time.Time{}, nil, nil, false
	r.mu.Unlock()
	if was {
		r.logger.Info("Workload cluster answers again")
		r.notify()
	}
}

func (r *reads) notify() {
	if r.onReachability != nil {
		r.onReachability()
	}
}

// unreachable returns why the cluster counts as unreachable (every read
// has failed for UnreachableAfter at least), or "" when it does not.
func (r *reads) unreachable() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failSince.IsZero() || r.now().Sub(r.failSince) < r.limits.UnreachableAfter {
		return ""
	}
	return fmt.Sprintf("the API server has not answered since %s: %v", r.failSince.UTC().Format(time.RFC3339), r.failErr)
}
