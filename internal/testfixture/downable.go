package testfixture

import (
	"errors"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Downable is the API server of a fake workload cluster that can go
// down: then every call fails and the watches running end, as when the
// server stops, until it is up again.
type Downable struct {
	mu   sync.Mutex
	gone chan struct{} // closed while down
}

// ErrServerDown is what a call to a Downable that is down fails with.
var ErrServerDown = errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")

// NewDownable makes c a Downable, up.
func NewDownable(c *fake.Clientset) *Downable {
	d := &Downable{gone: make(chan struct{})}
	c.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		if d.IsDown() {
			return true, nil, ErrServerDown
		}
		return false, nil, nil
	})
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		d.mu.Lock()
		gone := d.gone
		d.mu.Unlock()
		if d.IsDown() {
			return true, nil, ErrServerDown
		}
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		inner, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		return true, endOn(inner, gone), nil
	})
	return d
}

// IsDown reports whether d is down.
func (d *Downable) IsDown() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.gone:
		return true
	default:
		return false
	}
}

// Down stops d: every call fails, the watches running end.
func (d *Downable) Down() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.gone)
}

// Up starts d again.
func (d *Downable) Up() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gone = make(chan struct{})
}

// endOn passes inner's events on until gone is closed or it is stopped.
// endOn is inner, ended when gone is closed.
func endOn(inner watch.Interface, gone <-chan struct{}) watch.Interface {
	out := make(chan watch.Event)
	stop := make(chan struct{})
	go func() {
		defer close(out)
		defer inner.Stop()
		for {
			select {
			case ev, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-gone:
					return
				case <-stop:
					return
				}
			case <-gone:
				return
			case <-stop:
				return
			}
		}
	}()
	return &endingWatch{out: out, stop: stop}
}

type endingWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *endingWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *endingWatch) ResultChan() <-chan watch.Event { return w.out }
