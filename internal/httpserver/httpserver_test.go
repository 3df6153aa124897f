package httpserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_things_total", Help: "things"})
	reg.MustRegister(c)
	c.Inc()
	var readyErr error
	state := "ok: serving 3 keys from disk"

	for _, profiling := range []bool{false, true} {
		srv, err := Start(context.Background(), Config{
			Address:   "127.0.0.1:0",
			Gatherer:  reg,
			Profiling: profiling,
			Ready:     func(*http.Request) (string, error) { return state, readyErr },
		})
		if err != nil {
			t.Fatal(err)
		}
		base := "http://" + srv.Addr().String()
		for _, tc := range []struct {
			path, readyErr string
			code           int
			body           string
		}{
			{path: "/healthz", code: 200, body: "ok\n"},
			{path: "/readyz", code: 200, body: state + "\n"},
			{path: "/readyz", readyErr: "caches not synced", code: 503, body: "not ready: caches not synced\n"},
			{path: "/metrics", code: 200, body: "test_things_total 1"},
			{path: "/debug/pprof/", code: map[bool]int{false: 404, true: 200}[profiling]},
		} {
			readyErr = nil
			if tc.readyErr != "" {
				readyErr = errors.New(tc.readyErr)
			}
			code, body := testfixture.HTTPGet(t, base+tc.path)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("profiling %v: GET %s (ready error %q) = %d %q, want %d containing %q",
					profiling, tc.path, tc.readyErr, code, body, tc.code, tc.body)
			}
		}
		srv.Close()
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			t.Error("server still answers after Close")
		}
	}
}

func TestStartRefusesBusyAddress(t *testing.T) {
	srv, err := Start(context.Background(), Config{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := Start(context.Background(), Config{Address: srv.Addr().String()}); err == nil {
		t.Error("second server on the same address started")
	}
}

// Every role's registry gives the live heap beside the Go and process
// metrics: the figure a memory budget is about.
func TestNewRegistryHasTheLiveHeap(t *testing.T) {
	families, err := NewRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	for _, want := range []string{"go_gc_heap_live_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines", "process_resident_memory_bytes"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s among %d families", want, len(names))
		}
	}
}
