// Package controller is the management-cluster role of xcc-dns: it turns
// GatewayDNS objects, Cluster API Clusters and the gateway Services of the
// workload clusters into EndpointSlices in the xcc-dns namespace of every
// opted-in workload cluster, where `xcc-syncer serve` turns them into DNS
// records.
//
// Shape: informers enqueue GatewayDNS keys into one rate-limited work queue;
// sync gathers what the informers know (clusterInput), computes the desired
// slices with a pure function (computeDesired), diffs them per target
// cluster (computePlan) and applies the plan, then writes status.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// Defaults of the controller role.
const (
	DefaultSliceNamespace = "xcc-dns"
	DefaultDomain         = "xcc.test"
	DefaultHTTPAddress    = ":8080"
	// DefaultResync re-runs every sync this often, which repairs slices
	// someone deleted or edited in a workload cluster.
	DefaultResync = 5 * time.Minute
	// DefaultWorkers syncs this many GatewayDNS at once.
	DefaultWorkers = 2
	// Finalizer keeps a GatewayDNS until its slices are gone everywhere.
	Finalizer = "connectivity.tanzu.vmware.com/xcc-dns-endpointslices"
	// controllerName is the event source and the work queue name.
	controllerName = "xcc-dns-controller"
)

// Config wires the controller to its clients.
type Config struct {
	// Kube is the management cluster (Secrets, Events).
	Kube kubernetes.Interface
	// Dynamic is the management cluster (GatewayDNS, Cluster).
	Dynamic dynamic.Interface
	// ClusterResource is the served version of cluster.x-k8s.io clusters.
	ClusterResource schema.GroupVersionResource
	// NewClient builds workload cluster clients (NewClientFromKubeconfig in production).
	NewClient      ClientFactory
	SliceNamespace string
	Domain         string
	Resync         time.Duration
	Workers        int
	Metrics        *Metrics
	// Recorder records Events on GatewayDNS objects; nil: none.
	Recorder record.EventRecorder
	// AllowedCIDRs are the ranges gateway and control-plane addresses must
	// lie in; empty allows any.
	AllowedCIDRs cidr.List
}

// Controller keeps the EndpointSlices of every GatewayDNS in step.
type Controller struct {
	cfg       Config
	queue     *watch.Queue
	dynInf    dynamicinformer.DynamicSharedInformerFactory
	kubeInf   informers.SharedInformerFactory
	gdns      cache.SharedIndexInformer
	clusters  cache.SharedIndexInformer
	secrets   corelisters.SecretLister
	synced    []cache.InformerSynced
	workloads *workloads

	publishedMu sync.Mutex
	// published remembers, per GatewayDNS key, what was written to each
	// target cluster (apply.go).
	published map[string]*published

	// claims are the addresses each GatewayDNS's clusters publish
	// (claims.go), to find one address claimed by two clusters.
	claims *addressClaims

	pendingMu sync.Mutex
	// pending holds, per GatewayDNS key, the time of the oldest gateway
	// Service event not yet written out (for ServiceToSlices).
	pending map[string]time.Time
}

// New builds the controller and registers its informers; Run starts them.
func New(cfg Config) *Controller {
	if cfg.Resync == 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Recorder == nil {
		cfg.Recorder = &record.FakeRecorder{}
	}
	c := &Controller{
		cfg:       cfg,
		dynInf:    dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, cfg.Resync),
		kubeInf:   informers.NewSharedInformerFactory(cfg.Kube, 0),
		pending:   map[string]time.Time{},
		published: map[string]*published{},
		claims:    newAddressClaims(),
	}
	c.queue = watch.New(watch.Config{Name: controllerName, Sync: c.syncKey, Failed: c.syncFailed})
	c.gdns = c.dynInf.ForResource(v1alpha1.GatewayDNSResource).Informer()
	c.clusters = c.dynInf.ForResource(cfg.ClusterResource).Informer()
	secretInf := c.kubeInf.Core().V1().Secrets()
	_ = secretInf.Informer().SetTransform(secretForCache)
	c.secrets = secretInf.Lister()
	c.synced = []cache.InformerSynced{c.gdns.HasSynced, c.clusters.HasSynced, secretInf.Informer().HasSynced}

	_, _ = c.gdns.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueNamespaceOf(obj) },
		UpdateFunc: func(old, cur any) {
			o, n := watch.Meta(old), watch.Meta(cur)
			if o == nil || n == nil || o.GetGeneration() != n.GetGeneration() || o.GetDeletionTimestamp() != n.GetDeletionTimestamp() {
				c.enqueueNamespaceOf(cur)
				return
			}
			c.queue.Enqueue(cur)
		},
		DeleteFunc: func(obj any) { c.enqueueNamespaceOf(obj) },
	})
	onClusterish := watch.OnEvent(c.enqueueNamespaceOf)
	_, _ = c.clusters.AddEventHandler(onClusterish)
	_, _ = secretInf.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			m := watch.Meta(obj)
			return m != nil && strings.HasSuffix(m.GetName(), kubeconfigSecretSuffix)
		},
		Handler: onClusterish,
	})
	c.workloads = &workloads{
		newClient:      cfg.NewClient,
		sliceNamespace: cfg.SliceNamespace,
		onNamespace:    c.enqueueAllIn,
		onService:      c.serviceChanged,
		clusters:       map[string]*workload{},
		gauge:          func(n int) { cfg.Metrics.ClustersWatched.Set(float64(n)) },
	}
	return c
}

// secretForCache is the transform of the Secret informer: of every Secret
// it keeps only what the controller reads, and of a <cluster>-kubeconfig
// Secret also its key `value`. Everything else, such as other keys,
// labels, managedFields and the annotation
// kubectl.kubernetes.io/last-applied-configuration (the whole data of a
// Secret made with kubectl apply), is dropped before it is cached, so the
// cache stays small and holds no credentials the controller does not use.
// Idempotent, as client-go asks of a transform.
func secretForCache(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name:              s.Name,
		Namespace:         s.Namespace,
		UID:               s.UID,
		ResourceVersion:   s.ResourceVersion,
		DeletionTimestamp: s.DeletionTimestamp,
	}}
	if value, ok := s.Data[KubeconfigSecretKey]; ok && strings.HasSuffix(s.Name, kubeconfigSecretSuffix) {
		kept.Data = map[string][]byte{KubeconfigSecretKey: value}
	}
	return kept, nil
}

// enqueueNamespaceOf enqueues the object itself when it is a GatewayDNS
// (even a deleted one, so its slices go) and every GatewayDNS of its
// namespace: Clusters, Secrets and other GatewayDNS change their result.
func (c *Controller) enqueueNamespaceOf(obj any) {
	m := watch.Meta(obj)
	if m == nil {
		utilruntime.HandleError(fmt.Errorf("informer delivered %T", obj))
		return
	}
	if u, ok := watch.Unwrap(obj).(*unstructured.Unstructured); ok && u.GroupVersionKind().GroupKind() == v1alpha1.GatewayDNSKind.GroupKind() {
		c.queue.Enqueue(obj)
	}
	c.enqueueAllIn(m.GetNamespace())
}

func (c *Controller) enqueueAllIn(namespace string) {
	objs, err := c.gdns.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("list GatewayDNS in %q: %w", namespace, err))
		return
	}
	for _, o := range objs {
		c.queue.Enqueue(o)
	}
}

// serviceChanged notes when a gateway Service changed, for the propagation
// metric, and enqueues the GatewayDNS that watch it.
func (c *Controller) serviceChanged(users []string) {
	now := time.Now()
	c.pendingMu.Lock()
	for _, u := range users {
		if _, ok := c.pending[u]; !ok {
			c.pending[u] = now
		}
	}
	c.pendingMu.Unlock()
	for _, u := range users {
		c.queue.Add(u)
	}
}

// Run starts the informers, waits for their caches, and runs workers until
// ctx ends. ready is closed once the caches have synced.
func (c *Controller) Run(ctx context.Context, ready chan<- struct{}) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	c.workloads.ctx = ctx

	logger.Info("Starting controller", "clusterResource", c.cfg.ClusterResource.String(),
		"sliceNamespace", c.cfg.SliceNamespace, "domain", c.cfg.Domain, "allowedCIDRs", c.cfg.AllowedCIDRs.String())
	c.dynInf.Start(ctx.Done())
	c.kubeInf.Start(ctx.Done())
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return errors.New("informer caches did not sync")
	}
	logger.Info("Caches synced; starting workers", "count", c.cfg.Workers,
		"gatewayDNS", len(c.gdns.GetStore().ListKeys()), "clusters", len(c.clusters.GetStore().ListKeys()))
	if ready != nil {
		close(ready)
	}
	c.queue.Run(ctx, c.cfg.Workers)
	logger.Info("Workers stopped")
	return nil
}

// syncKey is the queue's sync: it counts the sync and logs under the key.
func (c *Controller) syncKey(ctx context.Context, key string) error {
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.FromContext(ctx), "gatewayDNS", key))
	c.cfg.Metrics.Syncs.Inc()
	return c.syncHandler(ctx, key)
}

// syncFailed reports a failed sync; the queue requeues the key either way.
func (c *Controller) syncFailed(ctx context.Context, key string, err error, retries int) {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "gatewayDNS", key)
	if apierrors.IsConflict(err) {
		// The cache was behind our own last write; retry with the newer object.
		logger.V(2).Info("Conflict writing GatewayDNS; requeued", "err", err.Error())
		return
	}
	c.cfg.Metrics.SyncErrors.Inc()
	logger.Error(err, "Sync failed; requeued", "retries", retries)
}

// syncHandler brings the slices of one GatewayDNS in line. A GatewayDNS
// that is gone (NotFound) or being deleted has its slices removed from
// every cluster of its namespace.
func (c *Controller) syncHandler(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("invalid key %q: %w", key, err))
		return nil
	}
	obj, exists, err := c.gdns.GetIndexer().GetByKey(key)
	if err != nil {
		return fmt.Errorf("get GatewayDNS %s from cache: %w", key, err)
	}
	if !exists {
		logger.V(2).Info("GatewayDNS gone; removing its EndpointSlices")
		return c.cleanup(ctx, namespace, name)
	}
	gd, err := toGatewayDNS(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	if gd.DeletionTimestamp != nil {
		if !hasFinalizer(gd) {
			return nil
		}
		if err := c.cleanup(ctx, namespace, name); err != nil {
			return err
		}
		return c.removeFinalizer(ctx, gd)
	}
	if !hasFinalizer(gd) {
		if err := c.addFinalizer(ctx, gd); err != nil {
			return err
		}
	}

	inputs, err := c.gather(ctx, gd)
	if err != nil {
		return err
	}
	desired := computeDesired(gd, c.cfg.Domain, c.cfg.AllowedCIDRs, inputs.clusters)
	shared, affected := c.claims.set(key, clusterClaims(gd.Namespace, desired, c.claims.get(key)))
	desired.Clusters = markAddressConflicts(desired.Clusters, gd.Namespace, shared)
	for _, other := range affected {
		// Its clusters' address conflicts may have changed with ours.
		c.queue.Add(other)
	}
	writeErrs, written := c.apply(ctx, gd, desired, inputs.targets)
	c.workloads.release(key, inputs.uses)

	status := buildStatus(gd, desired, writeErrs)
	c.recordTransitions(gd, c.publishedFor(key), desired.Clusters)
	if err := c.updateStatus(ctx, gd, status); err != nil {
		return err
	}
	if len(writeErrs) == 0 {
		c.observePropagation(key)
	}
	logger.V(2).Info("Synced", "selected", status.SelectedClusters, "ready", status.ReadyClusters,
		"targets", len(inputs.targets), "written", written, "duration", time.Since(start))
	if len(writeErrs) > 0 {
		return fmt.Errorf("write EndpointSlices of %s: %d target cluster(s) failed", key, len(writeErrs))
	}
	return nil
}

func (c *Controller) observePropagation(key string) {
	c.pendingMu.Lock()
	t, ok := c.pending[key]
	delete(c.pending, key)
	c.pendingMu.Unlock()
	if ok {
		c.cfg.Metrics.ServiceToSlices.Observe(time.Since(t).Seconds())
	}
}

// target is one workload cluster whose slice namespace receives slices.
type target struct {
	name string
	w    *workload
}

type gathered struct {
	clusters []clusterInput
	targets  []target
	// uses maps cluster key -> Service refs watched for this GatewayDNS.
	uses map[string]map[string]bool
}

// gather reads the informers: every Cluster of the namespace, who owns its
// names, its kubeconfig, its gateway Service, and whether it has opted in.
func (c *Controller) gather(ctx context.Context, gd *v1alpha1.GatewayDNS) (gathered, error) {
	logger := klog.FromContext(ctx)
	g := gathered{uses: map[string]map[string]bool{}}
	key := gd.Namespace + "/" + gd.Name
	clusterObjs, err := c.clusters.GetIndexer().ByIndex(cache.NamespaceIndex, gd.Namespace)
	if err != nil {
		return g, fmt.Errorf("list clusters in %q: %w", gd.Namespace, err)
	}
	owners, err := c.owners(gd.Namespace, clusterObjs)
	if err != nil {
		return g, err
	}
	selector, selErr := metav1.LabelSelectorAsSelector(&gd.Spec.ClusterSelector)
	if selErr != nil {
		// The API server validates the selector; if one slips through,
		// select nothing and say so rather than selecting everything.
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, "InvalidSelector", "spec.clusterSelector: %v", selErr)
		selector = labels.Nothing()
	}
	svcNS, svcName, refErr := contract.ParseRef(gd.Spec.Service)

	sort.Slice(clusterObjs, func(i, j int) bool {
		return watch.Meta(clusterObjs[i]).GetName() < watch.Meta(clusterObjs[j]).GetName()
	})
	for _, o := range clusterObjs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		in := clusterInput{Name: u.GetName(), Selected: selector.Matches(labels.Set(u.GetLabels()))}
		in.APIHost, _, _ = unstructured.NestedString(u.Object, "spec", "controlPlaneEndpoint", "host")
		if in.Selected && u.GetDeletionTimestamp() != nil {
			// A Cluster being deleted loses its names now, not when it is gone.
			in.Selected = false
		}
		if owner := owners[in.Name]; owner != "" && owner != key {
			in.OwnedBy = owner
		}
		if contract.ValidateLabel(in.Name) != nil {
			g.clusters = append(g.clusters, in)
			continue
		}
		secret, err := c.secrets.Secrets(gd.Namespace).Get(in.Name + kubeconfigSecretSuffix)
		if err != nil && !apierrors.IsNotFound(err) {
			return g, fmt.Errorf("get kubeconfig Secret of cluster %s/%s: %w", gd.Namespace, in.Name, err)
		}
		acc := c.workloads.get(gd.Namespace, in.Name, secret, key)
		if acc.w == nil {
			in.AccessReason, in.AccessMessage = acc.reason, acc.message
			if in.Selected {
				logger.V(2).Info("No client for workload cluster", "cluster", in.Name, "reason", acc.reason, "message", acc.message)
			}
			g.clusters = append(g.clusters, in)
			continue
		}
		refs := map[string]bool{}
		g.uses[acc.w.key] = refs
		if in.Selected && in.OwnedBy == "" && refErr == nil {
			in.Service, in.ServiceSynced = c.workloads.service(acc.w, svcNS, svcName, key)
			refs[gd.Spec.Service] = true
		}
		g.clusters = append(g.clusters, in)
		if u.GetDeletionTimestamp() == nil {
			g.targets = append(g.targets, target{name: in.Name, w: acc.w})
		}
	}
	return g, nil
}

// owners maps each Cluster of the namespace to the GatewayDNS that may
// publish its names: of those that select it and are not being deleted, the
// oldest by creationTimestamp, then name. The newer ones report Conflict.
func (c *Controller) owners(namespace string, clusterObjs []any) (map[string]string, error) {
	objs, err := c.gdns.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("list GatewayDNS in %q: %w", namespace, err)
	}
	var all []*v1alpha1.GatewayDNS
	for _, o := range objs {
		gd, err := toGatewayDNS(o)
		if err != nil || gd.DeletionTimestamp != nil {
			continue
		}
		all = append(all, gd)
	}
	sort.Slice(all, func(i, j int) bool {
		ti, tj := all[i].CreationTimestamp, all[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return all[i].Name < all[j].Name
	})
	out := map[string]string{}
	for _, o := range clusterObjs {
		m := watch.Meta(o)
		if m == nil {
			continue
		}
		for _, gd := range all {
			sel, err := metav1.LabelSelectorAsSelector(&gd.Spec.ClusterSelector)
			if err == nil && sel.Matches(labels.Set(m.GetLabels())) {
				out[m.GetName()] = gd.Namespace + "/" + gd.Name
				break
			}
		}
	}
	return out, nil
}

// cleanup deletes every slice the GatewayDNS namespace/name wrote, in every
// cluster of its namespace that has a usable kubeconfig, and releases its
// informers. Clusters without a kubeconfig cannot be reached and are skipped.
func (c *Controller) cleanup(ctx context.Context, namespace, name string) error {
	key := namespace + "/" + name
	defer c.workloads.release(key, nil)
	c.pendingMu.Lock()
	delete(c.pending, key)
	c.pendingMu.Unlock()
	c.forget(key)
	_, affected := c.claims.set(key, nil)
	for _, other := range affected {
		c.queue.Add(other)
	}
	clusterObjs, err := c.clusters.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return fmt.Errorf("list clusters in %q: %w", namespace, err)
	}
	var errs []error
	for _, o := range clusterObjs {
		m := watch.Meta(o)
		if m == nil || contract.ValidateLabel(m.GetName()) != nil {
			continue
		}
		secret, err := c.secrets.Secrets(namespace).Get(m.GetName() + kubeconfigSecretSuffix)
		if err != nil {
			continue
		}
		acc := c.workloads.get(namespace, m.GetName(), secret, key)
		if acc.w == nil {
			continue
		}
		if _, _, err := c.writeFull(ctx, target{name: m.GetName(), w: acc.w}, key, desiredState{}); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", m.GetName(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove EndpointSlices of %s: %w", key, err)
	}
	return nil
}

// recordTransitions emits one Event per cluster whose reason changed, a
// Warning when it stopped being Published, so `kubectl describe` shows the
// history that status alone overwrites. The reasons are remembered in p,
// as status lists at most maxStatusClusters of them; on the first sync
// since start they come from the stored status, and a cluster it left out
// gets no Event then.
func (c *Controller) recordTransitions(gd *v1alpha1.GatewayDNS, p *published, clusters []v1alpha1.ClusterStatus) {
	before, complete := p.reasons, true
	if before == nil {
		before = map[string]string{}
		for _, cs := range gd.Status.Clusters {
			before[cs.Name] = cs.Reason
		}
		complete = gd.Status.OmittedClusters == 0
	}
	now := make(map[string]string, len(clusters))
	for _, cs := range clusters {
		now[cs.Name] = cs.Reason
		old, had := before[cs.Name]
		if old == cs.Reason || (!had && !complete) {
			continue
		}
		if cs.Reason == ReasonPublished {
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, cs.Reason, "cluster %s: %v", cs.Name, cs.Addresses)
			continue
		}
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, cs.Reason, "cluster %s: %s", cs.Name, cs.Message)
	}
	p.reasons = now
}

func hasFinalizer(gd *v1alpha1.GatewayDNS) bool {
	for _, f := range gd.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

// addFinalizer and removeFinalizer patch the finalizer list with the
// resourceVersion they read, so a concurrent change makes them fail and retry
// instead of overwriting someone else's finalizer.
func (c *Controller) addFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	return c.patchFinalizers(ctx, gd, append(append([]string(nil), gd.Finalizers...), Finalizer))
}

func (c *Controller) removeFinalizer(ctx context.Context, gd *v1alpha1.GatewayDNS) error {
	var keep []string
	for _, f := range gd.Finalizers {
		if f != Finalizer {
			keep = append(keep, f)
		}
	}
	return c.patchFinalizers(ctx, gd, keep)
}

func (c *Controller) patchFinalizers(ctx context.Context, gd *v1alpha1.GatewayDNS, finalizers []string) error {
	patch, err := jsonMarshal(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": gd.ResourceVersion}})
	if err != nil {
		return err
	}
	u, err := c.cfg.Dynamic.Resource(v1alpha1.GatewayDNSResource).Namespace(gd.Namespace).
		Patch(ctx, gd.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch finalizers of GatewayDNS %s/%s: %w", gd.Namespace, gd.Name, err)
	}
	if u != nil {
		// The status written later in this sync must carry the new version.
		gd.ResourceVersion, gd.Finalizers = u.GetResourceVersion(), u.GetFinalizers()
	}
	return nil
}

// updateStatus writes status when it differs from what the object has.
func (c *Controller) updateStatus(ctx context.Context, gd *v1alpha1.GatewayDNS, st v1alpha1.GatewayDNSStatus) error {
	if statusEqual(gd.Status, st) {
		return nil
	}
	cp := gd.DeepCopy()
	cp.Status = st
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cp)
	if err != nil {
		return fmt.Errorf("convert GatewayDNS %s/%s: %w", gd.Namespace, gd.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(v1alpha1.GatewayDNSKind)
	_, err = c.cfg.Dynamic.Resource(v1alpha1.GatewayDNSResource).Namespace(gd.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status of GatewayDNS %s/%s: %w", gd.Namespace, gd.Name, err)
	}
	return nil
}

// toGatewayDNS converts an informer object into the typed GatewayDNS.
func toGatewayDNS(obj any) (*v1alpha1.GatewayDNS, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("GatewayDNS informer delivered %T", obj)
	}
	gd := &v1alpha1.GatewayDNS{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, gd); err != nil {
		return nil, fmt.Errorf("convert GatewayDNS %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return gd, nil
}
