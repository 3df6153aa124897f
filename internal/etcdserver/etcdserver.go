// Package etcdserver runs the etcd that holds the SkyDNS records, embedded
// in the syncer process.
//
// The client URL binds 127.0.0.1 by default: only the containers of the
// syncer's own pod (the syncer and CoreDNS) can reach it, so nothing else
// can write records. The data directory sits on a volume, so a restarted
// syncer serves the last records it had even when the management cluster
// is gone.
package etcdserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// Defaults for Config.
const (
	DefaultName         = "xcc-dns"
	DefaultClientURL    = "http://127.0.0.1:2379"
	DefaultPeerURL      = "http://127.0.0.1:2380"
	DefaultQuotaBytes   = 256 << 20 // records are small: 10,000 take a few MB
	DefaultStartTimeout = 60 * time.Second
	DefaultLogLevel     = "warn"
	compactionMode      = "periodic"
	// compactionRetention keeps five minutes of history: the records are a
	// copy of the EndpointSlices, so older revisions serve nobody, and an
	// hour of them can fill the quota (docs/reliability.md).
	compactionRetention  = "5m"
	initialClusterStateN = "new"
)

// Config says where and how the embedded etcd runs.
type Config struct {
	Name      string // member name
	DataDir   string // required
	ClientURL string
	PeerURL   string
	// InitialCluster lists every member as name=peerURL,... when several
	// syncer replicas form one etcd cluster; empty for a single member.
	InitialCluster string
	QuotaBytes     int64
	StartTimeout   time.Duration
	LogLevel       string
}

func (c *Config) withDefaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.ClientURL == "" {
		c.ClientURL = DefaultClientURL
	}
	if c.PeerURL == "" {
		c.PeerURL = DefaultPeerURL
	}
	if c.QuotaBytes == 0 {
		c.QuotaBytes = DefaultQuotaBytes
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
}

// Server is a running embedded etcd.
type Server struct {
	etcd  *embed.Etcd
	close sync.Once
}

// Start starts etcd and returns once it is ready to serve, it failed, ctx
// ended or the start timeout passed; in the failure cases the half-started
// server is stopped and closed.
//
// A single member whose data directory cannot be read back (a corrupt
// database, a torn write-ahead log) is not left in a crash loop: its
// member directory is moved aside, one line says so, and etcd starts
// empty. The records are a copy of the EndpointSlices, so the syncer's
// first reconcile writes them all again. Members of a cluster of several
// are never reset this way: their data is shared state.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.withDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("etcd: no data directory")
	}
	ec, err := embedConfig(cfg)
	if err != nil {
		return nil, err
	}
	single := cfg.InitialCluster == ""
	rebuild := func(why error) error {
		aside, err := setAside(cfg.DataDir)
		if err != nil {
			return fmt.Errorf("etcd data in %q is unreadable (%w), and: %w", cfg.DataDir, why, err)
		}
		klog.FromContext(ctx).Error(why, "etcd data directory is unreadable; moved it aside and starting empty, records are rebuilt from the EndpointSlices",
			"dataDir", cfg.DataDir, "movedTo", aside)
		return nil
	}
	if err := checkBackend(cfg.DataDir); err != nil && single {
		if err := rebuild(err); err != nil {
			return nil, err
		}
	}
	srv, err := start(ctx, ec, cfg)
	if err != nil && single && isDataError(err) {
		if err := rebuild(err); err != nil {
			return nil, err
		}
		srv, err = start(ctx, ec, cfg)
	}
	return srv, err
}

func start(ctx context.Context, ec *embed.Config, cfg Config) (*Server, error) {
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start etcd in %q: %w", cfg.DataDir, err)
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return &Server{etcd: e}, nil
	case err := <-e.Err():
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("etcd in %q: %w", cfg.DataDir, err)
	case <-timer.C:
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("etcd in %q: not ready after %s", cfg.DataDir, cfg.StartTimeout)
	case <-ctx.Done():
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("etcd in %q: %w", cfg.DataDir, ctx.Err())
	}
}

func embedConfig(cfg Config) (*embed.Config, error) {
	client, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd client URL %q: %w", cfg.ClientURL, err)
	}
	peer, err := url.Parse(cfg.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd peer URL %q: %w", cfg.PeerURL, err)
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls = []url.URL{*client}
	ec.AdvertiseClientUrls = []url.URL{*client}
	ec.ListenPeerUrls = []url.URL{*peer}
	ec.AdvertisePeerUrls = []url.URL{*peer}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = cfg.Name + "=" + cfg.PeerURL
	}
	ec.ClusterState = initialClusterStateN
	ec.AutoCompactionMode = compactionMode
	ec.AutoCompactionRetention = compactionRetention
	ec.QuotaBackendBytes = cfg.QuotaBytes
	ec.LogLevel = cfg.LogLevel
	ec.LogOutputs = []string{"stderr"}
	return ec, nil
}

// Endpoints returns the client URLs etcd listens on, with the real port
// where the configured one was 0.
func (s *Server) Endpoints() []string {
	var out []string
	for _, l := range s.etcd.Clients {
		out = append(out, "http://"+l.Addr().String())
	}
	return out
}

// Err reports a fatal error of the running server.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops etcd, letting in-flight requests finish. Closing twice is
// harmless (a test may stop etcd before its cleanup does).
func (s *Server) Close() { s.close.Do(s.etcd.Close) }

// SplitEndpoints parses a comma-separated --etcd-endpoints value.
func SplitEndpoints(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
