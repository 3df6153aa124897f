package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
)

// targetWorkers is how many target clusters one sync writes to at once.
// Each target is its own API server, so a sync waits on the slowest few
// instead of on the sum of all.
const targetWorkers = 8

// DefaultWait is how long Publish waits for its writes before it reports
// the targets still being written as Pending. A healthy API server takes
// a few milliseconds per slice; the wait only spares a second sync (and a
// status that says Writing for a moment) after a large write.
const DefaultWait = 500 * time.Millisecond

// minRetry and maxRetry bound the backoff of a target whose write timed
// out: it is tried again after minRetry, then twice as long each time.
const (
	minRetry = 5 * time.Second
	maxRetry = time.Minute
)

// Publisher is what the controller loop asks of the write path.
type Publisher interface {
	// Publish brings every target to the desired slices of the GatewayDNS
	// ref ("<ns>/<name>").
	Publish(ctx context.Context, ref string, d desired.Result, targets []Target) Results
	// Remove deletes every slice written for ref, and orphans of deleted
	// GatewayDNS of its namespace, from every target, in the background
	// as Publish writes; then, in the same write and withSelf, the self
	// marker of ref's namespace (ref is its last GatewayDNS).
	Remove(ctx context.Context, ref string, targets []Target, withSelf bool) Results
	// Forget drops what was remembered of ref, a GatewayDNS that is gone,
	// once its writes in flight have stopped.
	Forget(ref string)
	// Wait returns when every write running in the background has ended.
	Wait()
}

var _ Publisher = (*Writer)(nil)

// Target is one workload cluster whose slice namespace receives slices.
type Target struct {
	// Name is the Cluster's name, as status and Events name it.
	Name    string
	Cluster *workload.Cluster
	// Self is the self marker the target should hold (contract.BuildSelf:
	// the Clusters of its destination); nil: none is written.
	Self *discoveryv1.EndpointSlice
}

// Results is what one Publish came to.
type Results struct {
	// Errs holds, by target name, the writes that failed.
	Errs map[string]error
	// Pending holds, sorted, the targets still being written when
	// Publish stopped waiting; Config.Done is called when they are done.
	Pending []string
	// Written counts the slices created, updated or deleted (by the
	// writes that ended while Publish waited).
	Written int
	// Done holds the targets whose write ended without error while
	// Publish waited: they have the generation (or, for Remove, none of
	// the slices). A target skipped (slice namespace absent or not listed
	// yet), still being written or failed is not in it.
	Done []string
	// SelfErrs holds, by target name, the targets of Done whose self
	// marker could not be written (an object of its name the controller
	// did not write); their slices were.
	SelfErrs map[string]error
}

// Config wires a Writer to the controller.
type Config struct {
	// SliceNamespace is the namespace of each target that receives slices.
	SliceNamespace string
	// Resync is the controller's resync period; a target last listed more
	// than half of it ago is listed again.
	Resync time.Duration
	// Written counts slice writes by operation (create, update, delete).
	Written *prometheus.CounterVec
	// Exists reports whether the GatewayDNS ref still exists; slices of one
	// that does not are orphans, deleted at a target's next full list.
	Exists func(ref string) bool
	// Wait bounds how long Publish waits for its writes; 0: DefaultWait.
	Wait time.Duration
	// Done is called with ref when a write Publish stopped waiting for
	// ended, or when a target that timed out may be tried again: the
	// GatewayDNS should be synced again, so its status catches up.
	Done func(ref string)
}

// Writer is the Publisher of the controller.
type Writer struct {
	cfg Config

	mu sync.Mutex
	// records remembers, per GatewayDNS key, what was written to each target.
	records map[string]*record
	// writes counts the writes running, for Wait.
	writes sync.WaitGroup
}

// NewWriter returns a Writer that remembers nothing yet: its first Publish
// of each GatewayDNS lists every target.
func NewWriter(cfg Config) *Writer {
	if cfg.Wait == 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.Done == nil {
		cfg.Done = func(string) {}
	}
	return &Writer{cfg: cfg, records: map[string]*record{}}
}

// record remembers what the controller wrote for one GatewayDNS: the last
// two generations of its desired slices, the delta between them, and the
// generation written to each target. A target one generation behind is
// brought up to date with the delta alone, since listing every target on
// every sync costs targets x slices (docs/benchmarks.md, section 4).
// gen, cur and delta belong to the Publish of the GatewayDNS; the rest is
// guarded by Writer.mu.
type record struct {
	gen   uint64
	cur   Generation
	delta Delta // from generation gen-1 to gen
	// targets by workload key ("<cluster-ns>/<cluster>").
	targets map[string]targetState
	// busy holds the write in flight per slot: a destination, or a target
	// whose destination is not known. One write per slot at a time.
	busy map[string]*write
	// timedOut holds the targets whose last write timed out, by workload
	// key: they are not written again before their retry time.
	timedOut map[string]*timedOut
	// removing: the GatewayDNS is being deleted; generation gen removes
	// its slices, and a target written at gen holds none.
	removing bool
	// forgotten: the GatewayDNS is gone; writes still running are
	// cancelled and their results dropped.
	forgotten bool
	// writes counts the writes of this record running, for Forget.
	writes sync.WaitGroup
}

// targetState is what the controller knows one target has of a
// GatewayDNS's slices.
type targetState struct {
	// written is the generation written to the target.
	written uint64
	// client and nsUID are the connection and slice namespace it was
	// written with; a new kubeconfig or a namespace made again starts over.
	client workload.Client
	nsUID  types.UID
	// listed is when the target's slices were last listed; after half the
	// resync period the next sync lists them again, which repairs slices
	// someone else changed or deleted.
	listed time.Time
	// kept are slices of kept source clusters the target still has
	// (name -> source cluster); they are in no generation.
	kept map[string]string
	// self is what the self marker written there lists ("": unknown).
	self string
}

// timedOut is a target whose API server did not answer in time.
type timedOut struct {
	err     error
	backoff time.Duration
	retryAt time.Time
	timer   *time.Timer
}

// snapshot is the generation a write brings its targets to, copied when
// the write starts: later syncs move the record on meanwhile.
type snapshot struct {
	gen   uint64
	cur   Generation
	delta Delta
	d     desired.Result
	// remove: the write removes every slice of the GatewayDNS (a full
	// list, never a delta), then, withSelf, the namespace's self marker.
	remove   bool
	withSelf bool
}

// write brings the targets of one slot to a snapshot, in the background
// of the Publish that started it. targets[0] writes; the others have the
// same destination and take its state (or are written on their own when
// its write failed other than by a timeout).
type write struct {
	slot    string
	targets []Target
	uids    []types.UID
	old     []targetState // what the record said of each target at the start
	known   []bool
	results []targetResult // by index of targets; read once done is closed
	// suspect: the first target timed out before, so its write may hang
	// again; Publish does not wait for it and it takes no worker.
	suspect bool
	cancel  context.CancelFunc
	done    chan struct{}
	// detached: the Publish that started it no longer waits; when it
	// ends, Config.Done syncs the GatewayDNS again.
	detached bool
}

// observe records the desired result of a sync; the generation moves on
// when it differs from the last one.
func (p *record) observe(d desired.Result) {
	next := NewGeneration(d)
	dl := ComputeDelta(p.cur, next)
	if p.gen > 0 && dl.empty() && maps.Equal(p.cur.Keep, next.Keep) {
		p.cur = next
		return
	}
	p.gen++
	p.cur, p.delta = next, dl
}

// recordLocked returns the record of a GatewayDNS, making it on first use.
func (w *Writer) recordLocked(ref string) *record {
	p := w.records[ref]
	if p == nil {
		p = &record{targets: map[string]targetState{}, busy: map[string]*write{}, timedOut: map[string]*timedOut{}}
		w.records[ref] = p
	}
	return p
}

// Forget drops the record of a GatewayDNS that is gone. Its writes still
// running are cancelled, and Forget returns once they have stopped, so
// nothing is written for ref after it (its cleanup may list the targets
// next).
func (w *Writer) Forget(ref string) {
	w.mu.Lock()
	p := w.records[ref]
	delete(w.records, ref)
	if p != nil {
		p.forgotten = true
		for _, wr := range p.busy {
			wr.cancel()
		}
		for _, to := range p.timedOut {
			to.timer.Stop()
		}
	}
	w.mu.Unlock()
	if p != nil {
		p.writes.Wait()
	}
}

// Wait returns when every write started in the background has ended.
// Writes end when the context of the Publish that started them does.
func (w *Writer) Wait() { w.writes.Wait() }

// Remove takes every slice written for ref out of the targets: each
// target is listed and every slice of ref there deleted, with the orphans
// of its namespace, then, withSelf, the namespace's self marker. The writes run
// as Publish's do: in the background, one per destination at a time, with
// the same wait, backoff and Config.Done, so a target that does not
// answer delays no other. The first Remove of ref cancels the writes of
// Publish still running (they would write slices about to be removed);
// their targets are reported Pending until they stop. A target is clean
// once a Remove reports it neither Pending nor failed; one whose slice
// namespace is listed and absent holds nothing and is clean at once.
// Forget ref once every target that matters is clean.
func (w *Writer) Remove(ctx context.Context, ref string, targets []Target, withSelf bool) Results {
	w.mu.Lock()
	p := w.recordLocked(ref)
	if !p.removing {
		p.removing = true
		p.gen++
		p.cur, p.delta = Generation{}, Delta{}
		for _, wr := range p.busy {
			wr.cancel()
		}
	}
	snap := snapshot{gen: p.gen, remove: true, withSelf: withSelf}
	w.mu.Unlock()
	return w.start(ctx, ref, p, snap, targets)
}

// Publish brings every target to the desired slices. Each target's write
// runs on its own (up to targetWorkers at a time), and Publish waits for
// them at most Config.Wait: a target still being written then is reported
// Pending and written on in the background; when that write ends,
// Config.Done(ref) asks for another sync, which reports how it went. A
// target has one write in flight at a time: while it runs, later syncs
// report the target Pending, and the sync after it ends writes the latest
// generation. A target whose write timed out (its API server does not
// answer) is not written again before its retry time (backoff from
// minRetry to maxRetry) and is reported failed until then; Publish never
// waits for its next try. A target that fails is listed in full on its
// next write; the others are written all the same.
//
// Targets with the same destination (Clusters whose kubeconfigs reach the
// same slice namespace of the same API server) are written once, through
// one of them; the others take its state. Written one by one, each would
// create the slices the first had just made and list the namespace again.
// When that write fails, the others are written on their own, as any
// target; when it timed out, they share its error (same API server).
func (w *Writer) Publish(ctx context.Context, ref string, d desired.Result, targets []Target) Results {
	w.mu.Lock()
	p := w.recordLocked(ref)
	removing := p.removing
	w.mu.Unlock()
	if removing {
		// Made again while its slices were being removed: start over.
		w.Forget(ref)
		w.mu.Lock()
		p = w.recordLocked(ref)
		w.mu.Unlock()
	}
	// Only Publish and Remove of ref touch gen, cur and delta (the
	// controller's queue syncs a key on one worker at a time), and writes
	// take copies: the generation, the costly part at scale, is computed
	// unlocked.
	p.observe(d)
	snap := snapshot{gen: p.gen, cur: p.cur, delta: p.delta, d: d}
	return w.start(ctx, ref, p, snap, targets)
}

// start starts the writes of targets to snap, each destination's in the
// background, waits for them at most Config.Wait and returns what they
// came to (Publish says how).
func (w *Writer) start(ctx context.Context, ref string, p *record, snap snapshot, targets []Target) Results {
	out := Results{Errs: map[string]error{}, SelfErrs: map[string]error{}}
	g := w.groupBySlot(ctx, snap, targets)
	w.mu.Lock()
	p.forgetLocked(g.keep)
	started := w.startLocked(ctx, ref, p, snap, targets, g, &out)
	w.mu.Unlock()

	// Wait for the writes, at most Config.Wait, and not for a target that
	// timed out before.
	timer := time.NewTimer(w.cfg.Wait)
	defer timer.Stop()
wait:
	for _, wr := range started {
		if wr.suspect {
			continue
		}
		select {
		case <-wr.done:
		case <-timer.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wr := range started {
		collectLocked(wr, &out)
	}
	sort.Strings(out.Pending)
	return out
}

// slots is the targets of a write grouped by slot: a destination, or a
// target whose destination is not known.
type slots struct {
	uids   []types.UID     // by index of targets
	keep   map[string]bool // workload keys whose state is kept
	order  []string        // slots in the order of their first target
	bySlot map[string][]int
}

// groupBySlot groups the targets to write by slot; a target whose slice
// namespace is absent is written nothing and forgotten, one not listed
// yet is skipped (a removal lists it itself).
func (w *Writer) groupBySlot(ctx context.Context, snap snapshot, targets []Target) slots {
	g := slots{uids: make([]types.UID, len(targets)), keep: map[string]bool{}, bySlot: map[string][]int{}}
	for i, t := range targets {
		uid, has, synced := t.Cluster.SliceNamespace(w.cfg.SliceNamespace)
		switch {
		case !synced && snap.remove:
			// Not listed yet, but it may hold slices written before:
			// the removal lists them itself.
		case !synced:
			// Not listed yet: the Namespace informer enqueues us once it has.
			klog.FromContext(ctx).V(2).Info("Target cluster not listed yet; skipped", "cluster", t.Name)
			g.keep[t.Cluster.Key()] = true
			continue
		case !has:
			continue
		}
		g.keep[t.Cluster.Key()] = true
		g.uids[i] = uid
		slot := t.Cluster.Destination(uid)
		if slot == "" {
			slot = "target " + t.Cluster.Key()
		}
		if _, seen := g.bySlot[slot]; !seen {
			g.order = append(g.order, slot)
		}
		g.bySlot[slot] = append(g.bySlot[slot], i)
	}
	return g
}

// forgetLocked forgets the targets gone, or without the slice namespace.
func (p *record) forgetLocked(keep map[string]bool) {
	for key, to := range p.timedOut {
		if !keep[key] {
			to.timer.Stop()
			delete(p.timedOut, key)
		}
	}
	for key := range p.targets {
		if !keep[key] {
			delete(p.targets, key)
		}
	}
}

// startLocked starts a write per slot of g, unless one is in flight there
// (its targets are Pending) or its target timed out and waits for its
// retry (they fail with that error); it returns the writes started.
func (w *Writer) startLocked(ctx context.Context, ref string, p *record, snap snapshot, targets []Target, g slots, out *Results) []*write {
	sem := make(chan struct{}, targetWorkers)
	now := time.Now()
	var started []*write
	for _, slot := range g.order {
		group := g.bySlot[slot]
		if wr := p.busy[slot]; wr != nil {
			// Still writing an earlier generation; the sync after it
			// ends writes this one.
			wr.detached = true
			for _, i := range group {
				out.Pending = append(out.Pending, targets[i].Name)
			}
			continue
		}
		// A destination is written through its first target whose state
		// is known (the others would list it again), else its first.
		first := 0
		for n, i := range group {
			if p.known(targets[i], g.uids[i]) {
				first = n
				break
			}
		}
		order := append([]int{group[first]}, append(append([]int(nil), group[:first]...), group[first+1:]...)...)
		if to := p.timedOut[targets[order[0]].Cluster.Key()]; to != nil && now.Before(to.retryAt) {
			for _, i := range order {
				out.Errs[targets[i].Name] = fmt.Errorf("%w; next try at %s", to.err, to.retryAt.UTC().Format(time.RFC3339))
			}
			continue
		}
		wr := &write{slot: slot, done: make(chan struct{})}
		for _, i := range order {
			t := targets[i]
			wr.targets = append(wr.targets, t)
			wr.uids = append(wr.uids, g.uids[i])
			wr.old = append(wr.old, p.targets[t.Cluster.Key()])
			wr.known = append(wr.known, p.known(t, g.uids[i]))
		}
		wr.results = make([]targetResult, len(order))
		wr.suspect = p.timedOut[wr.targets[0].Cluster.Key()] != nil
		var wctx context.Context
		wctx, wr.cancel = context.WithCancel(ctx)
		p.busy[slot] = wr
		p.writes.Add(1)
		w.writes.Add(1)
		started = append(started, wr)
		go w.run(wctx, ref, p, wr, snap, sem)
	}
	return started
}

// collectLocked adds what wr came to to out: its targets Pending while it
// runs (it is detached: its end syncs again), else their results.
func collectLocked(wr *write, out *Results) {
	select {
	case <-wr.done:
	default:
		wr.detached = true
		for _, t := range wr.targets {
			out.Pending = append(out.Pending, t.Name)
		}
		return
	}
	for i, r := range wr.results {
		out.Written += r.written
		if r.err != nil {
			out.Errs[wr.targets[i].Name] = r.err
			continue
		}
		out.Done = append(out.Done, wr.targets[i].Name)
		if r.selfErr != nil {
			out.SelfErrs[wr.targets[i].Name] = r.selfErr
		}
	}
}

// run writes wr's targets to snap and records the results.
func (w *Writer) run(ctx context.Context, ref string, p *record, wr *write, snap snapshot, sem chan struct{}) {
	defer w.writes.Done()
	defer p.writes.Done()
	defer wr.cancel()
	if !wr.suspect {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		for i := range wr.results {
			wr.results[i].err = ctx.Err()
		}
	} else {
		w.writeSlot(ctx, ref, wr, snap)
	}

	w.mu.Lock()
	detached := wr.detached && !p.forgotten
	if !p.forgotten {
		w.recordResultsLocked(ref, p, wr)
	}
	if p.busy[wr.slot] == wr {
		delete(p.busy, wr.slot)
	}
	close(wr.done)
	w.mu.Unlock()
	if detached {
		w.cfg.Done(ref)
	}
}

// writeSlot writes the first target of wr, then gives the others its
// state, its timeout, or their own writes.
func (w *Writer) writeSlot(ctx context.Context, ref string, wr *write, snap snapshot) {
	first := w.writeTarget(ctx, snap, wr.old[0], wr.known[0], wr.targets[0], wr.uids[0], ref)
	wr.results[0] = first
	var alone sync.WaitGroup
	for i := 1; i < len(wr.targets); i++ {
		switch {
		case first.err == nil && first.state != nil:
			// The same slice namespace: the same slices and marker.
			st := *first.state
			st.client = wr.targets[i].Cluster.Client()
			wr.results[i].state, wr.results[i].selfErr = &st, first.selfErr
		case kubeclient.IsTimeout(first.err):
			// The same API server: it would not answer either.
			wr.results[i].err = first.err
		default:
			alone.Go(func() {
				wr.results[i] = w.writeTarget(ctx, snap, wr.old[i], wr.known[i], wr.targets[i], wr.uids[i], ref)
			})
		}
	}
	alone.Wait()
}

// recordResultsLocked records the results of a write that ended: the targets'
// states, and the backoff of the targets that timed out.
func (w *Writer) recordResultsLocked(ref string, p *record, wr *write) {
	for i, r := range wr.results {
		key := wr.targets[i].Cluster.Key()
		if r.state != nil && r.err == nil {
			p.targets[key] = *r.state
		} else {
			delete(p.targets, key)
		}
		if !kubeclient.IsTimeout(r.err) {
			if to := p.timedOut[key]; to != nil {
				to.timer.Stop()
				delete(p.timedOut, key)
			}
			continue
		}
		to := p.timedOut[key]
		if to == nil {
			to = &timedOut{backoff: minRetry}
			p.timedOut[key] = to
		} else {
			to.timer.Stop()
			to.backoff = min(2*to.backoff, maxRetry)
		}
		to.err = r.err
		to.retryAt = time.Now().Add(to.backoff)
		to.timer = time.AfterFunc(to.backoff, func() { w.cfg.Done(ref) })
	}
}

// targetResult is what writing one target came to.
type targetResult struct {
	state   *targetState // nil: forget the target
	written int
	err     error
	// selfErr: the slices were written, not the self marker.
	selfErr error
}

// known reports whether the controller knows what t has: it wrote t with
// its present client and slice namespace.
func (p *record) known(t Target, uid types.UID) bool {
	old, known := p.targets[t.Cluster.Key()]
	return known && old.client == t.Cluster.Client() && old.nsUID == uid
}

// writeTarget brings one target, whose slice namespace has UID uid and
// whose state the record said was old (known: written with its present
// client and namespace), to generation snap: nothing when it has it, the
// delta when it has the one before and was listed recently, otherwise a
// full list and write; then its self marker (self.go).
// Every pass is timed into the target's write metrics, one with nothing
// to write too.
func (w *Writer) writeTarget(ctx context.Context, snap snapshot, old targetState, known bool, t Target, uid types.UID, ref string) (r targetResult) {
	start := time.Now()
	defer func() { t.Cluster.NoteWrite(workload.WriterGatewayDNS, time.Since(start), r.err) }()
	if snap.remove {
		return w.removeTarget(ctx, snap, old, known, t, uid, ref)
	}
	fresh := known && time.Since(old.listed) < w.cfg.Resync/2
	switch {
	case fresh && old.written == snap.gen:
		st := old
		r.state = &st
		return w.withSelf(ctx, t, r, nil, true)
	case fresh && old.written+1 == snap.gen:
		kept, n, err := w.writeDelta(ctx, t, ref, snap.delta, snap.cur, old.kept)
		r.written, r.err = n, err
		if err == nil {
			st := old
			st.written, st.kept = snap.gen, kept
			r.state = &st
			return w.withSelf(ctx, t, r, nil, true)
		}
		if !errors.Is(err, errUnknownSlices) {
			return r
		}
		klog.FromContext(ctx).V(2).Info("Target has slices the controller did not know of; listing it", "cluster", t.Name)
	}
	kept, marker, n, err := w.writeFull(ctx, t, ref, snap.d)
	r.written, r.err = r.written+n, err
	if err != nil {
		return r
	}
	r.state = &targetState{written: snap.gen, client: t.Cluster.Client(), nsUID: uid, listed: time.Now(), kept: kept}
	return w.withSelf(ctx, t, r, marker, false)
}

// withSelf writes t's self marker after its slices (r, written): listed
// is the marker as a full list found it, read says there was no list. A
// marker that timed out fails the target, as a slice would; any other
// failure is the marker's alone.
func (w *Writer) withSelf(ctx context.Context, t Target, r targetResult, listed *discoveryv1.EndpointSlice, read bool) targetResult {
	self, n, err := w.writeSelf(ctx, t, r.state.self, listed, read)
	r.written += n
	r.state.self = self
	switch {
	case kubeclient.IsTimeout(err):
		r.state, r.err = nil, err
	case err != nil:
		r.selfErr = err
	}
	return r
}

// removeTarget lists one target and deletes every slice of ref there
// (and orphans of its namespace), then, with snap.withSelf, the self
// marker of ref's namespace; nothing when it was cleaned already with its
// present client and slice namespace.
func (w *Writer) removeTarget(ctx context.Context, snap snapshot, old targetState, known bool, t Target, uid types.UID, ref string) targetResult {
	if known && old.written == snap.gen {
		return targetResult{state: &old}
	}
	_, _, n, err := w.writeFull(ctx, t, ref, desired.Result{})
	if err == nil && snap.withSelf {
		namespace, _, _ := strings.Cut(ref, "/")
		err = w.removeSelf(ctx, t, namespace)
	}
	r := targetResult{written: n, err: err}
	if err == nil {
		r.state = &targetState{written: snap.gen, client: t.Cluster.Client(), nsUID: uid, listed: time.Now()}
	}
	return r
}

// slices returns the slice client of a target's slice namespace.
func (w *Writer) slices(t Target) discoveryclient.EndpointSliceInterface {
	return t.Cluster.Client().DiscoveryV1().EndpointSlices(w.cfg.SliceNamespace)
}

// writeFull lists the target's slices and writes the difference to d
// (computePlan), removing orphans of deleted GatewayDNS of the namespace
// too. It returns the slices of kept source clusters the target has, and
// the self marker of ref's namespace if it was listed.
func (w *Writer) writeFull(ctx context.Context, t Target, ref string, d desired.Result) (map[string]string, *discoveryv1.EndpointSlice, int, error) {
	lctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	list, err := w.slices(t).List(lctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{
		contract.LabelManagedBy: contract.ManagedByValue}).String()})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("list EndpointSlices in %s/%s: %w", t.Name, w.cfg.SliceNamespace, err)
	}
	existing := make([]*discoveryv1.EndpointSlice, 0, len(list.Items))
	kept := map[string]string{}
	namespace, _, _ := strings.Cut(ref, "/")
	var marker *discoveryv1.EndpointSlice
	for i := range list.Items {
		s := &list.Items[i]
		existing = append(existing, s)
		if s.Name == contract.SelfSliceName(namespace) {
			marker = s
		}
		if key, k := keptUnder(s, d.Keep); ownedBy(s, ref) && k {
			kept[s.Name] = key
		}
	}
	p := computePlan(ref, d.Slices, existing, d.Keep)
	p.Delete = append(p.Delete, w.orphans(ref, existing)...)
	n := 0
	var errs []error
	// A call that timed out ends the write: the server does not answer.
	stalled := func() bool { return len(errs) > 0 && kubeclient.IsTimeout(errs[len(errs)-1]) }
	for _, s := range p.Create {
		if stalled() {
			break
		}
		// put, not create: the slice may have been made since the list.
		changed, err := w.put(ctx, t, ref, s, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if changed {
			n++
		}
	}
	for _, s := range p.Update {
		if stalled() {
			break
		}
		if err := w.update(ctx, t, s); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	for _, s := range p.Delete {
		if stalled() {
			break
		}
		if err := w.delete(ctx, t, s); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return kept, marker, n, errors.Join(errs...)
}

// errUnknownSlices is returned by writeDelta when the target has a slice
// the controller did not know of; the caller lists the target instead.
var errUnknownSlices = errors.New("target holds slices not known to the controller")

// writeDelta brings a target that has the previous generation to the
// current one (to) without listing it: creates and updates from dl, deletes
// of gone names, and of the kept slices of source clusters released. Each
// change reads the one slice it touches first, so a slice that is not the
// controller's is never changed. It returns the kept slices the target now has.
func (w *Writer) writeDelta(ctx context.Context, t Target, ref string, dl Delta, to Generation, kept map[string]string) (map[string]string, int, error) {
	next := maps.Clone(kept)
	if next == nil {
		next = map[string]string{}
	}
	maps.Copy(next, dl.Kept)
	var gone []string
	for name, source := range kept {
		if !dl.Released[source] {
			continue
		}
		delete(next, name)
		if _, wanted := to.Slices[name]; !wanted {
			gone = append(gone, name)
		}
	}
	n := 0
	var errs []error
	// A call that timed out ends the write: the server does not answer.
	stalled := func() bool { return len(errs) > 0 && kubeclient.IsTimeout(errs[len(errs)-1]) }
	put := func(s *discoveryv1.EndpointSlice, isNew bool) {
		changed, err := w.put(ctx, t, ref, s, isNew)
		if err != nil {
			errs = append(errs, err)
		} else if changed {
			n++
		}
	}
	for _, s := range dl.Create {
		if stalled() {
			break
		}
		if _, isKept := kept[s.Name]; isKept {
			put(s, false)
			continue
		}
		// A new name that exists already means the target is not what
		// this record says (another writer, or a target with the same
		// destination): one list is then cheaper than reading every slice.
		if err := w.create(ctx, t, s); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, n, errUnknownSlices
			}
			errs = append(errs, err)
			continue
		}
		n++
	}
	for _, s := range dl.Update {
		if stalled() {
			break
		}
		put(s, false)
	}
	for _, name := range append(gone, dl.Delete...) {
		if stalled() {
			break
		}
		s, err := w.get(ctx, t, name)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s: %w", name, err))
			continue
		case !ownedBy(s, ref):
			continue
		}
		if err := w.delete(ctx, t, s); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if len(next) == 0 {
		next = nil
	}
	return next, n, errors.Join(errs...)
}

// put makes the target's slice equal s. With isNew it is created, and read
// only if it exists already (made since the target was listed); otherwise
// it is read first, then updated or created. A slice of that name that is
// not the controller's is an error, never overwritten.
func (w *Writer) put(ctx context.Context, t Target, ref string, s *discoveryv1.EndpointSlice, isNew bool) (bool, error) {
	if isNew {
		err := w.create(ctx, t, s)
		if !apierrors.IsAlreadyExists(err) {
			return err == nil, err
		}
	}
	existing, err := w.get(ctx, t, s.Name)
	if apierrors.IsNotFound(err) {
		return true, w.create(ctx, t, s)
	}
	if err != nil {
		return false, fmt.Errorf("get %s: %w", s.Name, err)
	}
	if !ownedBy(existing, ref) {
		return false, fmt.Errorf("slice %s exists and was not written for %s: left alone", s.Name, ref)
	}
	if contract.SameSlice(existing, s) {
		return false, nil
	}
	return true, w.update(ctx, t, contract.MergeSlice(existing, s))
}

// get, create, update and delete are the calls to a target's slices, each
// bounded by workload.RequestTimeout.
func (w *Writer) get(ctx context.Context, t Target, name string) (*discoveryv1.EndpointSlice, error) {
	ctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	return w.slices(t).Get(ctx, name, metav1.GetOptions{})
}

func (w *Writer) create(ctx context.Context, t Target, s *discoveryv1.EndpointSlice) error {
	ctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	s = s.DeepCopy()
	s.Namespace = w.cfg.SliceNamespace
	if _, err := w.slices(t).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", s.Name, err)
	}
	w.cfg.Written.WithLabelValues("create").Inc()
	klog.FromContext(ctx).Info("Created EndpointSlice", "cluster", t.Name, "slice", s.Name,
		"hostname", s.Annotations[contract.AnnotationHostname], "addresses", s.Endpoints[0].Addresses)
	return nil
}

// update writes s, which carries the resourceVersion of the slice it replaces.
func (w *Writer) update(ctx context.Context, t Target, s *discoveryv1.EndpointSlice) error {
	ctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	s.Namespace = w.cfg.SliceNamespace
	if _, err := w.slices(t).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s: %w", s.Name, err)
	}
	w.cfg.Written.WithLabelValues("update").Inc()
	klog.FromContext(ctx).Info("Updated EndpointSlice", "cluster", t.Name, "slice", s.Name,
		"hostname", s.Annotations[contract.AnnotationHostname], "addresses", s.Endpoints[0].Addresses)
	return nil
}

// delete removes s if it is still the object that was read (same UID).
func (w *Writer) delete(ctx context.Context, t Target, s *discoveryv1.EndpointSlice) error {
	ctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	err := w.slices(t).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", s.Name, err)
	}
	w.cfg.Written.WithLabelValues("delete").Inc()
	klog.FromContext(ctx).Info("Deleted EndpointSlice", "cluster", t.Name, "slice", s.Name,
		"hostname", s.Annotations[contract.AnnotationHostname])
	return nil
}

// orphans are slices written for a GatewayDNS of the same namespace that no
// longer exists: it was deleted while this cluster could not be reached, so
// its cleanup skipped this cluster. The first full list of the cluster
// again removes them. Slices of other namespaces are left to their own.
func (w *Writer) orphans(ref string, existing []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	namespace, _, _ := strings.Cut(ref, "/")
	var out []*discoveryv1.EndpointSlice
	for _, s := range existing {
		other := s.Annotations[contract.AnnotationGatewayRef]
		otherNS, _, ok := strings.Cut(other, "/")
		if s.Labels[contract.LabelManagedBy] != contract.ManagedByValue || !ok || other == ref || otherNS != namespace {
			continue
		}
		if !w.cfg.Exists(other) {
			out = append(out, s)
		}
	}
	return out
}
