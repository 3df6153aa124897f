package write

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
)

// ErrNotAnswering is the error of a call to a cluster that passed its
// deadline, and of every call after it in the same write: a cluster that
// accepts connections and answers nothing would otherwise cost a deadline
// per object, minutes for a write of a few hundred.
var ErrNotAnswering = errors.New("the member's API server did not answer in time; its other writes wait for the next sync")

// Gate is the deadline of each call of one write into one cluster, and
// whether a call has passed it. One write makes one Gate: a new write
// asks a cluster that answers again.
type Gate struct {
	timeout time.Duration
	tripped atomic.Bool
}

// NewGate returns the gate of one write whose calls each get timeout (0:
// none but the caller's).
func NewGate(timeout time.Duration) *Gate { return &Gate{timeout: timeout} }

// Do runs call with its own deadline, unless the cluster has already let
// one pass or ctx has ended; the error it returns is cut.
func Do[T any](ctx context.Context, g *Gate, call func(context.Context) (T, error)) (T, error) {
	var zero T
	if g.tripped.Load() {
		return zero, ErrNotAnswering
	}
	// A stopped write asks nothing more: a client need not honour a done
	// context at once, and a stop waits for the write (lane.Set.Stop).
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("not sent, the write stopped: %w", err)
	}
	if g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	out, err := call(ctx)
	// Only the client's own deadline trips the gate: a server that says it
	// timed out (a slow webhook) has answered, and no server's answer
	// becomes a context's error.
	own := errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)
	err = kubeclient.Cut(err)
	if own && kubeclient.IsTimeout(err) {
		g.tripped.Store(true)
		return out, fmt.Errorf("%w: %w (after %s)", ErrNotAnswering, err, g.timeout)
	}
	return out, err
}

// Bound returns c with every call through g.
func Bound[T metav1.Object, L any](c Client[T, L], g *Gate) Client[T, L] {
	return bounded[T, L]{g: g, c: c}
}

type bounded[T metav1.Object, L any] struct {
	g *Gate
	c Client[T, L]
}

func (b bounded[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	return Do(ctx, b.g, func(ctx context.Context) (T, error) { return b.c.Create(ctx, obj, opts) })
}

func (b bounded[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return Do(ctx, b.g, func(ctx context.Context) (T, error) { return b.c.Update(ctx, obj, opts) })
}

func (b bounded[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	return Do(ctx, b.g, func(ctx context.Context) (T, error) { return b.c.Get(ctx, name, opts) })
}

func (b bounded[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	_, err := Do(ctx, b.g, func(ctx context.Context) (struct{}, error) { return struct{}{}, b.c.Delete(ctx, name, opts) })
	return err
}

func (b bounded[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	return Do(ctx, b.g, func(ctx context.Context) (L, error) { return b.c.List(ctx, opts) })
}

// Refusal reports whether err is a cluster's answer about one object
// (kubeclient.Refusal): denied, invalid, its name another's, changed or
// gone meanwhile. Anything else (no answer, throttling, a server error, a
// webhook that could not be called) says nothing of the object and is
// the cluster's.
func Refusal(err error) bool {
	return !errors.Is(err, ErrNotAnswering) && kubeclient.Refusal(err)
}

// NotAnswering reports whether err says the cluster did not answer a call
// of the write in time: the rest of that write was not asked.
func NotAnswering(err error) bool {
	return errors.Is(err, ErrNotAnswering) || kubeclient.IsTimeout(err)
}
