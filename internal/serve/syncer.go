// Package serve keeps the SkyDNS records in etcd equal to what the
// EndpointSlices in one namespace of a workload cluster describe. It is the
// `xcc-syncer serve` role: it holds no credentials to any other cluster, and
// when the management cluster is gone the records it last wrote stay in
// etcd and go on being served.
package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// Defaults of the syncer.
const (
	// DefaultReconcilePeriod is how often the whole set of records is read
	// back from etcd and repaired. Changes of slices do not wait for it:
	// they are written as they arrive.
	DefaultReconcilePeriod = 5 * time.Minute
	// DefaultWorkers is the number of keys synced in parallel.
	DefaultWorkers = 2
	// informerResync is zero: the informer's cache is the truth and the
	// periodic reconcile covers etcd drift.
	informerResync = 0
)

// Syncer turns the EndpointSlices of one namespace into records.
type Syncer struct {
	zone string
	// clusterSetZone is the zone of the clusterset slices' records
	// (--clusterset-zone), canonical; empty: such slices publish nothing.
	clusterSetZone string
	// grants are the operator's name grants (--name-grants): a KindName
	// slice may publish a name granted to its namespace.
	grants          contract.Grants
	namespace       string
	indexer         cache.Indexer
	store           *store.Store
	lister          discoverylisters.EndpointSliceLister
	synced          cache.InformerSynced
	queue           *watch.Queue
	metrics         *Metrics
	reconcilePeriod time.Duration
	workers         int
	budget          *budget

	// reconcileMu keeps slice syncs (readers) out of a full reconcile
	// (writer). The reconcile deletes every owned record its snapshot of
	// the slices does not account for; a slice that arrives after the
	// snapshot and is synced before the reconcile writes would otherwise
	// lose its records until the next reconcile.
	reconcileMu sync.RWMutex
	// afterList, when set, runs between a reconcile's snapshot and its
	// write (tests only).
	afterList func()

	// reverse are the CIDRs whose addresses get PTR records (reverse.go);
	// reverseMu serialises their syncs.
	reverse   cidr.List
	reverseMu sync.Mutex

	// nameMu serialises name-record syncs (names.go) for the same reason:
	// two slices leaving one name at once must not let the first write
	// the record it computed before the second's leaves were gone. It
	// covers a sync's own records too (syncWithNames): they go in the
	// same etcd transaction as its name records.
	nameMu sync.Mutex
	// beforeNameWrite, when set, runs between a name-record sync's read
	// and its write (tests only).
	beforeNameWrite func()

	// seen says what each slice key stood for when last synced, so that
	// the sync of a deleted slice knows which multi-cluster names to
	// recompute (multi.go).
	seenMu sync.Mutex
	seen   map[string]seenSlice

	// read is, by slice key, the slice as last parsed (parse).
	readMu sync.Mutex
	read   map[string]readSlice

	ready atomic.Bool
}

// seenSlice is what a slice key stood for: the multi-cluster name it
// publishes, or the namespace whose self marker it is.
type seenSlice struct {
	multiName     string
	selfNamespace string
}

// Config configures a Syncer.
type Config struct {
	Client          kubernetes.Interface
	Namespace       string
	Domain          string
	Store           *store.Store
	Metrics         *Metrics
	ReconcilePeriod time.Duration
	Workers         int
	// MaxRecords bounds the records of all slices together; 0: DefaultMaxRecords.
	MaxRecords int
	// ReverseCIDRs are the ranges whose addresses get PTR records; the
	// Store must own their reverse zones (store.WithNames).
	ReverseCIDRs cidr.List
	// NameGrants are the operator's grants of names to namespaces,
	// checked again here: the controller's check is not trusted.
	NameGrants contract.Grants
	// ClusterSetZone is the zone of the MCS DNS specification; empty:
	// none. The Store must own it (store.WithNames), and it must not
	// overlap Domain (contract.CheckClusterSetZone).
	ClusterSetZone string
}

// New wires a Syncer to an informer on the EndpointSlices of cfg.Namespace.
// The informer starts in Run.
func New(cfg Config) (*Syncer, informers.SharedInformerFactory) {
	if cfg.ReconcilePeriod == 0 {
		cfg.ReconcilePeriod = DefaultReconcilePeriod
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxRecords == 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, informerResync, informers.WithNamespace(cfg.Namespace))
	inf := factory.Discovery().V1().EndpointSlices()
	if err := inf.Informer().AddIndexers(indexers); err != nil {
		panic(fmt.Sprintf("EndpointSlice indexers: %v", err)) // only before the informer starts
	}
	s := &Syncer{
		zone:            skydnsrecord.CanonicalName(cfg.Domain),
		clusterSetZone:  canonicalOrEmpty(cfg.ClusterSetZone),
		grants:          cfg.NameGrants,
		namespace:       cfg.Namespace,
		indexer:         inf.Informer().GetIndexer(),
		seen:            map[string]seenSlice{},
		read:            map[string]readSlice{},
		store:           cfg.Store,
		lister:          inf.Lister(),
		synced:          inf.Informer().HasSynced,
		metrics:         cfg.Metrics,
		reconcilePeriod: cfg.ReconcilePeriod,
		workers:         cfg.Workers,
		budget:          newBudget(cfg.MaxRecords),
		reverse:         cfg.ReverseCIDRs,
	}
	s.queue = watch.New(watch.Config{
		Name: "endpointslices",
		Sync: s.syncHandler,
		Failed: func(ctx context.Context, key string, err error, _ int) {
			s.metrics.SyncErrors.Inc()
			utilruntime.HandleErrorWithContext(ctx, err, "Sync failed; requeued", "key", key)
		},
	})
	_, _ = inf.Informer().AddEventHandler(s.queue.Handler())
	return s, factory
}

// Ready reports whether the first full reconcile has completed.
func (s *Syncer) Ready() bool { return s.ready.Load() }

// Run waits for the informer cache, reconciles every record once, then
// syncs each slice as it changes and reconciles everything again every
// reconcile period, until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer s.queue.ShutDown()
	logger := klog.FromContext(ctx)

	logger.Info("Waiting for the EndpointSlice cache")
	if !cache.WaitForCacheSync(ctx.Done(), s.synced) {
		if ctx.Err() != nil {
			return nil // stopped before the API server answered
		}
		return errors.New("EndpointSlice cache did not sync")
	}
	// The first reconcile must land before the syncer is ready; retry it
	// with back-off, for as long as it takes, while etcd or the data
	// misbehave: exiting would also stop serving the records on disk.
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: 30 * time.Second}, func(ctx context.Context) (bool, error) {
		if err := s.reconcileAll(ctx); err != nil {
			logger.Error(err, "First reconcile failed; retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("first reconcile: %w", err)
	}
	s.ready.Store(true)
	logger.Info("Serving records", "records", s.store.Len())

	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := s.reconcileAll(ctx); err != nil {
			logger.Error(err, "Periodic reconcile failed")
		}
	}, s.reconcilePeriod)
	s.queue.Run(ctx, s.workers)
	return nil
}

// syncHandler makes the records of one slice equal to what it describes.
// A slice that is gone (NotFound) gets its records deleted.
func (s *Syncer) syncHandler(ctx context.Context, key string) error {
	if name, ok := strings.CutPrefix(key, nameKeyPrefix); ok {
		return s.syncName(ctx, name)
	}
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	s.reconcileMu.RLock()
	defer s.reconcileMu.RUnlock()
	owner := Owner(namespace, name)
	// The names whose records change: the ones the slice had and has.
	dirs := map[string]bool{}
	had := s.store.OwnedBy(owner)
	for k := range had {
		dirs[skydnsrecord.ParentKey(k)] = true
	}
	var desired skydnsrecord.Set
	slice, err := s.lister.EndpointSlices(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		s.forget(key)
		s.noteSlice(key, nil, "")
	case err != nil:
		return fmt.Errorf("get EndpointSlice %s: %w", key, err)
	default:
		var multiName string
		desired, multiName = s.sliceRecords(ctx, slice)
		s.noteSlice(key, slice, multiName)
	}
	if !s.budget.admit(owner, len(desired)) {
		s.refuseOverBudget(ctx, slice, len(desired))
		desired = nil
	}
	for k := range desired {
		dirs[skydnsrecord.ParentKey(k)] = true
	}
	res, err := s.syncWithNames(ctx, owner, desired, dirs)
	if err != nil {
		return fmt.Errorf("sync records of %s: %w", key, err)
	}
	s.observe(ctx, res, "slice", key)
	// The addresses whose claims change: the ones the slice had and has.
	addrs := map[netip.Addr]bool{}
	s.reverseAddrs(addrs, had)
	s.reverseAddrs(addrs, desired)
	return s.syncReverse(ctx, addrs)
}

// reconcileAll rebuilds the desired records of every slice in the cache and
// makes etcd equal to them.
func (s *Syncer) reconcileAll(ctx context.Context) error {
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	start := time.Now()
	slices, err := s.lister.List(everything)
	if err != nil {
		return fmt.Errorf("list EndpointSlices: %w", err)
	}
	// Oldest first: when the records do not all fit, the slices served
	// longest keep their place.
	sort.Slice(slices, func(i, j int) bool {
		a, b := slices[i], slices[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	s.budget.reset()
	desired := skydnsrecord.Set{}
	multi := map[string]bool{}
	for _, slice := range slices {
		records, multiName := s.sliceRecords(ctx, slice)
		if now := s.remember(sliceKey(slice), slice, multiName); now.multiName != "" {
			multi[now.multiName] = true
		}
		if !s.budget.admit(Owner(slice.Namespace, slice.Name), len(records)) {
			s.refuseOverBudget(ctx, slice, len(records))
			continue
		}
		for k, r := range records {
			desired[k] = r
		}
	}
	for _, name := range sortedKeys(multi) {
		records, err := s.multiRecords(ctx, name)
		if err != nil {
			return err
		}
		if !s.budget.admit(MultiOwner(name), len(records)) {
			s.metrics.RefusedSlices.Inc()
			klog.FromContext(ctx).Error(nil, "Refused a multi-cluster name: its records would exceed the records all slices may publish",
				"name", name, "records", len(records), "maxRecords", s.budget.max)
			continue
		}
		for k, r := range records {
			desired[k] = r
		}
	}
	for k, r := range s.versionRecords() {
		desired[k] = r
	}
	if s.afterList != nil {
		s.afterList()
	}
	res, err := s.store.Reconcile(ctx, WithReverseRecords(WithNameRecords(desired), s.reverse))
	s.metrics.ReconcileDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		s.metrics.SyncErrors.Inc()
		return fmt.Errorf("reconcile %d records: %w", len(desired), err)
	}
	s.observe(ctx, res, "reconcile", "all")
	s.metrics.LastReconcile.SetToCurrentTime()
	return nil
}

// sliceRecords computes a slice's records and reports, without failing the
// sync, every part of it that was refused.
func (s *Syncer) sliceRecords(ctx context.Context, slice *discoveryv1.EndpointSlice) (skydnsrecord.Set, string) {
	p, ok, problems := s.parse(slice)
	var records skydnsrecord.Set
	var multiName string
	if ok {
		records, multiName = parsedRecords(p, Owner(slice.Namespace, slice.Name))
	}
	for _, problem := range problems {
		s.metrics.RefusedInputs.Inc()
		klog.FromContext(ctx).Error(problem, "Refused part of an EndpointSlice", "slice", klog.KObj(slice))
	}
	return records, multiName
}

// refuseOverBudget reports a slice whose records do not fit in the budget.
func (s *Syncer) refuseOverBudget(ctx context.Context, slice *discoveryv1.EndpointSlice, n int) {
	s.metrics.RefusedSlices.Inc()
	klog.FromContext(ctx).Error(nil, "Refused an EndpointSlice: its records would exceed the records all slices may publish",
		"slice", klog.KObj(slice), "records", n, "maxRecords", s.budget.max)
}

func (s *Syncer) observe(ctx context.Context, res store.Result, what, key string) {
	if len(res.Skipped) > 0 {
		s.metrics.HandRecordsKept.Add(float64(len(res.Skipped)))
		klog.FromContext(ctx).Info("Left records not written by the syncer as they are", what, key, "keys", res.Skipped)
	}
	s.metrics.Records.Set(float64(s.store.Len()))
	if res.Puts+res.Deletes > 0 {
		s.metrics.Writes.Add(float64(res.Puts + res.Deletes))
		klog.FromContext(ctx).V(2).Info("Wrote records", what, key, "puts", res.Puts, "deletes", res.Deletes, "revision", res.Revision)
	}
}
