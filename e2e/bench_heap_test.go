package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// heapSampleEvery is how often heapPeak reads the controller's heap
// profile: often enough to catch a peak of a step that converges in tens
// of seconds, seldom enough that the reads cost the controller little.
const heapSampleEvery = 2 * time.Second

// heapPeak samples the controller's heap profile (its in-use bytes as of
// its last GC) until stopped and keeps the largest: peak resident says
// how much memory the process took, this says what held it.
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
	body, inuse, err := controllerHeapProfile(ctx)
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

// end stops the sampling and returns the largest in-use heap seen, in
// bytes; with XCC_BENCH_OUT set it saves that profile (text format, for
// `go tool pprof`) beside it as file.
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

// controllerHeapProfile reads the controller's heap profile in text form
// and the bytes in use its first line gives.
func controllerHeapProfile(ctx context.Context) ([]byte, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+theLab.ControllerHTTP+"/debug/pprof/heap?debug=1", nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("heap profile: %s", resp.Status)
	}
	line, _, _ := bufio.NewReader(bytes.NewReader(body)).ReadLine()
	var objs, inuse, allocObjs, allocBytes, rate int64
	if _, err := fmt.Sscanf(string(line), "heap profile: %d: %d [%d: %d] @ heap/%d", &objs, &inuse, &allocObjs, &allocBytes, &rate); err != nil {
		return nil, 0, fmt.Errorf("heap profile's first line %q: %w", line, err)
	}
	return body, inuse, nil
}
