package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// heapSampleEvery is how often heapPeak reads the controller's heap in
// use: often enough to catch a peak of a step that converges in tens
// of seconds, seldom enough that the reads cost the controller little.
const heapSampleEvery = 2 * time.Second

// heapPeak samples the controller's heap in use (its metric) until
// stopped and keeps the heap profile taken at the largest: peak resident
// says how much memory the process took, the profile what held it.
type heapPeak struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	inuse   int64
	profile []byte
	errs    int
}

// sampleHeap starts sampling the controller's heap profile.
func sampleHeap(ctx context.Context) *heapPeak {
	h := &heapPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(heapSampleEvery)
		defer tick.Stop()
		for {
			h.sample(ctx)
			select {
			case <-h.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapPeak) sample(ctx context.Context) {
	v, err := metricValue(ctx, "http://"+theLab.ControllerHTTP+"/metrics", heapMetric)
	inuse := int64(v)
	var body []byte
	if err == nil && inuse > h.largest() {
		body, err = controllerProfile(ctx, "heap")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.errs++
		return
	}
	if inuse > h.inuse {
		h.inuse, h.profile = inuse, body
	}
}

func (h *heapPeak) largest() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inuse
}

// end stops the sampling and returns the largest in-use heap seen, in
// bytes; with XCC_BENCH_OUT set it saves the profile taken then beside
// it as file, for `go tool pprof`.
func (h *heapPeak) end(t *testing.T, file string) int64 {
	close(h.stop)
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.errs > 0 {
		t.Logf("heap samples: %d failed", h.errs)
	}
	if out := os.Getenv(benchOutEnv); out != "" && h.profile != nil {
		dst := filepath.Join(filepath.Dir(out), file)
		if err := os.WriteFile(dst, h.profile, 0o644); err != nil {
			t.Logf("save heap profile: %v", err)
		} else {
			t.Logf("controller heap profile at its sampled peak saved in %s", dst)
		}
	}
	return h.inuse
}
