// Package lane runs the writes into each workload cluster one at a time,
// in the background: a lane per cluster. A sync hands a lane its write
// and waits for it a short while at most, so a cluster that is slow, or
// accepts connections and answers nothing, delays its own writes and no
// other cluster's, and no other sync.
//
// A lane holds one running write and at most one waiting: a newer write
// replaces the waiting one (what a cluster should hold is what the newest
// sync computed), so a burst of syncs costs a cluster one write more, not
// one each. A write that fails delays the next one of its lane by a
// backoff that doubles up to MaxBackoff; one that succeeds resets it. A
// write whose result no sync collected reports its owner to Done when it
// ends, so the owner's status catches up without a poll; one it
// collected is not reported, or every sync would cause another. A write
// that waits out its lane's backoff is returned with the error of the
// write that failed before it (Result.Backoff): nothing of the cluster
// runs then, and the sync says why rather than "still writing".
package lane

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults of Config.
const (
	// DefaultWait is how long a sync waits for its writes: long enough for
	// a healthy cluster's write, short enough that a frozen one does not
	// hold a worker.
	DefaultWait = 500 * time.Millisecond
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait before a
	// lane's next write after a failed one.
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 2 * time.Minute
)

// ErrReplaced is the result of a write that a newer write of its lane
// replaced before it started.
var ErrReplaced = errors.New("replaced by a newer write before it started")

// Config of a Set; zero fields take the defaults.
type Config struct {
	Wait       time.Duration
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// Done is called with a write's owner when it ends and no sync has
	// collected its result (the sync stopped waiting before).
	Done func(owner string)
}

// Set is the lanes of every cluster the controller writes to.
type Set struct {
	cfg Config

	mu      sync.Mutex
	ctx     context.Context
	lanes   map[string]*lane
	running sync.WaitGroup
}

// lane is one cluster's writes.
type lane struct {
	running *Write
	next    *Write
	// notBefore is when the next write may start (backoff); failures
	// counts the failed writes in a row.
	notBefore time.Time
	failures  int
	// lastErr is the error of the last write that ended, nil after a
	// success.
	lastErr error
	timer   *time.Timer
	// slow: the last write ran past its sync's wait; the next one is not
	// waited for, so a frozen cluster costs no sync its wait twice.
	slow bool
}

// Write is one write handed to a lane.
type Write struct {
	owner string
	run   func(context.Context) error
	done  chan struct{}

	mu  sync.Mutex
	err error
	// abandoned: a sync stopped waiting for the write before it ended;
	// its end is reported to Config.Done.
	abandoned bool
}

// NewSet returns a Set; its writes run once Start has given it a context.
func NewSet(cfg Config) *Set {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	return &Set{cfg: cfg, lanes: map[string]*lane{}}
}

// Start sets the context every write runs in: the controller's lifetime.
// Once it is done no write starts; Stop waits for those running.
func (s *Set) Start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
}

// Stop returns once every running write has ended (they end with the
// context of Start); the waiting ones end with its error.
func (s *Set) Stop() {
	s.mu.Lock()
	for _, l := range s.lanes {
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
		if l.next != nil {
			l.next.finish(errors.New("the controller stopped"))
			l.next = nil
		}
	}
	s.mu.Unlock()
	s.running.Wait()
}

// Submit hands run to the lane of cluster, for owner (who is told by
// Config.Done when the write ends unwaited). It replaces a write of the
// lane that has not started.
func (s *Set) Submit(cluster, owner string, run func(context.Context) error) *Write {
	w := &Write{owner: owner, run: run, done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.ctx.Err() != nil {
		w.finish(errors.New("the controller is not running"))
		return w
	}
	l := s.lanes[cluster]
	if l == nil {
		l = &lane{}
		s.lanes[cluster] = l
	}
	if l.next != nil {
		l.next.finish(ErrReplaced)
	}
	l.next = w
	s.startLocked(cluster, l)
	return w
}

// startLocked starts the lane's waiting write, now or once its backoff
// has passed.
func (s *Set) startLocked(cluster string, l *lane) {
	if l.running != nil || l.next == nil {
		return
	}
	if s.ctx.Err() != nil {
		l.next.finish(s.ctx.Err())
		l.next = nil
		return
	}
	if wait := time.Until(l.notBefore); wait > 0 {
		if l.timer == nil {
			l.timer = time.AfterFunc(wait, func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				l.timer = nil
				s.startLocked(cluster, l)
			})
		}
		return
	}
	w := l.next
	l.next, l.running = nil, w
	ctx := s.ctx
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		start := time.Now()
		err := w.run(ctx)
		s.mu.Lock()
		l.running = nil
		l.slow = time.Since(start) > s.cfg.Wait
		l.lastErr = err
		if err != nil {
			l.failures++
			l.notBefore = time.Now().Add(s.backoff(l.failures))
		} else {
			l.failures, l.notBefore = 0, time.Time{}
		}
		if ctx.Err() == nil {
			s.startLocked(cluster, l)
		}
		s.mu.Unlock()
		if w.finish(err) && s.cfg.Done != nil && ctx.Err() == nil {
			s.cfg.Done(w.owner)
		}
	}()
}

// backoffOf is the error of the failed write after which w waits in the
// lane of cluster, nil unless w is the lane's waiting write and nothing
// of the lane runs.
func (s *Set) backoffOf(cluster string, w *Write) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[cluster]
	if l == nil || l.next != w || l.running != nil {
		return nil
	}
	return l.lastErr
}

func (s *Set) backoff(failures int) time.Duration {
	return Backoff(s.cfg.MinBackoff, s.cfg.MaxBackoff, failures)
}

// Backoff is the wait after failures in a row: minWait after the first,
// doubling with each one more, never above maxWait.
func Backoff(minWait, maxWait time.Duration, failures int) time.Duration {
	d := minWait
	for i := 1; i < failures && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// finish records err as w's result and reports whether a sync stopped
// waiting for it before.
func (w *Write) finish(err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.done:
		return false
	default:
	}
	w.err = err
	close(w.done)
	return w.abandoned
}

// Result is what became of a write when its sync stopped waiting.
type Result struct {
	// Ended: the write ended, with Err.
	Ended bool
	Err   error
	// Backoff: the write had not started, waiting out its lane's backoff
	// after the lane's last write failed with this error. Nothing of the
	// cluster runs meanwhile, so this, not "still writing", is what the
	// sync has to say of it.
	Backoff error
}

// Wait waits for the writes, Config.Wait at most in all (not at all for
// a write in a lane whose last write ran past its wait), and returns the
// result of each, in order. The end of a write that had not ended is
// reported to Config.Done.
func (s *Set) Wait(ctx context.Context, clusters []string, writes []*Write) []Result {
	s.mu.Lock()
	slow := make([]bool, len(writes))
	for i, c := range clusters {
		if l := s.lanes[c]; l != nil && l.slow {
			slow[i] = true
		}
	}
	s.mu.Unlock()
	timer := time.NewTimer(s.cfg.Wait)
	defer timer.Stop()
	expired := false
	out := make([]Result, len(writes))
	for i, w := range writes {
		if !slow[i] && !expired {
			select {
			case <-w.done:
			case <-timer.C:
				expired = true
			case <-ctx.Done():
				expired = true
			}
		}
		// The lane's state first: finish takes w.mu under s.mu.
		backoff := s.backoffOf(clusters[i], w)
		w.mu.Lock()
		select {
		case <-w.done:
			out[i] = Result{Ended: true, Err: w.err}
		default:
			w.abandoned = true
			out[i].Backoff = backoff
		}
		w.mu.Unlock()
	}
	return out
}
