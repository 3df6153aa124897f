// Package httpserver is the HTTP endpoint every xcc-syncer role runs for
// its kubelet and Prometheus: /healthz, /readyz, /metrics and, when asked,
// /debug/pprof/. One implementation, so both roles answer probes the same
// way.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

const (
	readHeaderTimeout = 5 * time.Second
	shutdownTimeout   = 5 * time.Second
)

// Config configures a Server.
type Config struct {
	// Address is host:port to listen on; port 0 picks a free one.
	Address string
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	// Ready answers /readyz: its text is the body of a 200, its error the
	// body of a 503 ("not ready: ..."). nil: always ready.
	Ready func(*http.Request) (string, error)
	// Profiling serves Go's /debug/pprof/ too.
	Profiling bool
	// Bound, if set, is told the address the listener bound (for port 0).
	Bound func(net.Addr)
	// Handlers are the role's own endpoints, by path.
	Handlers map[string]http.Handler
}

// Server is a started HTTP endpoint.
type Server struct {
	srv  *http.Server
	addr net.Addr
	errc chan error
}

// Start listens on cfg.Address and serves in the background; requests see
// ctx as their base context. Close stops it.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		state := "ok"
		if cfg.Ready != nil {
			var err error
			if state, err = cfg.Ready(r); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, state)
	})
	if cfg.Gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	for path, h := range cfg.Handlers {
		mux.Handle(path, h)
	}
	if cfg.Profiling {
		// Index also serves the named profiles (heap, goroutine, ...).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	l, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", cfg.Address, err)
	}
	s := &Server{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: readHeaderTimeout,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		},
		addr: l.Addr(),
		errc: make(chan error, 1),
	}
	go func() {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "HTTP server stopped", "address", s.addr.String())
			s.errc <- fmt.Errorf("http server on %s: %w", s.addr, err)
		}
	}()
	klog.FromContext(ctx).Info("Serving /healthz, /readyz, /metrics", "address", s.addr.String(), "profiling", cfg.Profiling)
	if cfg.Bound != nil {
		cfg.Bound(s.addr)
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Err delivers the error that stopped the server, if it stopped on its own.
func (s *Server) Err() <-chan error { return s.errc }

// Close stops accepting requests and waits a few seconds for those under
// way.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// liveHeap is the runtime metric of the heap the last GC found live
// (go_gc_heap_live_bytes): what a process holds, where
// go_memstats_heap_inuse_bytes also counts garbage not yet collected
// (up to twice as much with GOGC=100).
var liveHeap = collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}

// NewRegistry is the registry of every role: its Go runtime (with the
// live heap) and process metrics; the role adds its own.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(liveHeap)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
