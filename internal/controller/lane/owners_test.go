package lane

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Two owners' writes to one cluster both run: a ClusterSet's write does
// not replace a GatewayDNS's, nor the other way round. Only a newer write
// of the same owner replaces that owner's waiting one.
func TestOwnersDoNotReplaceEachOther(t *testing.T) {
	s, ctx := newTestSet(t, Config{Wait: 2 * time.Second, PerCluster: 1})
	release := make(chan struct{})
	var ran sync.Map
	write := func(name string, block bool) func(context.Context) error {
		return func(context.Context) error {
			if block {
				<-release
			}
			ran.Store(name, true)
			return nil
		}
	}
	first := s.Submit("a", "clusterset", write("clusterset-1", true), nil)
	gdns := s.Submit("a", "gatewaydns", write("gatewaydns", false), nil)
	older := s.Submit("a", "clusterset", write("clusterset-2", false), nil)
	newer := s.Submit("a", "clusterset", write("clusterset-3", false), nil)
	close(release)
	res := s.Wait(ctx, []*Write{first, gdns, older, newer})
	for i, want := range []error{nil, nil, ErrReplaced, nil} {
		if !res[i].Ended || !errors.Is(res[i].Err, want) {
			t.Errorf("write %d: %+v, want ended with %v", i, res[i], want)
		}
	}
	for _, name := range []string{"clusterset-1", "gatewaydns", "clusterset-3"} {
		if _, ok := ran.Load(name); !ok {
			t.Errorf("%s never ran", name)
		}
	}
	if _, ok := ran.Load("clusterset-2"); ok {
		t.Error("the replaced write ran")
	}
}

// At most PerCluster writes of one cluster run at once, and an owner's
// writes of one cluster never overlap; the waiting ones start in the
// order they came.
func TestPerClusterBoundsRunningWrites(t *testing.T) {
	const perCluster = 2
	s, ctx := newTestSet(t, Config{Wait: 5 * time.Second, PerCluster: perCluster})
	var running, most atomic.Int32
	var mu sync.Mutex
	var order []string
	owners := map[string]*atomic.Int32{}
	write := func(owner string) func(context.Context) error {
		if owners[owner] == nil {
			owners[owner] = &atomic.Int32{}
		}
		mine := owners[owner]
		return func(context.Context) error {
			r := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			if mine.Add(1) > 1 {
				t.Errorf("two writes of %s at once", owner)
			}
			defer mine.Add(-1)
			mu.Lock()
			order = append(order, owner)
			mu.Unlock()
			time.Sleep(60 * time.Millisecond)
			return nil
		}
	}
	var writes []*Write
	for _, owner := range []string{"o1", "o2", "o3", "o4", "o1", "o5"} {
		writes = append(writes, s.Submit("a", owner, write(owner), nil))
	}
	other := s.Submit("b", "o1", write("b-o1"), nil)
	start := time.Now()
	res := s.Wait(ctx, []*Write{other})
	if !res[0].Ended || time.Since(start) > 200*time.Millisecond {
		t.Errorf("another cluster's write waited %s behind cluster a's: %+v", time.Since(start), res[0])
	}
	for i, r := range s.Wait(ctx, writes) {
		if !r.Ended || r.Err != nil {
			t.Errorf("write %d: %+v", i, r)
		}
	}
	if m := most.Load(); m != perCluster+1 && m != perCluster {
		t.Errorf("%d writes ran at once, want at most %d of cluster a (and one of b)", m, perCluster)
	}
	mu.Lock()
	defer mu.Unlock()
	var ofA []string
	for _, o := range order {
		if o != "b-o1" {
			ofA = append(ofA, o)
		}
	}
	// Two at a time, in the order they came; o1's second write waits for
	// its first. Within a pair the goroutines log in either order.
	if len(ofA) != 6 {
		t.Fatalf("cluster a ran %v", ofA)
	}
	for i := 0; i < len(ofA); i += 2 {
		slices.Sort(ofA[i : i+2])
	}
	if want := []string{"o1", "o2", "o3", "o4", "o1", "o5"}; !slices.Equal(ofA, want) {
		t.Errorf("cluster a's writes ran in pairs %v, want %v", ofA, want)
	}
}

// A cluster whose write ran into its deadline (it answers nothing) is
// backed off for every owner: another owner's write of it waits out the
// backoff, said so with the error and the next try; no other cluster's
// write waits for it.
func TestFrozenClusterBacksOffEveryOwner(t *testing.T) {
	s, ctx := newTestSet(t, Config{Wait: 100 * time.Millisecond, MinBackoff: 2 * time.Second})
	var ended sync.WaitGroup
	ended.Add(1)
	// A client that blocks until the call's deadline, which passes only
	// once the sync stopped waiting: on a busy machine a real deadline
	// could pass before the sync's wait does.
	deadline := make(chan struct{})
	frozen := func(context.Context) error {
		<-deadline
		return context.DeadlineExceeded
	}
	w := s.Submit("x", "clusterset", frozen, ended.Done)
	healthy := s.Submit("y", "clusterset", func(context.Context) error { return nil }, nil)
	res := s.Wait(ctx, []*Write{w, healthy})
	close(deadline)
	if res[0].Ended || !res[1].Ended {
		t.Fatalf("results %+v: want the frozen one running, the healthy one ended", res)
	}
	ended.Wait() // reported to its done func
	var ran atomic.Bool
	start := time.Now()
	other := s.Submit("x", "gatewaydns", func(context.Context) error { ran.Store(true); return nil }, nil)
	y := s.Submit("y", "gatewaydns", func(context.Context) error { return nil }, nil)
	res = s.Wait(ctx, []*Write{other, y})
	if res[0].Ended || !errors.Is(res[0].Backoff, context.DeadlineExceeded) || ran.Load() {
		t.Errorf("another owner's write of the frozen cluster: %+v, ran %v; want it waiting with the deadline error", res[0], ran.Load())
	}
	if next := time.Until(res[0].NextTry); next < time.Second || next > 2*time.Second {
		t.Errorf("next try in %s, want about 2s", next)
	}
	if !res[1].Ended || res[1].Err != nil {
		t.Errorf("the other cluster's write: %+v", res[1])
	}
	// A sync that waited for it would have waited its whole Wait.
	if took := time.Since(start); took >= 100*time.Millisecond {
		t.Errorf("the sync waited %s for a cluster in backoff", took)
	}
}
