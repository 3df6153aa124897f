// Package lane is the one writer into the workload clusters: every write
// the controller makes into a cluster, for a GatewayDNS (package publish)
// or a ClusterSet (package clusterset), runs in that cluster's lane, in
// the background. A sync hands a lane its write and waits for it a short
// while at most, so a cluster that is slow, or accepts connections and
// answers nothing, delays its own writes and no other cluster's, and no
// other sync.
//
// A lane runs at most Config.PerCluster writes at once, and at most one
// of each owner (a GatewayDNS or a ClusterSet); the others wait in the
// order they came. An owner has at most one write waiting per lane: its
// newer write replaces it (what a cluster should hold is what the newest
// sync computed), so a burst of syncs costs a cluster one write more, not
// one each. Writes of different owners never replace each other.
//
// A write that fails backs off its whole lane, for every owner: no write
// of the cluster starts before a backoff that doubles up to MaxBackoff;
// one that succeeds resets it. So the run func of a write returns an
// error only for a failure of the cluster itself (no answer, a refused
// connection, throttling, a server error); an object the cluster refuses
// is its caller's to report, and costs the lane nothing. Writes that ran
// together into one outage count as one failure.
//
// A write whose result no sync collected calls its done func when it
// ends, so its owner's status catches up without a poll; one a sync
// collected does not, or every sync would cause another. A write that
// waits out its lane's backoff is returned with the error of the write
// that failed and the time of the next try (Result.Backoff): its sync
// says why rather than "still writing".
//
// A lane whose writes all ended well, and not slowly, is dropped: the
// Set holds lanes for the clusters being written or backed off, not for
// every cluster ever written.
package lane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
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
	// DefaultPerCluster is how many writes of one cluster run at once:
	// one of each reconciler can run side by side, so a GatewayDNS write
	// does not wait for a long ClusterSet write, while a slow cluster
	// holds no more than two goroutines and connections' worth of work.
	// More would only queue on the cluster's client, whose rate limit
	// both share.
	DefaultPerCluster = 2
)

// ErrReplaced is the result of a write that a newer write of its owner
// and lane replaced before it started.
var ErrReplaced = errors.New("replaced by a newer write before it started")

// ErrForgotten ends the writes still waiting in the lane of a cluster
// that is gone (Forget).
var ErrForgotten = errors.New("the cluster is gone")

// errStopped ends the writes still waiting when the Set stops.
var errStopped = errors.New("the controller stopped")

// Config of a Set; zero fields take the defaults.
type Config struct {
	Wait       time.Duration
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// PerCluster bounds the writes of one cluster that run at once.
	PerCluster int
}

// Set is the lanes of every cluster the controller writes to, shared by
// both reconcilers.
type Set struct {
	cfg Config

	mu      sync.Mutex
	ctx     context.Context
	lanes   map[string]*lane
	running sync.WaitGroup
}

// lane is one cluster's writes.
type lane struct {
	// running holds the writes running, by owner; waiting those not
	// started, in the order they came, one per owner.
	running map[string]*Write
	waiting []*Write
	// notBefore is when the next write may start (backoff); failures
	// counts the failures in a row, failedAt is when the last one ended:
	// a write that started before it failed in the same outage.
	notBefore time.Time
	failures  int
	failedAt  time.Time
	// lastErr is the error of the last write that failed, nil after a
	// success.
	lastErr error
	timer   *time.Timer
	// slow: the last write ran past its sync's wait; the next ones are
	// not waited for, so a frozen cluster costs no sync its wait twice.
	slow bool
	// forgotten: the cluster is gone (Forget); the lane goes once its
	// running writes end.
	forgotten bool
}

// Write is one write handed to a lane.
type Write struct {
	cluster, owner string
	run            func(context.Context) error
	done           func()
	ended          chan struct{}
	// started is guarded by Set.mu.
	started bool

	mu  sync.Mutex
	err error
	// abandoned: a sync stopped waiting for the write before it ended;
	// its end calls done.
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
	if cfg.PerCluster <= 0 {
		cfg.PerCluster = DefaultPerCluster
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
// context of Start); the waiting ones end with an error.
func (s *Set) Stop() {
	s.mu.Lock()
	for _, l := range s.lanes {
		l.endWaiting(errStopped)
	}
	s.mu.Unlock()
	s.running.Wait()
}

// endWaiting ends the lane's waiting writes with err and stops its
// backoff's timer; the writes running go on. Set.mu is held.
func (l *lane) endWaiting(err error) {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	for _, w := range l.waiting {
		w.finish(err)
	}
	l.waiting = nil
}

// Submit hands run to the lane of cluster, for owner. It replaces the
// owner's write of the lane that has not started, if any. done (nil:
// none) is called when the write ends after its sync stopped waiting.
// run returns an error only for a failure of the cluster itself: that
// backs off the lane.
func (s *Set) Submit(cluster, owner string, run func(context.Context) error, done func()) *Write {
	w := &Write{cluster: cluster, owner: owner, run: run, done: done, ended: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.ctx.Err() != nil {
		w.finish(errors.New("the controller is not running"))
		return w
	}
	l := s.lanes[cluster]
	if l == nil {
		l = &lane{running: map[string]*Write{}}
		s.lanes[cluster] = l
	}
	l.forgotten = false
	if i := slices.IndexFunc(l.waiting, func(o *Write) bool { return o.owner == owner }); i >= 0 {
		// The owner keeps its place in the order.
		l.waiting[i].finish(ErrReplaced)
		l.waiting[i] = w
	} else {
		l.waiting = append(l.waiting, w)
	}
	s.startLocked(cluster, l)
	return w
}

// startLocked starts the lane's waiting writes, as many as it may run and
// in their order, now or once its backoff has passed.
func (s *Set) startLocked(cluster string, l *lane) {
	if s.ctx.Err() != nil {
		for _, w := range l.waiting {
			w.finish(s.ctx.Err())
		}
		l.waiting = nil
		return
	}
	if len(l.waiting) == 0 {
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
	for len(l.running) < s.cfg.PerCluster {
		// The first write whose owner has none running.
		i := slices.IndexFunc(l.waiting, func(w *Write) bool { return l.running[w.owner] == nil })
		if i < 0 {
			return
		}
		w := l.waiting[i]
		l.waiting = slices.Delete(l.waiting, i, i+1)
		l.running[w.owner] = w
		w.started = true
		s.running.Add(1)
		go s.run(cluster, l, w, s.ctx)
	}
}

// run runs w in its lane and records how it went: a failure backs off
// the lane, a success resets the backoff.
func (s *Set) run(cluster string, l *lane, w *Write, ctx context.Context) {
	defer s.running.Done()
	start := time.Now()
	err := w.run(ctx)
	s.mu.Lock()
	now := time.Now()
	delete(l.running, w.owner)
	l.slow = now.Sub(start) > s.cfg.Wait
	switch {
	case err == nil:
		l.failures, l.notBefore, l.lastErr = 0, time.Time{}, nil
	case start.Before(l.failedAt):
		// It ran into the outage that backed off the lane already.
		l.lastErr = err
	default:
		l.failures++
		l.failedAt, l.lastErr = now, err
		l.notBefore = now.Add(s.backoff(l.failures))
	}
	s.startLocked(cluster, l)
	if len(l.running) == 0 && len(l.waiting) == 0 && (l.forgotten || l.failures == 0 && !l.slow) && s.lanes[cluster] == l {
		// Nothing of it to keep: a cluster that is gone, or written
		// again later, costs no lane meanwhile.
		delete(s.lanes, cluster)
	}
	s.mu.Unlock()
	if w.finish(err) && w.done != nil && ctx.Err() == nil {
		w.done()
	}
}

// Forget drops the lane of cluster, whose Cluster is gone: its backoff,
// its last error and its waiting writes (which end with ErrForgotten),
// and the lane itself once its running writes end. A lane that failed or
// was slow is otherwise kept for its backoff, so without Forget each
// Cluster that ever failed would cost one for as long as the controller
// runs. A later write of the cluster starts a new lane.
func (s *Set) Forget(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[cluster]
	if l == nil {
		return
	}
	l.endWaiting(ErrForgotten)
	if len(l.running) == 0 {
		delete(s.lanes, cluster)
		return
	}
	l.forgotten = true
}

// Len is how many lanes the Set keeps.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lanes)
}

func (s *Set) backoff(failures int) time.Duration {
	return kubeclient.Backoff(s.cfg.MinBackoff, s.cfg.MaxBackoff, failures)
}

// finish records err as w's result and reports whether a sync stopped
// waiting for it before.
func (w *Write) finish(err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.ended:
		return false
	default:
	}
	w.err = err
	close(w.ended)
	return w.abandoned
}

// Result is what became of a write when its sync stopped waiting.
type Result struct {
	// Ended: the write ended, with Err.
	Ended bool
	Err   error
	// Backoff: the write had not started, its lane backed off after a
	// write failed with this error; it starts at NextTry at the
	// earliest. The cluster failed, so this, not "still writing", is
	// what the sync has to say of it.
	Backoff error
	NextTry time.Time
}

// BackoffError is what a sync reports of a write that waits out its
// lane's backoff (Backoff not nil): the failure, and when the next try is.
func (r Result) BackoffError() error {
	return fmt.Errorf("%w; next try at %s", r.Backoff, r.NextTry.UTC().Format(time.RFC3339))
}

// Wait waits for the writes, Config.Wait at most in all (not at all for
// a write of a lane whose last write ran past its wait, or that is
// backed off beyond the wait), and returns the result of each, in order.
// A write that had not ended calls its done func when it does.
func (s *Set) Wait(ctx context.Context, writes []*Write) []Result {
	deadline := time.Now().Add(s.cfg.Wait)
	skip := make([]bool, len(writes))
	s.mu.Lock()
	for i, w := range writes {
		if l := s.lanes[w.cluster]; l != nil {
			skip[i] = l.slow || (!w.started && l.notBefore.After(deadline))
		}
	}
	s.mu.Unlock()
	timer := time.NewTimer(s.cfg.Wait)
	defer timer.Stop()
	expired := false
	for i, w := range writes {
		if skip[i] || expired {
			continue
		}
		select {
		case <-w.ended:
		case <-timer.C:
			expired = true
		case <-ctx.Done():
			expired = true
		}
	}
	out := make([]Result, len(writes))
	now := time.Now()
	// Set.mu before Write.mu, as Submit and Stop take them.
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range writes {
		w.mu.Lock()
		select {
		case <-w.ended:
			out[i] = Result{Ended: true, Err: w.err}
		default:
			w.abandoned = true
			if l := s.lanes[w.cluster]; l != nil && !w.started && l.lastErr != nil && l.notBefore.After(now) {
				out[i].Backoff, out[i].NextTry = l.lastErr, l.notBefore
			}
		}
		w.mu.Unlock()
	}
	return out
}
