package lane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newTestSet(t *testing.T, cfg Config) (*Set, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := NewSet(cfg)
	s.Start(ctx)
	t.Cleanup(func() { cancel(); s.Stop() })
	return s, ctx
}

// A frozen cluster's write delays neither the other cluster's nor the
// sync past its wait; its end is reported to Done, and the next sync
// does not wait for that lane at all.
func TestFrozenLaneDelaysOnlyItself(t *testing.T) {
	doneOwners := make(chan string, 4)
	s, ctx := newTestSet(t, Config{Wait: 100 * time.Millisecond})
	release := make(chan struct{})
	frozen := s.Submit("b", "set-1", func(context.Context) error { <-release; return errors.New("no answer") }, func() { doneOwners <- "set-1" })
	healthy := s.Submit("a", "set-1", func(context.Context) error { return nil }, nil)
	start := time.Now()
	res := s.Wait(ctx, []*Write{frozen, healthy})
	if took := time.Since(start); took > time.Second {
		t.Errorf("the sync waited %s", took)
	}
	if res[0].Ended || !res[1].Ended || res[1].Err != nil {
		t.Fatalf("results %+v: want the frozen one running, the healthy one ended", res)
	}
	time.Sleep(50 * time.Millisecond) // well past the wait
	close(release)
	select {
	case o := <-doneOwners:
		if o != "set-1" {
			t.Errorf("Done(%q)", o)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the frozen write's end was never reported")
	}
	// The lane ran past its wait: the next sync does not wait for it.
	again := s.Submit("b", "set-1", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, nil)
	start = time.Now()
	if r := s.Wait(ctx, []*Write{again}); r[0].Ended {
		t.Errorf("%+v", r)
	}
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Errorf("waited %s for a lane known to be slow", took)
	}
}

// A write submitted while one runs waits; a newer one replaces it, and
// the writes of one lane never overlap.
func TestNewerWriteReplacesTheWaitingOne(t *testing.T) {
	s, ctx := newTestSet(t, Config{Wait: time.Second})
	var running, most atomic.Int32
	var mu sync.Mutex
	var ran []int
	write := func(n int) func(context.Context) error {
		return func(context.Context) error {
			if r := running.Add(1); r > most.Load() {
				most.Store(r)
			}
			defer running.Add(-1)
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			ran = append(ran, n)
			mu.Unlock()
			return nil
		}
	}
	w1 := s.Submit("a", "o", write(1), nil)
	w2 := s.Submit("a", "o", write(2), nil)
	w3 := s.Submit("a", "o", write(3), nil)
	res := s.Wait(ctx, []*Write{w1, w2, w3})
	if !res[1].Ended || !errors.Is(res[1].Err, ErrReplaced) {
		t.Errorf("the replaced write: %+v", res[1])
	}
	if !res[0].Ended || !res[2].Ended || res[0].Err != nil || res[2].Err != nil {
		t.Errorf("results %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 2 || ran[0] != 1 || ran[1] != 3 || most.Load() != 1 {
		t.Errorf("ran %v, %d at once; want [1 3], one at a time", ran, most.Load())
	}
}

// After a failed write the lane's next one waits for the backoff, which
// doubles up to its maximum and resets after a success.
func TestFailedWriteBacksOff(t *testing.T) {
	s, ctx := newTestSet(t, Config{Wait: 2 * time.Second, MinBackoff: 200 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
	fail := func(context.Context) error { return errors.New("refused") }
	s.Wait(ctx, []*Write{s.Submit("a", "o", fail, nil)})
	for _, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond} {
		start := time.Now()
		var started time.Time
		w := s.Submit("a", "o", func(context.Context) error { started = time.Now(); return errors.New("refused") }, nil)
		if r := s.Wait(ctx, []*Write{w}); !r[0].Ended {
			t.Fatalf("want %s: the write never ended", want)
		}
		if got := started.Sub(start); got < want*9/10 || got > want*3 {
			t.Errorf("the write after a failure started after %s, want about %s", got, want)
		}
	}
	time.Sleep(450 * time.Millisecond)
	s.Wait(ctx, []*Write{s.Submit("a", "o", func(context.Context) error { return nil }, nil)})
	start := time.Now()
	s.Wait(ctx, []*Write{s.Submit("a", "o", fail, nil)})
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("the write after a success waited %s", took)
	}
}

// Stop cancels the writes' context and returns once they have ended; a
// write submitted after it does not run.
func TestStopEndsTheWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := NewSet(Config{Wait: 10 * time.Millisecond})
	s.Start(ctx)
	w := s.Submit("a", "o", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, nil)
	cancel()
	s.Stop()
	if r := s.Wait(context.Background(), []*Write{w}); !r[0].Ended {
		t.Error("a running write had not ended when Stop returned")
	}
	var ran atomic.Bool
	late := s.Submit("a", "o", func(context.Context) error { ran.Store(true); return nil }, nil)
	if r := s.Wait(context.Background(), []*Write{late}); !r[0].Ended || r[0].Err == nil || ran.Load() {
		t.Errorf("a write after Stop: %+v, ran %v", r[0], ran.Load())
	}
}

// A write whose sync collected its result is not reported to Done:
// otherwise every sync would cause the next.
func TestCollectedWriteIsNotReported(t *testing.T) {
	var reported atomic.Int32
	s, ctx := newTestSet(t, Config{Wait: time.Second})
	report := func() { reported.Add(1) }
	w := s.Submit("a", "o", func(context.Context) error { return nil }, report)
	time.Sleep(20 * time.Millisecond) // it ends before the sync waits
	if r := s.Wait(ctx, []*Write{w}); !r[0].Ended {
		t.Fatal("not ended")
	}
	w = s.Submit("a", "o", func(context.Context) error { return nil }, report)
	s.Wait(ctx, []*Write{w})
	time.Sleep(20 * time.Millisecond)
	if n := reported.Load(); n != 0 {
		t.Errorf("%d collected writes reported to Done", n)
	}
}

// A write that waits out its lane's backoff carries the error of the
// write that failed before it: its sync has that to say of the cluster,
// for nothing of the cluster runs. A write behind a running one, or one
// after a success, carries none.
func TestWriteInBackoffCarriesTheFailure(t *testing.T) {
	s, ctx := newTestSet(t, Config{Wait: 50 * time.Millisecond, MinBackoff: 300 * time.Millisecond})
	refused := errors.New("refused")
	s.Wait(ctx, []*Write{s.Submit("a", "o", func(context.Context) error { return refused }, nil)})
	r := s.Wait(ctx, []*Write{s.Submit("a", "o", func(context.Context) error { return nil }, nil)})
	if r[0].Ended || !errors.Is(r[0].Backoff, refused) {
		t.Fatalf("a write waiting out the backoff: %+v, want not ended, Backoff %v", r[0], refused)
	}
	time.Sleep(400 * time.Millisecond)
	release := make(chan struct{})
	defer close(release)
	s.Submit("a", "o", func(context.Context) error { <-release; return nil }, nil)
	r = s.Wait(ctx, []*Write{s.Submit("a", "o", func(context.Context) error { return nil }, nil)})
	if r[0].Ended || r[0].Backoff != nil {
		t.Errorf("a write behind a running one after a success: %+v, want not ended, no Backoff", r[0])
	}
}

// A lane whose writes ended well is dropped: clusters written once, or
// gone, cost nothing; a lane backed off after a failure is kept, and
// so is its backoff.
func TestIdleLaneIsDropped(t *testing.T) {
	s, ctx := newTestSet(t, Config{Wait: time.Second, MinBackoff: time.Hour})
	lanes := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.lanes)
	}
	for _, c := range []string{"a", "b", "c"} {
		s.Wait(ctx, []*Write{s.Submit(c, "set-1", func(context.Context) error { return nil }, nil)})
	}
	if n := lanes(); n != 0 {
		t.Errorf("%d lanes kept after every write ended well", n)
	}
	s.Wait(ctx, []*Write{s.Submit("d", "set-1", func(context.Context) error { return errors.New("no answer") }, nil)})
	if n := lanes(); n != 1 {
		t.Fatalf("%d lanes kept; want the failed one", n)
	}
	if r := s.Wait(ctx, []*Write{s.Submit("d", "set-1", func(context.Context) error { return nil }, nil)}); r[0].Backoff == nil {
		t.Errorf("%+v: want the failed lane still backed off", r[0])
	}
}

// 200 clusters whose writes failed, or ran past their sync's wait, keep
// their lanes (the backoff) until their Clusters are gone: Forget then
// leaves none, also of a write still running when it was called.
func TestForgetLeavesNoLane(t *testing.T) {
	s, ctx := newTestSet(t, Config{Wait: 10 * time.Millisecond, MinBackoff: time.Hour})
	release := make(chan struct{})
	var writes []*Write
	for i := range 200 {
		cluster := fmt.Sprint("ns/c", i)
		run := func(context.Context) error { return errors.New("refused: " + cluster) }
		if i%2 == 1 {
			run = func(context.Context) error { <-release; return nil }
		}
		writes = append(writes, s.Submit(cluster, "set-1", run, nil))
	}
	s.Wait(ctx, writes)
	if n := s.Len(); n != 200 {
		t.Fatalf("%d lanes after the writes, want 200 (failed or slow)", n)
	}
	// A second write waits in each failed lane, out its backoff.
	for i := 0; i < 200; i += 2 {
		s.Submit(fmt.Sprint("ns/c", i), "set-2", func(context.Context) error { return nil }, nil)
	}
	for i := range 200 {
		s.Forget(fmt.Sprint("ns/c", i))
	}
	close(release)
	for _, w := range writes {
		<-w.ended
	}
	if n := s.Len(); n != 0 {
		t.Errorf("%d lanes left after every cluster was forgotten", n)
	}
}
