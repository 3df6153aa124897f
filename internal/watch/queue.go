// Package watch is what both roles use to watch the API: a rate-limited
// work queue of namespace/name keys, the worker loop that syncs them, and
// helpers that turn informer events (tombstones included) into keys. A
// sync handler sees only a key and reads the object from a cache, so
// several events for one object cost one sync.
package watch

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// SyncFunc makes the world match the object a key names. An error
// requeues the key with back-off.
type SyncFunc func(ctx context.Context, key string) error

// Config configures a Queue.
type Config struct {
	// Name names the queue in client-go's work queue metrics and logs.
	Name string
	// Sync is called for every key taken from the queue.
	Sync SyncFunc
	// Failed, if set, reports a failed sync (count it, log it); retries is
	// how often the key was requeued before. The key is requeued with
	// back-off either way. nil: logged as an error.
	Failed func(ctx context.Context, key string, err error, retries int)
	// RateLimiter, if set, replaces client-go's default controller rate
	// limiter (per-key exponential back-off and an overall bucket).
	RateLimiter workqueue.TypedRateLimiter[string]
}

// Queue is a rate-limited work queue of keys and its workers.
type Queue struct {
	name   string
	q      workqueue.TypedRateLimitingInterface[string]
	sync   SyncFunc
	failed func(ctx context.Context, key string, err error, retries int)
}

// New returns a Queue; Run starts its workers.
func New(cfg Config) *Queue {
	limiter := cfg.RateLimiter
	if limiter == nil {
		limiter = workqueue.DefaultTypedControllerRateLimiter[string]()
	}
	failed := cfg.Failed
	if failed == nil {
		failed = func(ctx context.Context, key string, err error, retries int) {
			utilruntime.HandleErrorWithContext(ctx, err, "Sync failed; requeued", "queue", cfg.Name, "key", key, "retries", retries)
		}
	}
	return &Queue{
		name: cfg.Name,
		q: workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
			workqueue.TypedRateLimitingQueueConfig[string]{Name: cfg.Name}),
		sync:   cfg.Sync,
		failed: failed,
	}
}

// Add queues a key as it is.
func (q *Queue) Add(key string) { q.q.Add(key) }

// AddAfter queues a key once d has passed: a sync due later.
func (q *Queue) AddAfter(key string, d time.Duration) { q.q.AddAfter(key, d) }

// Enqueue queues the namespace/name key of an informer object; for a
// deleted object whose final state the informer missed it takes the key
// from the tombstone, so the sync still sees the deletion.
func (q *Queue) Enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("key of %T: %w", obj, err))
		return
	}
	q.q.Add(key)
}

// EnqueueNamespace queues every object of namespace that indexer (an
// informer's, with the namespace index) holds: a change to something
// they share, such as a Cluster of their namespace.
func (q *Queue) EnqueueNamespace(indexer cache.Indexer, namespace string) {
	objs, err := indexer.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("list the objects of queue %s in %q: %w", q.name, namespace, err))
		return
	}
	for _, o := range objs {
		q.Enqueue(o)
	}
}

// Handler enqueues every object an informer adds, updates or deletes.
func (q *Queue) Handler() cache.ResourceEventHandlerFuncs { return OnEvent(q.Enqueue) }

// Len is the number of keys waiting (not those being synced).
func (q *Queue) Len() int { return q.q.Len() }

// ShutDown stops the queue: workers finish their key and return. Safe to
// call more than once.
func (q *Queue) ShutDown() { q.q.ShutDown() }

// Run syncs keys with workers goroutines until ctx ends, then shuts the
// queue down and waits for the workers to finish their keys.
func (q *Queue) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, q.work, time.Second) })
	}
	<-ctx.Done()
	q.q.ShutDown()
	wg.Wait()
}

func (q *Queue) work(ctx context.Context) {
	for q.next(ctx) {
	}
}

// next syncs one key: on success the key's back-off is forgotten, on
// failure it is requeued with back-off. It returns false once the queue
// is shut down.
func (q *Queue) next(ctx context.Context) bool {
	key, shutdown := q.q.Get()
	if shutdown {
		return false
	}
	defer q.q.Done(key)
	if err := q.sync(ctx, key); err != nil {
		q.failed(ctx, key, err, q.q.NumRequeues(key))
		q.q.AddRateLimited(key)
		return true
	}
	q.q.Forget(key)
	return true
}

// OnEvent calls fn with the object of every add, the new object of every
// update and the object (or tombstone) of every delete.
func OnEvent(fn func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    fn,
		UpdateFunc: func(_, cur any) { fn(cur) },
		DeleteFunc: fn,
	}
}

// Unwrap returns the last known object inside a tombstone, or obj itself.
func Unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// Meta returns the metadata of an informer object or tombstone, nil if it
// has none.
func Meta(obj any) metav1.Object {
	m, _ := Unwrap(obj).(metav1.Object)
	return m
}
