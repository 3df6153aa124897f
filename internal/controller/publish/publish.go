package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/write"
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

	// api is the target's slice client for one write (writeTarget): its
	// calls share one write.Gate.
	api sliceClient
}

// sliceClient is a target's EndpointSlice client.
type sliceClient = write.Client[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]

// Results is what one Publish came to.
type Results struct {
	// Errs holds, by target name, the writes that failed, and the
	// targets whose cluster is backed off after a failure ("...; next
	// try at <time>").
	Errs map[string]error
	// Pending holds, sorted, the targets still being written (or waiting
	// in their cluster's lane) when Publish stopped waiting; Config.Done
	// is called when their write ends.
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
	// Lanes are the controller's writers into the workload clusters,
	// shared with the ClusterSet reconciler (package lane): every write
	// runs in the lane of the cluster it writes through, with the lane's
	// wait, its backoff of a cluster that failed, and its bound on the
	// writes of one cluster.
	Lanes *lane.Set
	// Done is called with ref when a write Publish stopped waiting for
	// ended (after the backoff of its cluster, too): the GatewayDNS
	// should be synced again, so its status catches up.
	Done func(ref string)
}

// Writer is the Publisher of the controller.
type Writer struct {
	cfg Config

	mu sync.Mutex
	// records remembers, per GatewayDNS key, what was written to each target.
	records map[string]*record
}

// NewWriter returns a Writer that remembers nothing yet: its first Publish
// of each GatewayDNS lists every target.
func NewWriter(cfg Config) *Writer {
	if cfg.Done == nil {
		cfg.Done = func(string) {}
	}
	return &Writer{cfg: cfg, records: map[string]*record{}}
}

// ownerPrefix makes a GatewayDNS's owner name in the lanes, which a
// ClusterSet's (its bare key) never is.
const ownerPrefix = "gatewaydns:"

// owner is the lanes' owner of the writes of the GatewayDNS ref.
func owner(ref string) string { return ownerPrefix + ref }

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
	// running holds the cancel of each write of the record running, for
	// Remove and Forget.
	running map[*slotWrite]context.CancelFunc
	// removing: the GatewayDNS is being deleted; generation gen removes
	// its slices, and a target written at gen holds none. A write of
	// Publish that had not started then does not.
	removing bool
	// forgotten: the GatewayDNS is gone; writes still running are
	// cancelled, their results dropped, and those not started write
	// nothing.
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

// snapshot is the generation a write brings its targets to, copied when
// the write is submitted: later syncs move the record on meanwhile.
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

// slotWrite brings the targets of one slot to a snapshot, in the lane of the
// cluster of targets[0], which writes; the others have the same
// destination and take its state (or are written on their own when its
// write failed other than by a timeout).
type slotWrite struct {
	targets []Target
	uids    []types.UID
	// old and known are what the record said of each target when the
	// write started (an earlier write of the lane may have moved it on
	// since the write was submitted); results, by index of targets. All
	// three are the write's while it runs, read by its Publish once
	// ran is set.
	old     []targetState
	known   []bool
	results []targetResult
	// ran: the write ran (guarded by Writer.mu); one that did not was
	// replaced, or its GatewayDNS is being removed or is gone.
	ran bool
}

// errRemoved is the result of a write of Publish that had not started
// when the GatewayDNS began to be removed.
var errRemoved = errors.New("not written: the GatewayDNS is being removed")

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
		p = &record{targets: map[string]targetState{}, running: map[*slotWrite]context.CancelFunc{}}
		w.records[ref] = p
	}
	return p
}

// Forget drops the record of a GatewayDNS that is gone. Its writes still
// running are cancelled, and Forget returns once they have stopped; those
// waiting in a lane write nothing. So nothing is written for ref after it
// (its cleanup may list the targets next).
func (w *Writer) Forget(ref string) {
	w.mu.Lock()
	p := w.records[ref]
	delete(w.records, ref)
	if p != nil {
		p.forgotten = true
		for _, cancel := range p.running {
			cancel()
		}
	}
	w.mu.Unlock()
	if p != nil {
		p.writes.Wait()
	}
}

// Remove takes every slice written for ref out of the targets: each
// target is listed and every slice of ref there deleted, with the orphans
// of its namespace, then, withSelf, the namespace's self marker. The
// writes run as Publish's do: in the lanes, with the same wait, backoff
// and Config.Done, so a target that does not answer delays no other. The
// first Remove of ref cancels the writes of Publish still running (they
// would write slices about to be removed), and those not started write
// nothing; their targets are reported Pending until the removal's write
// of them ends. A target is clean once a Remove reports it neither
// Pending nor failed; one whose slice namespace is listed and absent
// holds nothing and is clean at once. Forget ref once every target that
// matters is clean.
func (w *Writer) Remove(ctx context.Context, ref string, targets []Target, withSelf bool) Results {
	w.mu.Lock()
	p := w.recordLocked(ref)
	if !p.removing {
		p.removing = true
		p.gen++
		p.cur, p.delta = Generation{}, Delta{}
		for _, cancel := range p.running {
			cancel()
		}
	}
	snap := snapshot{gen: p.gen, remove: true, withSelf: withSelf}
	w.mu.Unlock()
	return w.start(ctx, ref, p, snap, targets)
}

// Publish brings every target to the desired slices. Each destination's
// write runs in the lane of the cluster it writes through (Config.Lanes),
// and Publish waits for them as long as the lanes' wait at most: a target
// still being written then, or waiting behind other writes of its
// cluster, is reported Pending and written on in the background; when
// that write ends, Config.Done(ref) asks for another sync, which reports
// how it went. A target has one write of ref running at a time; a later
// sync's write waits for it, and replaces the write of an earlier one
// still waiting. A target whose cluster failed (did not answer, refused
// the connection, throttled, failed on the server) is not written before
// its lane's backoff has passed, for this or any other writer, and is
// reported failed with that error and the time of its next try until
// then. A target that fails is listed in full on its next write; the
// others are written all the same.
//
// Targets with the same destination (Clusters whose kubeconfigs reach the
// same slice namespace of the same API server) are written once, through
// one of them; the others take its state. Written one by one, each would
// create the slices the first had just made and list the namespace again.
// When that write fails, the next target writes it, and so on, one at a
// time; once one timed out, the rest share its error (same API server).
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

// start submits the writes of targets to snap, one per destination, each
// to the lane of the cluster it writes through, waits for them (the
// lanes' wait at most) and returns what they came to (Publish says how).
func (w *Writer) start(ctx context.Context, ref string, p *record, snap snapshot, targets []Target) Results {
	out := Results{Errs: map[string]error{}, SelfErrs: map[string]error{}}
	g := w.groupBySlot(ctx, snap, targets)
	w.mu.Lock()
	p.forgetLocked(g.keep)
	writes := make([]*slotWrite, 0, len(g.order))
	for _, slot := range g.order {
		writes = append(writes, newWrite(p, targets, g, g.bySlot[slot]))
	}
	w.mu.Unlock()

	submitted := make([]*lane.Write, len(writes))
	for i, wr := range writes {
		submitted[i] = w.cfg.Lanes.Submit(wr.targets[0].Cluster.Key(), owner(ref),
			func(ctx context.Context) error { return w.run(ctx, ref, p, wr, snap) },
			func() { w.ended(ref, p) })
	}
	res := w.cfg.Lanes.Wait(ctx, submitted)

	w.mu.Lock()
	defer w.mu.Unlock()
	for i, wr := range writes {
		collectLocked(wr, res[i], &out)
	}
	sort.Strings(out.Pending)
	return out
}

// ended is the done func of a write of ref that Publish stopped waiting
// for: the GatewayDNS is synced again, unless it is gone.
func (w *Writer) ended(ref string, p *record) {
	w.mu.Lock()
	forgotten := p.forgotten
	w.mu.Unlock()
	if !forgotten {
		w.cfg.Done(ref)
	}
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
	for key := range p.targets {
		if !keep[key] {
			delete(p.targets, key)
		}
	}
}

// newWrite is the write of one slot, the targets of group: a destination
// is written through its first target whose state is known (the others
// would list it again), else its first.
func newWrite(p *record, targets []Target, g slots, group []int) *slotWrite {
	first := 0
	for n, i := range group {
		if p.known(targets[i], g.uids[i]) {
			first = n
			break
		}
	}
	order := append([]int{group[first]}, append(append([]int(nil), group[:first]...), group[first+1:]...)...)
	wr := &slotWrite{}
	for _, i := range order {
		wr.targets = append(wr.targets, targets[i])
		wr.uids = append(wr.uids, g.uids[i])
	}
	return wr
}

// collectLocked adds what wr came to, res in its lane, to out: its
// targets Pending while it runs or waits its turn (its end syncs again),
// failed with the error and next try while its cluster is backed off,
// else their results.
func collectLocked(wr *slotWrite, res lane.Result, out *Results) {
	switch {
	case res.Backoff != nil:
		for _, t := range wr.targets {
			out.Errs[t.Name] = res.BackoffError()
		}
		return
	case !res.Ended || errors.Is(res.Err, lane.ErrReplaced):
		for _, t := range wr.targets {
			out.Pending = append(out.Pending, t.Name)
		}
		return
	case !wr.ran:
		err := res.Err
		if err == nil {
			err = errRemoved
		}
		for _, t := range wr.targets {
			out.Errs[t.Name] = err
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

// run is wr's run in its lane: it writes the slot's targets to snap,
// with what the record says of them now, and records the results. It
// tells the lane of the failure of the cluster it writes through
// (kubeclient.MemberFailure), not of slices refused, nor of its
// cancellation by Remove or Forget: those back off no cluster.
func (w *Writer) run(ctx context.Context, ref string, p *record, wr *slotWrite, snap snapshot) error {
	w.mu.Lock()
	if p.forgotten || (p.removing && !snap.remove) {
		w.mu.Unlock()
		return nil
	}
	wr.old = make([]targetState, len(wr.targets))
	wr.known = make([]bool, len(wr.targets))
	for i, t := range wr.targets {
		wr.old[i] = p.targets[t.Cluster.Key()]
		wr.known[i] = p.known(t, wr.uids[i])
	}
	wr.results = make([]targetResult, len(wr.targets))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.running[wr] = cancel
	p.writes.Add(1)
	w.mu.Unlock()
	defer p.writes.Done()

	w.writeSlot(wctx, ref, wr, snap)

	w.mu.Lock()
	delete(p.running, wr)
	if !p.forgotten {
		p.recordLocked(wr)
	}
	wr.ran = true
	w.mu.Unlock()
	if wctx.Err() != nil && ctx.Err() == nil {
		// Cancelled by Remove or Forget: nothing of the cluster's.
		return nil
	}
	return kubeclient.MemberFailure(wr.results[0].err)
}

// writeSlot writes the destination of wr through its targets in turn
// until one succeeds, and gives that one's state to the rest. A target
// tried before it keeps its own failure (its kubeconfig's, since the
// destination took a write); once one timed out, the rest share that
// error (same API server). One at a time: however many Clusters reach a
// destination, it gets one write at a time from this slot, as a lane
// would allow.
func (w *Writer) writeSlot(ctx context.Context, ref string, wr *slotWrite, snap snapshot) {
	var through *targetResult
	for i := range wr.targets {
		switch {
		case through != nil:
			// The same slice namespace: the same slices and marker.
			st := *through.state
			st.client = wr.targets[i].Cluster.Client()
			wr.results[i].state, wr.results[i].selfErr = &st, through.selfErr
		case i > 0 && write.NotAnswering(wr.results[i-1].err):
			// The same API server: it would not answer either.
			wr.results[i].err = wr.results[i-1].err
		default:
			wr.results[i] = w.writeTarget(ctx, snap, wr.old[i], wr.known[i], wr.targets[i], wr.uids[i], ref)
			if r := wr.results[i]; r.err == nil && r.state != nil {
				through = &wr.results[i]
			}
		}
	}
}

// recordLocked records the targets' states after wr ended: a target that
// failed is forgotten, so its next write lists it.
func (p *record) recordLocked(wr *slotWrite) {
	for i, r := range wr.results {
		key := wr.targets[i].Cluster.Key()
		if r.state != nil && r.err == nil {
			p.targets[key] = *r.state
		} else {
			delete(p.targets, key)
		}
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
	// One gate for the write: a call that times out ends it, the calls
	// after fail at once (write.ErrNotAnswering).
	t.api = w.boundSlices(t)
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
	case write.NotAnswering(err):
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

// boundSlices returns the slice client of a target's slice namespace for
// one write (Target.api): each call bounded by workload.RequestTimeout,
// its errors cut, and the rest of the write not sent once one call has
// passed its deadline (write.Gate).
func (w *Writer) boundSlices(t Target) sliceClient {
	return write.Bound(sliceClient(t.Cluster.Client().DiscoveryV1().EndpointSlices(w.cfg.SliceNamespace)), write.NewGate(workload.RequestTimeout))
}

// writeFull lists the target's slices and writes the difference to d
// (computePlan), removing orphans of deleted GatewayDNS of the namespace
// too. It returns the slices of kept source clusters the target has, and
// the self marker of ref's namespace if it was listed.
func (w *Writer) writeFull(ctx context.Context, t Target, ref string, d desired.Result) (map[string]string, *discoveryv1.EndpointSlice, int, error) {
	list, err := t.api.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{
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
	p := computePlan(ref, w.cfg.SliceNamespace, d.Slices, existing, d.Keep)
	p.Delete = append(p.Delete, w.orphans(ref, existing)...)
	var errs write.Errors
	for _, s := range p.Refused {
		errs.Add(notOurs(s, ref))
	}
	// Each step write.Concurrency requests at a time, as every writer of
	// a workload cluster: a first write of many slices is bounded by the
	// cluster's client rate, not by one round trip per slice.
	var written atomic.Int64
	count := func(changed bool, err error) {
		errs.Add(err)
		if err == nil && changed {
			written.Add(1)
		}
	}
	write.Each(len(p.Create), func(i int) {
		// put, not create: the slice may have been made since the list.
		count(w.put(ctx, t, ref, p.Create[i], true))
	})
	write.Each(len(p.Update), func(i int) { count(true, w.update(ctx, t, p.Update[i])) })
	write.Each(len(p.Delete), func(i int) { count(true, w.delete(ctx, t, p.Delete[i])) })
	return kept, marker, int(written.Load()), errs.Err()
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
	put := func(s *discoveryv1.EndpointSlice, isNew bool) {
		changed, err := w.put(ctx, t, ref, s, isNew)
		if err != nil {
			errs = append(errs, err)
		} else if changed {
			n++
		}
	}
	for _, s := range dl.Create {
		if _, isKept := kept[s.Name]; isKept {
			put(s, false)
			continue
		}
		// A new name that exists already means the target is not what
		// this record says (another writer, or a target with the same
		// destination): one list is then cheaper than reading every slice.
		_, created, err := w.create(ctx, t, ref, s)
		if (err == nil && !created) || errors.Is(err, kubeclient.ErrNotOurs) {
			return nil, n, errUnknownSlices
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	for _, s := range dl.Update {
		put(s, false)
	}
	for _, name := range append(gone, dl.Delete...) {
		s, err := t.api.Get(ctx, name, metav1.GetOptions{})
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
	return next, n, kubeclient.Join(errs...)
}

// put makes the target's slice equal s. With isNew it is created, and
// read only if it exists already (made since the target was listed);
// otherwise it is read first, then updated or created. A slice of that
// name that is not the controller's is an error, never overwritten.
func (w *Writer) put(ctx context.Context, t Target, ref string, s *discoveryv1.EndpointSlice, isNew bool) (bool, error) {
	var existing *discoveryv1.EndpointSlice
	if !isNew {
		got, err := t.api.Get(ctx, s.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("get %s: %w", s.Name, err)
		default:
			existing = got
		}
	}
	if existing == nil {
		got, created, err := w.create(ctx, t, ref, s)
		if err != nil || created {
			return created, err
		}
		existing = got
	}
	if !ownedBy(existing, ref) {
		return false, notOurs(s, ref)
	}
	if contract.SameSlice(existing, s) {
		return false, nil
	}
	return true, w.update(ctx, t, contract.MergeSlice(existing, s))
}

// notOurs is the refusal of slice s of ref, whose name a slice ref does
// not own holds.
func notOurs(s *discoveryv1.EndpointSlice, ref string) error {
	return fmt.Errorf("slice %s exists and was not written for %s, left alone: %w", s.Name, ref, kubeclient.ErrNotOurs)
}

// create creates s (write.Create). One of ref's that holds its name
// already is returned, not created.
func (w *Writer) create(ctx context.Context, t Target, ref string, s *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, bool, error) {
	s = s.DeepCopy()
	s.Namespace = w.cfg.SliceNamespace
	got, created, err := write.Create(ctx, t.api, s, func(h *discoveryv1.EndpointSlice) bool { return ownedBy(h, ref) })
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", s.Name, err)
	}
	if created {
		w.cfg.Written.WithLabelValues("create").Inc()
		klog.FromContext(ctx).Info("Created EndpointSlice", "cluster", t.Name, "slice", s.Name,
			"hostname", s.Annotations[contract.AnnotationHostname], "addresses", s.Endpoints[0].Addresses)
	}
	return got, created, nil
}

// update writes s, which carries the resourceVersion of the slice it replaces.
func (w *Writer) update(ctx context.Context, t Target, s *discoveryv1.EndpointSlice) error {
	s.Namespace = w.cfg.SliceNamespace
	if _, err := write.Update(ctx, t.api, s); err != nil {
		return fmt.Errorf("update %s: %w", s.Name, err)
	}
	w.cfg.Written.WithLabelValues("update").Inc()
	klog.FromContext(ctx).Info("Updated EndpointSlice", "cluster", t.Name, "slice", s.Name,
		"hostname", s.Annotations[contract.AnnotationHostname], "addresses", s.Endpoints[0].Addresses)
	return nil
}

// delete removes s if it is still the object that was read (write.Delete).
func (w *Writer) delete(ctx context.Context, t Target, s *discoveryv1.EndpointSlice) error {
	if err := write.Delete(ctx, t.api, s); err != nil {
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
