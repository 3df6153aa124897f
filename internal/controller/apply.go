package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// targetWorkers is how many target clusters one sync writes to at once.
// Each target is its own API server, so a sync waits on the slowest few
// instead of on the sum of all.
const targetWorkers = 8

// published remembers what the controller wrote for one GatewayDNS: the
// last two generations of its desired slices, the delta between them, and
// how far each target cluster has come. A target one generation behind is
// brought up to date with the delta alone. Listing every target's slices on
// every sync cost targets x slices, and every target holds a slice per
// selected cluster: at 1,000 Clusters a sync took minutes.
type published struct {
	gen   uint64
	cur   desiredSet
	delta delta // from generation gen-1 to gen
	// targets by workload key ("<cluster-ns>/<cluster>").
	targets map[string]targetState
	// reasons are the status reasons of the last sync, by cluster (recordTransitions).
	reasons map[string]string
}

// targetState is what one target cluster holds of a GatewayDNS's slices.
type targetState struct {
	// gen is the generation the target holds.
	gen uint64
	// client and nsUID are the connection and slice namespace the state
	// was reached with; a new kubeconfig or a namespace made again starts over.
	client WorkloadClient
	nsUID  types.UID
	// listed is when the target's slices were last listed; after half the
	// resync period the next sync lists them again, which repairs slices
	// someone else changed or deleted.
	listed time.Time
	// held are slices of kept source clusters the target still holds
	// (name -> source cluster); they are not in any generation.
	held map[string]string
}

// advance records the desired state of a sync; the generation moves on
// when it differs from the last one.
func (p *published) advance(d desiredState) {
	next := newDesiredSet(d)
	dl := computeDelta(p.cur, next)
	if p.gen > 0 && dl.empty() && maps.Equal(p.cur.Keep, next.Keep) {
		p.cur = next
		return
	}
	p.gen++
	p.cur, p.delta = next, dl
}

// publishedFor returns the record of a GatewayDNS, making it on first use.
func (c *Controller) publishedFor(key string) *published {
	c.publishedMu.Lock()
	defer c.publishedMu.Unlock()
	p := c.published[key]
	if p == nil {
		p = &published{targets: map[string]targetState{}}
		c.published[key] = p
	}
	return p
}

// forget drops the record of a GatewayDNS that is gone.
func (c *Controller) forget(key string) {
	c.publishedMu.Lock()
	defer c.publishedMu.Unlock()
	delete(c.published, key)
}

// apply brings every target cluster to the desired slices, up to
// targetWorkers at a time. A target that fails is recorded and skipped (and
// listed in full on the next sync); the others are still written.
//
// Targets that are one place (twins: Clusters whose kubeconfigs reach the
// same slice namespace of the same API server) are written once, by one of
// them; the others take its state. Written one by one they would
// each create the same slices, find them made by the twin, and list the
// namespace again: with many twins, most of a sync. When the first twin
// fails, the others are written on their own, as any target.
func (c *Controller) apply(ctx context.Context, gd *v1alpha1.GatewayDNS, d desiredState, targets []target) (map[string]error, int) {
	logger := klog.FromContext(ctx)
	ref := gd.Namespace + "/" + gd.Name
	p := c.publishedFor(ref)
	p.advance(d)

	results := make([]targetResult, len(targets))
	uids := make([]types.UID, len(targets))
	var writers []int
	twins := map[string][]int{} // place -> indexes of the targets there, in order
	var places []string
	for i, t := range targets {
		uid, has, synced := t.w.sliceNamespace(c.cfg.SliceNamespace)
		switch {
		case !synced:
			// Not listed yet: the Namespace informer enqueues us once it has.
			logger.V(2).Info("Target cluster not listed yet; skipped", "cluster", t.name)
			if old, known := p.targets[t.w.key]; known {
				results[i].state = &old
			}
			continue
		case !has:
			continue
		}
		uids[i] = uid
		place := t.w.place(uid)
		if place == "" {
			writers = append(writers, i)
			continue
		}
		if _, seen := twins[place]; !seen {
			places = append(places, place)
		}
		twins[place] = append(twins[place], i)
	}
	// Each place is written by its first twin in step (the others would
	// list it again), else by its first; the rest take the writer's state.
	twinOf := map[int]int{} // index of a twin -> index of the target that writes for it
	for _, place := range places {
		group := twins[place]
		w := group[0]
		for _, i := range group {
			if p.inStep(targets[i], uids[i]) {
				w = i
				break
			}
		}
		writers = append(writers, w)
		for _, i := range group {
			if i != w {
				twinOf[i] = w
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
				results[i] = c.writeTarget(ctx, p, targets[i], uids[i], ref, d)
			})
		}
		wg.Wait()
	}
	write(writers)
	var alone []int
	for i, j := range twinOf {
		if w := results[j]; w.err == nil && w.state != nil {
			st := *w.state
			st.client = targets[i].w.client
			results[i].state = &st
			continue
		}
		alone = append(alone, i)
	}
	write(alone)

	errs := map[string]error{}
	written := 0
	states := make(map[string]targetState, len(targets))
	for i, r := range results {
		written += r.written
		if r.err != nil {
			errs[targets[i].name] = r.err
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, "WriteFailed", "EndpointSlices in cluster %s: %v", targets[i].name, r.err)
		}
		if r.state != nil {
			states[targets[i].w.key] = *r.state
		}
	}
	p.targets = states
	return errs, written
}

// targetResult is what writing one target came to.
type targetResult struct {
	state   *targetState // nil: forget the target
	written int
	err     error
}

// inStep reports whether the controller knows what t holds: it reached t
// with its present client and slice namespace.
func (p *published) inStep(t target, uid types.UID) bool {
	old, known := p.targets[t.w.key]
	return known && old.client == t.w.client && old.nsUID == uid
}

// writeTarget brings one target, whose slice namespace has UID uid, to the
// current generation of p: nothing when it holds it, the delta when it holds
// the one before and was listed recently, otherwise a full list and write.
func (c *Controller) writeTarget(ctx context.Context, p *published, t target, uid types.UID, ref string, d desiredState) targetResult {
	old := p.targets[t.w.key]
	fresh := p.inStep(t, uid) && time.Since(old.listed) < c.cfg.Resync/2
	var r targetResult
	switch {
	case fresh && old.gen == p.gen:
		r.state = &old
		return r
	case fresh && old.gen+1 == p.gen:
		held, n, err := c.writeDelta(ctx, t, ref, p.delta, p.cur, old.held)
		r.written, r.err = n, err
		if err == nil {
			st := old
			st.gen, st.held = p.gen, held
			r.state = &st
			return r
		}
		if !errors.Is(err, errOutOfStep) {
			return r
		}
		klog.FromContext(ctx).V(2).Info("Target holds slices it was not known to; listing it", "cluster", t.name)
	}
	held, n, err := c.writeFull(ctx, t, ref, d)
	r.written, r.err = r.written+n, err
	if err == nil {
		r.state = &targetState{gen: p.gen, client: t.w.client, nsUID: uid, listed: time.Now(), held: held}
	}
	return r
}

// slices returns the slice client of a target's slice namespace.
func (c *Controller) slices(t target) discoveryclient.EndpointSliceInterface {
	return t.w.client.DiscoveryV1().EndpointSlices(c.cfg.SliceNamespace)
}

// writeFull lists the target's slices and writes the difference to d
// (computePlan), removing orphans of deleted GatewayDNS of the namespace
// too. It returns the slices of kept source clusters the target holds.
func (c *Controller) writeFull(ctx context.Context, t target, ref string, d desiredState) (map[string]string, int, error) {
	lctx, cancel := context.WithTimeout(ctx, workloadRequestTimeout)
	defer cancel()
	list, err := c.slices(t).List(lctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{
		contract.LabelManagedBy: contract.ManagedByValue}).String()})
	if err != nil {
		return nil, 0, fmt.Errorf("list EndpointSlices in %s/%s: %w", t.name, c.cfg.SliceNamespace, err)
	}
	existing := make([]*discoveryv1.EndpointSlice, 0, len(list.Items))
	held := map[string]string{}
	for i := range list.Items {
		s := &list.Items[i]
		existing = append(existing, s)
		if source := s.Labels[contract.LabelSourceCluster]; ownedBy(s, ref) && s.Labels[contract.LabelRecord] == string(contract.KindGateway) && d.Keep[source] {
			held[s.Name] = source
		}
	}
	p := computePlan(ref, d.Slices, existing, d.Keep)
	p.Delete = append(p.Delete, c.orphans(ref, existing)...)
	n := 0
	var errs []error
	for _, s := range p.Create {
		// put, not create: the slice may have been made since the list.
		changed, err := c.put(ctx, t, ref, s, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if changed {
			n++
		}
	}
	for _, s := range p.Update {
		if err := c.update(ctx, t, s); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	for _, s := range p.Delete {
		if err := c.delete(ctx, t, s); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return held, n, errors.Join(errs...)
}

// errOutOfStep is returned by writeDelta when the target holds a slice the
// controller did not know of; the caller lists the target instead.
var errOutOfStep = errors.New("target holds slices not known to the controller")

// writeDelta brings a target that holds the previous generation to the
// current one (to) without listing it: creates and updates from dl, deletes
// of gone names, and of the held slices of source clusters released. Each
// change reads the one slice it touches first, so a slice that is not the
// controller's is never changed. It returns the slices the target now holds.
func (c *Controller) writeDelta(ctx context.Context, t target, ref string, dl delta, to desiredSet, held map[string]string) (map[string]string, int, error) {
	next := maps.Clone(held)
	if next == nil {
		next = map[string]string{}
	}
	maps.Copy(next, dl.Hold)
	var gone []string
	for name, source := range held {
		if !dl.Release[source] {
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
		changed, err := c.put(ctx, t, ref, s, isNew)
		if err != nil {
			errs = append(errs, err)
		} else if changed {
			n++
		}
	}
	for _, s := range dl.Create {
		if _, isHeld := held[s.Name]; isHeld {
			put(s, false)
			continue
		}
		// A new name that exists already means the target is not what
		// this record says (another writer, or a twin target on the same
		// API server): one list is then cheaper than reading every slice.
		if err := c.create(ctx, t, s); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, n, errOutOfStep
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
		s, err := c.get(ctx, t, name)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s: %w", name, err))
			continue
		case !ownedBy(s, ref):
			continue
		}
		if err := c.delete(ctx, t, s); err != nil {
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
func (c *Controller) put(ctx context.Context, t target, ref string, s *discoveryv1.EndpointSlice, isNew bool) (bool, error) {
	if isNew {
		err := c.create(ctx, t, s)
		if !apierrors.IsAlreadyExists(err) {
			return err == nil, err
		}
	}
	existing, err := c.get(ctx, t, s.Name)
	if apierrors.IsNotFound(err) {
		return true, c.create(ctx, t, s)
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
	return true, c.update(ctx, t, mergeForUpdate(existing, s))
}

// get, create, update and delete are the calls to a target's slices, each
// bounded by workloadRequestTimeout.
func (c *Controller) get(ctx context.Context, t target, name string) (*discoveryv1.EndpointSlice, error) {
	ctx, cancel := context.WithTimeout(ctx, workloadRequestTimeout)
	defer cancel()
	return c.slices(t).Get(ctx, name, metav1.GetOptions{})
}

func (c *Controller) create(ctx context.Context, t target, s *discoveryv1.EndpointSlice) error {
	ctx, cancel := context.WithTimeout(ctx, workloadRequestTimeout)
	defer cancel()
	s = s.DeepCopy()
	s.Namespace = c.cfg.SliceNamespace
	if _, err := c.slices(t).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", s.Name, err)
	}
	c.cfg.Metrics.SlicesWritten.WithLabelValues("create").Inc()
	klog.FromContext(ctx).Info("Created EndpointSlice", "cluster", t.name, "slice", s.Name,
		"hostname", s.Annotations[contract.AnnotationHostname], "addresses", s.Endpoints[0].Addresses)
	return nil
}

// update writes s, which carries the resourceVersion of the slice it replaces.
func (c *Controller) update(ctx context.Context, t target, s *discoveryv1.EndpointSlice) error {
	ctx, cancel := context.WithTimeout(ctx, workloadRequestTimeout)
	defer cancel()
	s.Namespace = c.cfg.SliceNamespace
	if _, err := c.slices(t).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update %s: %w", s.Name, err)
	}
	c.cfg.Metrics.SlicesWritten.WithLabelValues("update").Inc()
	klog.FromContext(ctx).Info("Updated EndpointSlice", "cluster", t.name, "slice", s.Name,
		"hostname", s.Annotations[contract.AnnotationHostname], "addresses", s.Endpoints[0].Addresses)
	return nil
}

// delete removes s if it is still the object that was read (same UID).
func (c *Controller) delete(ctx context.Context, t target, s *discoveryv1.EndpointSlice) error {
	ctx, cancel := context.WithTimeout(ctx, workloadRequestTimeout)
	defer cancel()
	err := c.slices(t).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", s.Name, err)
	}
	c.cfg.Metrics.SlicesWritten.WithLabelValues("delete").Inc()
	klog.FromContext(ctx).Info("Deleted EndpointSlice", "cluster", t.name, "slice", s.Name,
		"hostname", s.Annotations[contract.AnnotationHostname])
	return nil
}

// orphans are slices written for a GatewayDNS of the same namespace that no
// longer exists: it was deleted while this cluster could not be reached, so
// its cleanup skipped this cluster. The first full list of the cluster
// again removes them. Slices of other namespaces are left to their own.
func (c *Controller) orphans(ref string, existing []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	namespace, _, _ := strings.Cut(ref, "/")
	var out []*discoveryv1.EndpointSlice
	for _, s := range existing {
		other := s.Annotations[contract.AnnotationGatewayRef]
		otherNS, _, ok := strings.Cut(other, "/")
		if s.Labels[contract.LabelManagedBy] != contract.ManagedByValue || !ok || other == ref || otherNS != namespace {
			continue
		}
		if _, exists, err := c.gdns.GetIndexer().GetByKey(other); err == nil && !exists {
			out = append(out, s)
		}
	}
	return out
}
