package write

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
)

// Client is what a write does with one kind in one namespace of a
// cluster: the methods of client-go's typed clients it uses, and no more,
// so the typed and fake clientsets both are one.
type Client[T metav1.Object, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

// Creator is the part of a Client Create needs.
type Creator[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// Deleter is the part of a Client Delete needs.
type Deleter interface {
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Updater is the part of a Client Update needs.
type Updater[T any] interface {
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// StatusUpdater writes the status subresource of a kind.
type StatusUpdater[T any] interface {
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Create creates d. Where its name is taken, the holder is read: one that
// ours says is the caller's is returned with created false, for the
// caller to compare and update; any other is left alone and the create
// fails with kubeclient.ErrNotOurs.
func Create[T metav1.Object](ctx context.Context, c Creator[T], d T, ours func(T) bool) (got T, created bool, err error) {
	got, err = c.Create(ctx, d, metav1.CreateOptions{})
	if err == nil {
		return got, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return got, false, err
	}
	holder, gerr := c.Get(ctx, d.GetName(), metav1.GetOptions{})
	switch {
	case gerr != nil:
		return got, false, kubeclient.Join(err, gerr)
	case !ours(holder):
		return got, false, NotOurs(d)
	}
	return holder, false, nil
}

// NotOurs is the refusal of desired object d whose name another's object
// holds (kubeclient.ErrNotOurs): that one object is not written.
func NotOurs(d metav1.Object) error {
	return fmt.Errorf("%s/%s: %w", d.GetNamespace(), d.GetName(), kubeclient.ErrNotOurs)
}

// Update writes u, which carries the resourceVersion of the object it
// replaces: one changed since it was read is refused (Conflict).
func Update[T any](ctx context.Context, c Updater[T], u T) (T, error) {
	return c.Update(ctx, u, metav1.UpdateOptions{})
}

// UpdateStatus writes the status of o, as Update does its spec.
func UpdateStatus[T any](ctx context.Context, c StatusUpdater[T], o T) (T, error) {
	return c.UpdateStatus(ctx, o, metav1.UpdateOptions{})
}

// Delete deletes o if it is still the object read: the precondition is
// its UID, so one made anew under its name meanwhile is not deleted, and
// one read without a UID is never deleted by a real API server. Gone
// already is no error.
func Delete(ctx context.Context, c Deleter, o metav1.Object) error {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(o.GetUID())}}
	if err := c.Delete(ctx, o.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// Concurrency is how many requests of one step of a write are in flight
// at once: the cluster's client rate bounds a write, not each request's
// round trip, and a cluster that does not answer costs a deadline per
// this many objects, not per object.
const Concurrency = 8

// Each runs write(i) for i in [0, n), Concurrency at a time, and returns
// when all have.
func Each(n int, write func(i int)) {
	sem := make(chan struct{}, Concurrency)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			write(i)
		})
	}
	wg.Wait()
}

// Errors collects the errors of the requests of one write, from Each's
// goroutines.
type Errors struct {
	mu   sync.Mutex
	errs []error
}

// Add keeps err (nil: nothing).
func (e *Errors) Add(err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

// Err is every error kept, joined (kubeclient.Join: bounded).
func (e *Errors) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) == 0 {
		return nil
	}
	return kubeclient.Join(e.errs...)
}
