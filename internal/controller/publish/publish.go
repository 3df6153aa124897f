package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
)

// targetWorkers is how many target clusters one sync writes to at once.
// Each target is its own API server, so a sync waits on the slowest few
// instead of on the sum of all.
const targetWorkers = 8

// Publisher is what the controller loop asks of the write path.
type Publisher interface {
	// Publish brings every target to the desired slices of the GatewayDNS
	// ref ("<ns>/<name>").
	Publish(ctx context.Context, ref string, d desired.State, targets []Target) Results
	// Remove deletes every slice written for ref from one target, and
	// orphans of deleted GatewayDNS of its namespace.
	Remove(ctx context.Context, ref string, t Target) error
	// Forget drops what was remembered of ref, a GatewayDNS that is gone.
	Forget(ref string)
}

var _ Publisher = (*Writer)(nil)

// Target is one workload cluster whose slice namespace receives slices.
type Target struct {
	// Name is the Cluster's name, as status and Events name it.
	Name    string
	Cluster *workload.Cluster
}

// Results is what one Publish came to.
type Results struct {
	// Errs holds, by target name, the writes that failed.
	Errs map[string]error
	// Written counts the slices created, updated or deleted.
	Written int
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
	return &Writer{cfg: cfg, records: map[string]*record{}}
}

// record remembers what the controller wrote for one GatewayDNS: the last
// two generations of its desired slices, the delta between them, and the
// generation written to each target. A target one generation behind is
// brought up to date with the delta alone, since listing every target on
// every sync costs targets x slices (docs/benchmarks.md, section 4).
type record struct {
	gen   uint64
	cur   Generation
	delta Delta // from generation gen-1 to gen
	// targets by workload key ("<cluster-ns>/<cluster>").
	targets map[string]targetState
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
}

// observe records the desired state of a sync; the generation moves on
// when it differs from the last one.
func (p *record) observe(d desired.State) {
	next := NewGeneration(d)
	dl := ComputeDelta(p.cur, next)
	if p.gen > 0 && dl.empty() && maps.Equal(p.cur.Keep, next.Keep) {
		p.cur = next
		return
	}
	p.gen++
	p.cur, p.delta = next, dl
}

// recordFor returns the record of a GatewayDNS, making it on first use.
func (w *Writer) recordFor(ref string) *record {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.records[ref]
	if p == nil {
		p = &record{targets: map[string]targetState{}}
		w.records[ref] = p
	}
	return p
}

// Forget drops the record of a GatewayDNS that is gone.
func (w *Writer) Forget(ref string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.records, ref)
}

// Remove lists the target and deletes every slice written for ref there,
// with the orphans of its namespace.
func (w *Writer) Remove(ctx context.Context, ref string, t Target) error {
	_, _, err := w.writeFull(ctx, t, ref, desired.State{})
	return err
}

// Publish brings every target to the desired slices, up to targetWorkers
// at a time. A target that fails is recorded and skipped (and listed in
// full on the next sync); the others are still written.
//
// Targets with the same destination (Clusters whose kubeconfigs reach the
// same slice namespace of the same API server) are written once, through
// one of them; the others take its state. Written one by one, each would
// create the slices the first had just made and list the namespace again.
// When that write fails, the others are written on their own, as any target.
func (w *Writer) Publish(ctx context.Context, ref string, d desired.State, targets []Target) Results {
	logger := klog.FromContext(ctx)
	p := w.recordFor(ref)
	p.observe(d)

	results := make([]targetResult, len(targets))
	uids := make([]types.UID, len(targets))
	var writers []int
	byDest := map[string][]int{} // destination -> indexes of the targets there, in order
	var dests []string
	for i, t := range targets {
		uid, has, synced := t.Cluster.SliceNamespace(w.cfg.SliceNamespace)
		switch {
		case !synced:
			// Not listed yet: the Namespace informer enqueues us once it has.
			logger.V(2).Info("Target cluster not listed yet; skipped", "cluster", t.Name)
			if old, known := p.targets[t.Cluster.Key()]; known {
				results[i].state = &old
			}
			continue
		case !has:
			continue
		}
		uids[i] = uid
		dest := t.Cluster.Destination(uid)
		if dest == "" {
			writers = append(writers, i)
			continue
		}
		if _, seen := byDest[dest]; !seen {
			dests = append(dests, dest)
		}
		byDest[dest] = append(byDest[dest], i)
	}
	// Each destination is written through its first target whose state is
	// known (the others would list it again), else through its first; the
	// rest take the writer's state.
	writtenBy := map[int]int{} // index of a target -> index of the target that writes for it
	for _, dest := range dests {
		group := byDest[dest]
		first := group[0]
		for _, i := range group {
			if p.known(targets[i], uids[i]) {
				first = i
				break
			}
		}
		writers = append(writers, first)
		for _, i := range group {
			if i != first {
				writtenBy[i] = first
			}
		}
	}
	write := func(indexes []int) {
		sem := make(chan struct{}, targetWorkers)
		var wg sync.WaitGroup
		for _, i := range indexes {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				results[i] = w.writeTarget(ctx, p, targets[i], uids[i], ref, d)
			})
		}
		wg.Wait()
	}
	write(writers)
	var alone []int
	for i, j := range writtenBy {
		if r := results[j]; r.err == nil && r.state != nil {
			st := *r.state
			st.client = targets[i].Cluster.Client()
			results[i].state = &st
			continue
		}
		alone = append(alone, i)
	}
	write(alone)

	out := Results{Errs: map[string]error{}}
	states := make(map[string]targetState, len(targets))
	for i, r := range results {
		out.Written += r.written
		if r.err != nil {
			out.Errs[targets[i].Name] = r.err
		}
		if r.state != nil {
			states[targets[i].Cluster.Key()] = *r.state
		}
	}
	p.targets = states
	return out
}

// targetResult is what writing one target came to.
type targetResult struct {
	state   *targetState // nil: forget the target
	written int
	err     error
}

// known reports whether the controller knows what t has: it wrote t with
// its present client and slice namespace.
func (p *record) known(t Target, uid types.UID) bool {
	old, known := p.targets[t.Cluster.Key()]
	return known && old.client == t.Cluster.Client() && old.nsUID == uid
}

// writeTarget brings one target, whose slice namespace has UID uid, to the
// current generation of p: nothing when it has it, the delta when it has
// the one before and was listed recently, otherwise a full list and write.
func (w *Writer) writeTarget(ctx context.Context, p *record, t Target, uid types.UID, ref string, d desired.State) targetResult {
	old := p.targets[t.Cluster.Key()]
	fresh := p.known(t, uid) && time.Since(old.listed) < w.cfg.Resync/2
	var r targetResult
	switch {
	case fresh && old.written == p.gen:
		r.state = &old
		return r
	case fresh && old.written+1 == p.gen:
		kept, n, err := w.writeDelta(ctx, t, ref, p.delta, p.cur, old.kept)
		r.written, r.err = n, err
		if err == nil {
			st := old
			st.written, st.kept = p.gen, kept
			r.state = &st
			return r
		}
		if !errors.Is(err, errUnknownSlices) {
			return r
		}
		klog.FromContext(ctx).V(2).Info("Target has slices the controller did not know of; listing it", "cluster", t.Name)
	}
	kept, n, err := w.writeFull(ctx, t, ref, d)
	r.written, r.err = r.written+n, err
	if err == nil {
		r.state = &targetState{written: p.gen, client: t.Cluster.Client(), nsUID: uid, listed: time.Now(), kept: kept}
	}
	return r
}

// slices returns the slice client of a target's slice namespace.
func (w *Writer) slices(t Target) discoveryclient.EndpointSliceInterface {
	return t.Cluster.Client().DiscoveryV1().EndpointSlices(w.cfg.SliceNamespace)
}

// writeFull lists the target's slices and writes the difference to d
// (computePlan), removing orphans of deleted GatewayDNS of the namespace
// too. It returns the slices of kept source clusters the target has.
func (w *Writer) writeFull(ctx context.Context, t Target, ref string, d desired.State) (map[string]string, int, error) {
	lctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
	defer cancel()
	list, err := w.slices(t).List(lctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{
		contract.LabelManagedBy: contract.ManagedByValue}).String()})
	if err != nil {
		return nil, 0, fmt.Errorf("list EndpointSlices in %s/%s: %w", t.Name, w.cfg.SliceNamespace, err)
	}
	existing := make([]*discoveryv1.EndpointSlice, 0, len(list.Items))
	kept := map[string]string{}
	for i := range list.Items {
		s := &list.Items[i]
		existing = append(existing, s)
		if source := s.Labels[contract.LabelSourceCluster]; ownedBy(s, ref) && s.Labels[contract.LabelRecord] == string(contract.KindGateway) && d.Keep[source] {
			kept[s.Name] = source
		}
	}
	p := computePlan(ref, d.Slices, existing, d.Keep)
	p.Delete = append(p.Delete, w.orphans(ref, existing)...)
	n := 0
	var errs []error
	for _, s := range p.Create {
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
		if err := w.update(ctx, t, s); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	for _, s := range p.Delete {
		if err := w.delete(ctx, t, s); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return kept, n, errors.Join(errs...)
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
		put(s, false)
	}
	for _, name := range append(gone, dl.Delete...) {
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
	if sameSlice(existing, s) {
		return false, nil
	}
	return true, w.update(ctx, t, mergeForUpdate(existing, s))
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
