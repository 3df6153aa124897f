package workload

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Defaults of ReadLimits: the bounds on what the controller reads from a
// workload cluster's API server, which the tenant chooses (the kubeconfig
// Secret's server) and may run as it likes.
const (
	// DefaultListPageSize is the most objects one list request asks for;
	// an informer's list is paged (a consistent read, never the watch
	// cache's whole list in one response).
	DefaultListPageSize = 250
	// DefaultMaxResponseBytes is the most bytes of one response body, a
	// list page or a whole watch stream; more fails the request
	// (ErrResponseTooLarge). A page of 250 EndpointSlices of 100
	// endpoints is about 8 MiB of JSON.
	DefaultMaxResponseBytes = 32 << 20
	// DefaultMaxListBytes is the most bytes of the response bodies of
	// one list, its pages together: client-go keeps every page until the
	// last one is read, so a list is counted while it is read, not after.
	DefaultMaxListBytes = 64 << 20
	// DefaultMaxBytesPerCluster is the most bytes the informers of one
	// workload cluster hold together: the lists being read (their
	// bodies) and the objects in their stores (each as encoded once
	// transformed for the cache). More cuts the cluster off.
	DefaultMaxBytesPerCluster = 128 << 20
	// DefaultMaxObjectsPerCluster is the most objects the informers of
	// one workload cluster hold together (and one list may return); more
	// cuts the cluster off (ReasonClusterCutOff).
	DefaultMaxObjectsPerCluster = 50000
	// DefaultListTimeout bounds one list request (a page), from sending
	// it to the end of its body.
	DefaultListTimeout = 30 * time.Second
	// DefaultWatchTimeout bounds one watch request on the client side,
	// whatever the server does with timeoutSeconds (which is sent as the
	// reflector's, at most this); the informer then watches again from
	// where it was.
	DefaultWatchTimeout = 10 * time.Minute
	// DefaultCutOffRetry is how long a cluster that was cut off stays so
	// before its informers start again.
	DefaultCutOffRetry = 5 * time.Minute
	// DefaultUnreachableAfter is how long every read of a cluster fails,
	// none going through, before it counts as unreachable: long enough
	// for an informer's watch to be made again after a blip, short enough
	// that status says so within 30 s of the API server dying, a sync
	// included (e2e WorkloadAPIServerKilled).
	DefaultUnreachableAfter = 20 * time.Second
)

// ReadLimits bound the reads from one workload cluster; a zero field is
// its default.
type ReadLimits struct {
	ListPageSize         int64
	MaxResponseBytes     int64
	MaxListBytes         int64
	MaxBytesPerCluster   int64
	MaxObjectsPerCluster int64
	ListTimeout          time.Duration
	WatchTimeout         time.Duration
	CutOffRetry          time.Duration
	// UnreachableAfter and PropertyRefresh are not flags: the tests
	// shorten them.
	UnreachableAfter time.Duration
	PropertyRefresh  time.Duration
}

func (l ReadLimits) withDefaults() ReadLimits {
	l.ListPageSize = cmp.Or(l.ListPageSize, DefaultListPageSize)
	l.MaxResponseBytes = cmp.Or(l.MaxResponseBytes, DefaultMaxResponseBytes)
	l.MaxListBytes = cmp.Or(l.MaxListBytes, DefaultMaxListBytes)
	l.MaxBytesPerCluster = cmp.Or(l.MaxBytesPerCluster, DefaultMaxBytesPerCluster)
	l.MaxObjectsPerCluster = cmp.Or(l.MaxObjectsPerCluster, DefaultMaxObjectsPerCluster)
	l.ListTimeout = cmp.Or(l.ListTimeout, DefaultListTimeout)
	l.WatchTimeout = cmp.Or(l.WatchTimeout, DefaultWatchTimeout)
	l.CutOffRetry = cmp.Or(l.CutOffRetry, DefaultCutOffRetry)
	l.UnreachableAfter = cmp.Or(l.UnreachableAfter, DefaultUnreachableAfter)
	l.PropertyRefresh = cmp.Or(l.PropertyRefresh, PropertyRefresh)
	return l
}

// HeapBudget is the most heap the reads of one workload cluster under l
// take, garbage not yet collected included: HeapPerByte for each byte of
// MaxBytesPerCluster (a body read, then decoded) and HeapPerObject for
// each of MaxObjectsPerCluster (a small object decodes into a larger Go
// struct than its bytes).
func HeapBudget(l ReadLimits) int64 {
	l = l.withDefaults()
	return HeapPerByte*l.MaxBytesPerCluster + HeapPerObject*l.MaxObjectsPerCluster
}

// HeapPerByte and HeapPerObject are the factors of HeapBudget (at
// GOGC=100), with a margin over what the hostile API server's tests
// (hostile_test.go) measure: a peak of about 4.3 heap bytes per byte of
// MaxBytesPerCluster with pages of one object just under the body limit,
// and about 3 KiB per small object listed.
const (
	HeapPerByte   = 6
	HeapPerObject = 4 << 10
)

// ErrResponseTooLarge is the error of a request whose response body is
// longer than ReadLimits.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("response body too large")

// ErrTooManyBytes is the error of a list whose pages together, or with
// what the cluster's informers hold, pass ReadLimits.MaxListBytes or
// MaxBytesPerCluster.
var ErrTooManyBytes = errors.New("too many bytes")

// ErrTooManyObjects is the error of a list that returned more objects
// than ReadLimits.MaxObjectsPerCluster leaves it.
var ErrTooManyObjects = errors.New("too many objects")

// limitBodies wraps a transport so that no response body is read past
// most bytes: the read that would pass it fails with ErrResponseTooLarge,
// as does a response announcing a longer body. The request then fails as
// a whole (client-go reads a list's body to the end before it decodes it;
// a watch ends with an error and is made again). The body of a list page
// also counts against its list's bytes and its cluster's (listRead, from
// the request's context), failing with ErrTooManyBytes past them.
func limitBodies(rt http.RoundTripper, most int64) http.RoundTripper {
	return &bodyLimiter{rt: rt, most: most}
}

// LimitBodies is limitBodies for the operator commands that read a
// workload cluster with its kubeconfig (xcc-syncer explain and status):
// that API server is the tenant's too.
func LimitBodies(rt http.RoundTripper, most int64) http.RoundTripper { return limitBodies(rt, most) }

// LimitReader is r read up to most bytes, as a response body of
// limitBodies: the read that would pass it fails with
// ErrResponseTooLarge, what naming r in the error. For a body an
// operator command reads further, to a smaller bound of its own (a pod's
// /metrics through the pod proxy).
func LimitReader(r io.Reader, most int64, what string) io.Reader {
	return &limitedBody{rc: io.NopCloser(r), left: most, most: most, what: what}
}

type bodyLimiter struct {
	rt   http.RoundTripper
	most int64
}

func (b *bodyLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return cutErrorBody(req, resp)
	}
	most := b.most
	if c, ok := req.Context().Value(bodyCapKey{}).(int64); ok && c < most {
		most = c
	}
	if resp.ContentLength > most {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w: %d bytes announced, the limit is %d", req.Method, req.URL.Path, ErrResponseTooLarge, resp.ContentLength, most)
	}
	list, _ := req.Context().Value(listReadKey{}).(*listRead)
	resp.Body = &limitedBody{rc: resp.Body, left: most, most: most, what: req.Method + " " + req.URL.Path, list: list}
	return resp, nil
}

// bodyCapKey is the context key of a request's own body limit, below
// the client's (withBodyCap).
type bodyCapKey struct{}

// withBodyCap makes the requests of ctx read no more than most bytes of
// their response body, whatever the client's limit: for a read of one
// small object, which should not be read to the client's limit before
// it is refused.
func withBodyCap(ctx context.Context, most int64) context.Context {
	return context.WithValue(ctx, bodyCapKey{}, most)
}

// WrappedRoundTripper lets client-go's debugging see the transport below.
func (b *bodyLimiter) WrappedRoundTripper() http.RoundTripper { return b.rt }

type limitedBody struct {
	rc         io.ReadCloser
	left, most int64
	what       string
	err        error
	// list is the list this body is a page of, or nil.
	list *listRead
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.rc.Read(p)
	if int64(n) > l.left {
		l.err = fmt.Errorf("%s: %w: more than %d bytes", l.what, ErrResponseTooLarge, l.most)
		n = int(l.left)
		l.left = 0
		return n, l.err
	}
	l.left -= int64(n)
	if l.list != nil && n > 0 {
		if lerr := l.list.charge(int64(n)); lerr != nil {
			l.err = fmt.Errorf("%s: %w", l.what, lerr)
			return n, l.err
		}
	}
	return n, err
}

// listReadKey is the context key of the listRead a request belongs to.
type listReadKey struct{}

// listRead is one list of an informer, its pages together: the bytes of
// their bodies count, as they are read, against the list's limit and,
// until the list ends, against the cluster's (reads.bytes), as client-go
// keeps every page until the last.
type listRead struct {
	c *counter
	// what names the read in errors ("a list of ...").
	what string

	mu    sync.Mutex
	bytes int64
	ended bool
}

// charge counts n more bytes of the list's bodies; an error once the
// list or the cluster is past its limit.
func (l *listRead) charge(n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return nil
	}
	lim := l.c.r.limits
	l.bytes += n
	all := l.c.r.bytes.Add(n)
	if l.bytes > lim.MaxListBytes {
		return fmt.Errorf("%w: the pages of %s are more than %d bytes", ErrTooManyBytes, l.what, lim.MaxListBytes)
	}
	if all > lim.MaxBytesPerCluster {
		return fmt.Errorf("%w: the cluster's informers would hold more than %d bytes (%s)", ErrTooManyBytes, lim.MaxBytesPerCluster, l.what)
	}
	return nil
}

// chargedRead makes the response bodies of the requests of ctx count,
// as they are read, against the bytes of r's cluster, as a list's pages
// do; end gives them back. For a read that is not an informer's: what
// it reads is dropped once parsed.
func chargedRead(ctx context.Context, r *reads, what string) (context.Context, func()) {
	l := &listRead{c: &counter{r: r, what: what}, what: what}
	return context.WithValue(ctx, listReadKey{}, l), l.end
}

// end gives the list's bytes back to the cluster: its pages are dropped
// or are objects in the store, counted there.
func (l *listRead) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.ended = true
		l.c.r.bytes.Add(-l.bytes)
	}
}

// cachedBytes is what obj, as the informer's store keeps it, counts
// against the cluster's bytes: its protobuf size, or for a type without
// one (a CRD's) the length of its JSON.
func cachedBytes(obj any) int64 {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if s, ok := obj.(interface{ Size() int }); ok {
		return int64(s.Size())
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

func (l *limitedBody) Close() error { return l.rc.Close() }

// counter counts the objects one informer holds, against the cluster's
// limit, and stops the informer when a list or its store would pass it.
type counter struct {
	r    *reads
	what string

	mu        sync.Mutex
	held      int64 // objects in the informer's store
	heldBytes int64 // their cachedBytes
	listed    int64 // objects of the list being paged
	current   *listRead
	isCut     bool
	stop      context.CancelFunc
}

// allowed is how many objects this informer may hold: the cluster's
// limit less what the cluster's other informers hold and are listing.
// c.mu is held: the informer's goroutine releases held when it stops.
func (c *counter) allowed() int64 {
	return c.r.limits.MaxObjectsPerCluster - (c.r.held.Load() - c.held) - (c.r.listed.Load() - c.listed)
}

// endList gives what the list being paged counts back to the cluster.
func (c *counter) endList() {
	c.mu.Lock()
	l := c.current
	c.current = nil
	c.r.listed.Add(-c.listed)
	c.listed = 0
	c.mu.Unlock()
	if l != nil {
		l.end()
	}
}

func (c *counter) cutOff(msg string) {
	if c.halt() {
		c.r.cutOff(msg)
	}
}

// halt stops the informer and gives back what it holds; false if it was
// stopped already.
func (c *counter) halt() bool {
	c.mu.Lock()
	if c.isCut {
		c.mu.Unlock()
		return false
	}
	c.isCut = true
	c.r.held.Add(-c.held)
	c.r.bytes.Add(-c.heldBytes)
	c.held, c.heldBytes = 0, 0
	stop := c.stop
	c.mu.Unlock()
	c.endList()
	if stop != nil {
		stop()
	}
	return true
}

func (c *counter) cut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isCut
}

// added counts an object new in the store, of size bytes; false once
// the informer is cut off (it went past a limit now or before).
func (c *counter) added(size int64) bool {
	return c.changed(1, size)
}

// updated counts an object of the store changing from size old to cur
// bytes; false once the informer is cut off.
func (c *counter) updated(old, cur int64) bool {
	return c.changed(0, cur-old)
}

// changed adds objects and bytes to what the informer holds, and cuts it
// off when the cluster's informers would hold more than their limits.
func (c *counter) changed(objects, bytes int64) bool {
	c.mu.Lock()
	if c.isCut {
		c.mu.Unlock()
		return false
	}
	c.held += objects
	c.heldBytes += bytes
	total := c.r.held.Add(objects)
	totalBytes := c.r.bytes.Add(bytes)
	c.mu.Unlock()
	l := c.r.limits
	switch {
	case total > l.MaxObjectsPerCluster:
		c.cutOff(fmt.Sprintf("the cluster's informers would hold more than %d objects (%s); it is cut off for %s "+
			"(the controller's own objects count too, about 4 per import of a clusterset: raise --workload-max-objects for one of many imports)",
			l.MaxObjectsPerCluster, c.what, l.CutOffRetry))
		return false
	case bytes > 0 && totalBytes > l.MaxBytesPerCluster:
		c.cutOff(fmt.Sprintf("%v: the cluster's informers would hold more than %d bytes (%s); it is cut off for %s",
			ErrTooManyBytes, l.MaxBytesPerCluster, c.what, l.CutOffRetry))
		return false
	}
	return true
}

// deleted counts an object of size bytes gone from the store.
func (c *counter) deleted(size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.isCut && c.held > 0 {
		c.held--
		c.r.held.Add(-1)
		size = min(size, c.heldBytes)
		c.heldBytes -= size
		c.r.bytes.Add(-size)
	}
}

// release gives the objects and bytes of a stopped informer back to the
// cluster.
func (c *counter) release() {
	c.mu.Lock()
	c.r.held.Add(-c.held)
	c.r.bytes.Add(-c.heldBytes)
	c.held, c.heldBytes = 0, 0
	c.mu.Unlock()
	c.endList()
}

// list bounds a list: paged (ListPageSize, a consistent read so the API
// server honors the limit), each page within ListTimeout, and the pages
// of one list no more objects than allowed and no more bytes than
// MaxListBytes (counted as they are read, with the cluster's, by the
// transport: listRead); a list past a limit cuts the cluster off.
func (c *counter) list(inner cache.ListWithContextFunc) cache.ListWithContextFunc {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		l := c.r.limits
		if why := c.r.cut(); why != "" {
			// Another informer cut the cluster off: none reads on.
			c.halt()
			return nil, fmt.Errorf("list of %s: the cluster is cut off: %s", c.what, why)
		}
		if o.Continue == "" {
			// The watch cache (resourceVersion 0) ignores limit and
			// sends everything in one response.
			o.ResourceVersion, o.ResourceVersionMatch = "", ""
			// A list left unfinished is dropped by the pager.
			c.endList()
		}
		c.mu.Lock()
		if c.current == nil {
			c.current = &listRead{c: c, what: "one list of " + c.what}
		}
		current := c.current
		c.mu.Unlock()
		o.Limit = l.ListPageSize
		ctx, cancel := context.WithTimeout(context.WithValue(ctx, listReadKey{}, current), l.ListTimeout)
		defer cancel()
		obj, err := inner(ctx, o)
		if errors.Is(err, ErrResponseTooLarge) || errors.Is(err, ErrTooManyBytes) {
			c.cutOff(fmt.Sprintf("a list of %s: %v; it is cut off for %s", c.what, err, l.CutOffRetry))
		}
		if err != nil {
			c.endList()
			if !c.cut() {
				c.r.failed(err)
			}
			return nil, err
		}
		c.r.answered()
		n := int64(meta.LenList(obj))
		c.mu.Lock()
		c.listed += n
		c.r.listed.Add(n)
		listed, allowed := c.listed, c.allowed()
		c.mu.Unlock()
		if listed > allowed {
			err := fmt.Errorf("list of %s: %w: more than %d objects", c.what, ErrTooManyObjects, max(allowed, 0))
			c.cutOff(fmt.Sprintf("%v (the limit of the cluster's informers together is %d); it is cut off for %s",
				err, l.MaxObjectsPerCluster, l.CutOffRetry))
			return nil, err
		}
		if m, merr := meta.ListAccessor(obj); merr != nil || m.GetContinue() == "" {
			// The last page: the pages become the store's objects.
			c.endList()
		}
		return obj, nil
	}
}

// watch bounds a watch in time on the client side: timeoutSeconds asks
// the server to end it, and the request's context ends it anyway a
// little later, whatever the server does.
func (c *counter) watch(inner cache.WatchFuncWithContext) cache.WatchFuncWithContext {
	return func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		limit := c.r.limits.WatchTimeout
		if o.TimeoutSeconds == nil || time.Duration(*o.TimeoutSeconds)*time.Second > limit {
			secs := max(int64(limit/time.Second), 1)
			o.TimeoutSeconds = &secs
		}
		ctx, cancel := context.WithTimeout(ctx, time.Duration(*o.TimeoutSeconds)*time.Second+min(watchGrace, limit/10))
		w, err := inner(ctx, o)
		if err != nil {
			cancel()
			c.r.failed(err)
			return nil, err
		}
		c.r.answered()
		return &boundedWatch{Interface: w, cancel: cancel}, nil
	}
}

// watchGrace is how long after its timeoutSeconds a watch is ended by
// the client (at most a tenth of WatchTimeout).
const watchGrace = 30 * time.Second

type boundedWatch struct {
	watch.Interface
	cancel context.CancelFunc
}

func (b *boundedWatch) Stop() {
	b.Interface.Stop()
	b.cancel()
}

// noWatchList makes an informer list (paged, counted) rather than stream
// its initial objects over a watch, which no limit here could page.
type noWatchList struct{}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// newInformer is cache.NewInformerWithOptions for a workload cluster:
// lw's list and watch bounded by the cluster's limits, and the handler
// counting what the store holds (what names the objects in messages).
func newInformer(r *reads, what string, lw *cache.ListWatch, opts cache.InformerOptions) *objectWatch {
	c := &counter{r: r, what: what}
	bounded := &cache.ListWatch{ListWithContextFunc: c.list(lw.ListWithContextFunc), WatchFuncWithContext: c.watch(lw.WatchFuncWithContext)}
	opts.ListerWatcher = cache.ToListWatcherWithWatchListSemantics(bounded, noWatchList{})
	opts.Handler = countingHandler{c: c, h: opts.Handler}
	store, ctl := cache.NewInformerWithOptions(opts)
	return &objectWatch{store: store, ctl: ctl, counter: c}
}

// countingHandler counts the objects added to and deleted from the store
// before it passes the event on; an object past the limit cuts the
// informer off and is no event.
type countingHandler struct {
	c *counter
	h cache.ResourceEventHandler
}

func (h countingHandler) OnAdd(obj any, initial bool) {
	if h.c.added(cachedBytes(obj)) {
		h.h.OnAdd(obj, initial)
	}
}

func (h countingHandler) OnUpdate(old, cur any) {
	if h.c.updated(cachedBytes(old), cachedBytes(cur)) {
		h.h.OnUpdate(old, cur)
	}
}

func (h countingHandler) OnDelete(obj any) {
	h.c.deleted(cachedBytes(obj))
	h.h.OnDelete(obj)
}
