package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/etcdserver"
	"github.com/xcc-dns/xcc-dns/internal/httpserver"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
)

// Defaults of the serve role.
const (
	DefaultNamespace   = "xcc-dns"
	DefaultHTTPAddress = ":8080"
	etcdDialTimeout    = 5 * time.Second
	etcdProbeTimeout   = 2 * time.Second
	// spaceCheckPeriod is how often the embedded etcd's size and NOSPACE
	// alarm are looked at; while the alarm stands no record can be written.
	spaceCheckPeriod = 10 * time.Second
)

// Options are the settings of `xcc-syncer serve`.
type Options struct {
	Kubeconfig  string               // empty: in-cluster config
	Client      kubernetes.Interface // set: used instead of Kubeconfig
	Namespace   string
	Domain      string
	HTTPAddress string
	// EtcdEndpoints are the comma-separated client URLs of an existing
	// etcd; set, none is started.
	EtcdEndpoints   string
	Etcd            etcdserver.Config
	ReconcilePeriod time.Duration
	// MaxRecords bounds the records all slices together may publish.
	MaxRecords int
	// ReverseCIDRs are the ranges whose addresses get PTR records.
	ReverseCIDRs cidr.List
	// NameGrants is --name-grants, "<ns>=<suffix>[;...]": names granted to
	// namespaces besides <label>.<ns>.names.<zone> (contract.ParseGrants).
	NameGrants string
	// ClusterSetZone is --clusterset-zone: the zone of the MCS DNS
	// specification, where the clusterset slices' records go; empty: none.
	ClusterSetZone string
	// ClusterSetServer is --clusterset-server: corefile.ClusterSetServe
	// (or empty), this server answers ClusterSetZone; ClusterSetCoreDNS,
	// the cluster DNS's kubernetes plugin does, and this server only keeps
	// that plugin's lines in the Corefile (with ClusterDNSConfigMap).
	ClusterSetServer string
	// ShutdownDelay is how long serve goes on (etcd answering, /readyz
	// saying "shutting down") after it is told to stop, so that a CoreDNS
	// draining beside it still reads records.
	ShutdownDelay time.Duration
	// ClusterDNSConfigMap (namespace/name) and ClusterDNSService
	// (namespace/name), both set: keep the zone's forward block in that
	// Corefile while the Service exists, and take it out when the Service
	// is deleted (corefile.Keep), every ClusterDNSPeriod.
	ClusterDNSConfigMap, ClusterDNSService string
	ClusterDNSPeriod                       time.Duration
	// AnswerDNSAddress (host:port) is the CoreDNS of serve's own pod and
	// AnswerClusterDNSService (namespace/name) the cluster DNS Service:
	// the two servers /answer asks; empty: that one is not asked.
	AnswerDNSAddress, AnswerClusterDNSService string
	// HTTPReady, if set, is told the address the HTTP server bound (for
	// HTTPAddress with port 0).
	HTTPReady func(net.Addr)
}

// Run runs the serve role until ctx ends: etcd (embedded, or the one
// given), the syncer that fills it from the EndpointSlices, the HTTP
// server that says when the records can be served, and the keepers
// beside them.
func Run(ctx context.Context, o Options) error {
	grants, err := contract.ParseGrants(o.NameGrants, o.Domain)
	if err != nil {
		return fmt.Errorf("--name-grants: %w", err)
	}
	if err := contract.CheckClusterSetZone(o.Domain, o.ClusterSetZone); err != nil {
		return fmt.Errorf("--clusterset-zone: %w", err)
	}
	if err := corefile.CheckClusterSetServer(o.ClusterSetServer); err != nil {
		return fmt.Errorf("--clusterset-server: %w", err)
	}
	ctx, stopping := delayStop(ctx, o.ShutdownDelay)
	kube := o.Client
	if kube == nil {
		if kube, err = kubeClient(o.Kubeconfig); err != nil {
			return err
		}
	}
	db, err := openEtcd(ctx, o)
	if err != nil {
		return err
	}
	defer db.close()

	reg := httpserver.NewRegistry()
	syncer, factory := New(Config{
		Client:          kube,
		Namespace:       o.Namespace,
		Domain:          o.Domain,
		Store:           store.New(db.cli, o.Domain).WithNames(ownedZones(o)...),
		Metrics:         NewMetrics(reg),
		ReconcilePeriod: o.ReconcilePeriod,
		MaxRecords:      o.MaxRecords,
		ReverseCIDRs:    o.ReverseCIDRs,
		NameGrants:      grants,
		ClusterSetZone:  o.ServedClusterSetZone(),
	})

	// Records on disk from an earlier run are worth answering before this
	// cluster's API server is reachable again: a replica restarted during
	// an API server outage serves what it had instead of nothing.
	onDisk, err := recordsOnDisk(ctx, db.cli, o.Domain)
	if err != nil {
		return err
	}
	if onDisk > 0 {
		klog.FromContext(ctx).Info("Serving the records on disk until the EndpointSlices are synced", "keys", onDisk)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answer, err := newAnswerHandler(kube, o)
	if err != nil {
		return err
	}
	httpSrv, err := httpserver.Start(ctx, httpserver.Config{Address: o.HTTPAddress, Gatherer: reg,
		Ready: readiness(db.cli, syncer, onDisk, stopping), Bound: o.HTTPReady,
		Handlers: map[string]http.Handler{AnswerPath: answer}})
	if err != nil {
		return err
	}
	defer httpSrv.Close()
	if err := startKeepers(ctx, kube, o, db, stopping); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	done := make(chan error, 1)
	go func() { done <- syncer.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case err := <-db.embeddedErr:
		return fmt.Errorf("embedded etcd: %w", err)
	}
}

// etcdConn is the etcd serve writes its records to: one it embeds, or
// an existing one (--etcd-endpoints).
type etcdConn struct {
	cli       *clientv3.Client
	endpoints []string
	// embedded is the embedded server, nil for an existing etcd;
	// embeddedErr carries its failure (nil channel: never).
	embedded    *etcdserver.Server
	embeddedErr <-chan error
}

// openEtcd starts the embedded etcd unless o names an existing one, and
// connects a client to it.
func openEtcd(ctx context.Context, o Options) (*etcdConn, error) {
	logger := klog.FromContext(ctx)
	db := &etcdConn{endpoints: etcdserver.SplitEndpoints(o.EtcdEndpoints)}
	if len(db.endpoints) == 0 {
		logger.Info("Starting embedded etcd", "dataDir", o.Etcd.DataDir, "clientURL", o.Etcd.ClientURL)
		srv, err := etcdserver.Start(ctx, o.Etcd)
		if err != nil {
			return nil, err
		}
		db.embedded, db.endpoints, db.embeddedErr = srv, srv.Endpoints(), srv.Err()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: db.endpoints, DialTimeout: etcdDialTimeout, Context: ctx})
	if err != nil {
		db.close()
		return nil, fmt.Errorf("etcd client for %v: %w", db.endpoints, err)
	}
	db.cli = cli
	logger.Info("Using etcd", "endpoints", db.endpoints, "reverseCIDRs", o.ReverseCIDRs.String())
	return db, nil
}

// close closes the client, then stops the embedded server, if any.
func (db *etcdConn) close() {
	if db.cli != nil {
		_ = db.cli.Close()
	}
	if db.embedded != nil {
		db.embedded.Close()
	}
}

// readiness is /readyz: etcd answers, and the first reconcile is done or
// there are records on disk to serve meanwhile; never while stopping.
func readiness(cli *clientv3.Client, syncer *Syncer, onDisk int64, stopping <-chan struct{}) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		select {
		case <-stopping:
			return "", errors.New("shutting down")
		default:
		}
		pctx, cancel := context.WithTimeout(r.Context(), etcdProbeTimeout)
		defer cancel()
		if _, err := cli.Get(pctx, "health", clientv3.WithCountOnly()); err != nil {
			return "", fmt.Errorf("etcd: %w", err)
		}
		switch {
		case syncer.Ready():
			return "ok", nil
		case onDisk > 0:
			return fmt.Sprintf("ok: serving %d keys from disk; EndpointSlices not synced yet (API server unreachable or slow)", onDisk), nil
		}
		return "", errors.New("first reconcile not done and no records on disk")
	}
}

// startKeepers starts what runs beside the syncer until ctx ends: the
// embedded etcd's space keeper, and the keeper of the zone's block in the
// cluster DNS's Corefile when o asks for it.
func startKeepers(ctx context.Context, kube kubernetes.Interface, o Options, db *etcdConn, stopping <-chan struct{}) error {
	if db.embedded != nil {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { keepSpace(ctx, db.cli, db.endpoints[0], o.Etcd.QuotaBytes) }, spaceCheckPeriod)
	}
	if o.ClusterDNSConfigMap != "" && o.ClusterDNSService != "" {
		k, err := newClusterDNSKeeper(kube, o)
		if err != nil {
			return err
		}
		go k.run(ctx, stopping)
	}
	return nil
}

// delayStop returns a context that ends delay after ctx does, and a
// channel closed as soon as ctx ends.
func delayStop(ctx context.Context, delay time.Duration) (context.Context, <-chan struct{}) {
	stopping := make(chan struct{})
	delayed, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		<-ctx.Done()
		close(stopping)
		if delay > 0 {
			klog.FromContext(ctx).Info("Told to stop: serving on for the shutdown delay", "delay", delay)
			time.Sleep(delay)
		}
		cancel()
	}()
	return delayed, stopping
}

// recordsOnDisk counts the keys under the zone that etcd holds before the
// first reconcile.
func recordsOnDisk(ctx context.Context, cli *clientv3.Client, zone string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, skydnsrecord.Key(zone)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("etcd count of the records on disk: %w", err)
	}
	return resp.Count, nil
}

// keepSpace keeps the embedded etcd writable: it trims history once the
// database passes half its quota (auto-compaction keeps minutes of it,
// which a burst of full rewrites can fill), and clears a NOSPACE alarm
// that came anyway.
func keepSpace(ctx context.Context, cli *clientv3.Client, endpoint string, quota int64) {
	logger := klog.FromContext(ctx)
	had, err := etcdserver.RecoverSpace(ctx, cli, endpoint)
	switch {
	case err != nil:
		logger.Error(err, "Clearing etcd's NOSPACE alarm failed; records cannot be written until it is cleared")
		return
	case had:
		logger.Info("Cleared etcd's NOSPACE alarm: compacted, defragmented and disarmed")
		return
	}
	trimmed, err := etcdserver.TrimSpace(ctx, cli, endpoint, quota)
	switch {
	case err != nil:
		logger.Error(err, "Trimming etcd's history failed")
	case trimmed:
		logger.V(1).Info("Trimmed etcd's history: the database had passed half its quota", "quotaBytes", quota)
	}
}

// ownedZones are the zones the store owns beside o.Domain: the reverse
// zones and the clusterset zone.
func ownedZones(o Options) []string {
	zones := reverseZones(o.ReverseCIDRs)
	// The clusterset zone even when the cluster DNS answers it: the
	// records this server wrote there before a switch are then deleted.
	if o.ClusterSetZone != "" {
		zones = append(zones, o.ClusterSetZone)
	}
	return zones
}

// reverseZones names the reverse zones that hold the addresses of cidrs.
func reverseZones(cidrs cidr.List) []string {
	zones := make([]string, len(cidrs))
	for i, p := range cidrs {
		zones[i] = cidr.ReverseZone(p)
	}
	return zones
}

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := kubeclient.Config(kubeconfig, "xcc-syncer-serve")
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}

// ServedClusterSetZone is the clusterset zone this server answers: none
// when the cluster DNS's kubernetes plugin answers it
// (corefile.ClusterSetCoreDNS).
func (o Options) ServedClusterSetZone() string {
	if o.ClusterSetServer == corefile.ClusterSetCoreDNS {
		return ""
	}
	return o.ClusterSetZone
}
