package workload

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	typeddiscoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/typed/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
)

const (
	// KubeconfigSecretKey is the key of the CAPI `<cluster>-kubeconfig`
	// Secret that holds the kubeconfig of the workload cluster.
	KubeconfigSecretKey = "value"
	// KubeconfigSecretSuffix follows the Cluster's name in its Secret's name.
	KubeconfigSecretSuffix = "-kubeconfig"
	// RequestTimeout bounds every read and write in a workload cluster, so
	// an unreachable cluster costs a worker seconds, not minutes. It is a
	// context deadline per call, not rest.Config.Timeout: that one also
	// ends every watch after it, and the informers would watch again every 10 s.
	RequestTimeout = 10 * time.Second
	// clientQPS and clientBurst limit the requests to one workload
	// cluster, of every kind together: its clients share one limiter.
	// Filling a cluster that opts in takes a write per slice, two slices
	// per selected cluster: 2,000 at 1,000 Clusters, 20 s at 100/s.
	clientQPS   = 100
	clientBurst = 200
)

// Client is what the controller uses in a workload cluster: its
// Namespaces and Services (read) and EndpointSlices (written). A
// *fake.Clientset is one; production builds only these two typed clients,
// as a whole clientset per cluster costs memory at thousands of clusters
// (docs/benchmarks.md, section 4).
type Client interface {
	CoreV1() typedcorev1.CoreV1Interface
	DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface
}

// ClientFactory builds a client for a workload cluster from its kubeconfig.
// Tests hand out fake clientsets; production parses the kubeconfig
// (NewClientFromKubeconfig). An error wrapping a *kubeconfig.RefusedError
// gives the reason KubeconfigRefused, any other KubeconfigInvalid.
type ClientFactory func(kubeconfig []byte) (Client, error)

// typedClient is the production Client; both typed clients share one
// HTTP client.
type typedClient struct {
	core      *typedcorev1.CoreV1Client
	discovery *typeddiscoveryv1.DiscoveryV1Client
	mcs       *mcsclient.MulticlusterV1beta1Client
	gateway   *gatewayclient.GatewayV1Client
}

func (c *typedClient) CoreV1() typedcorev1.CoreV1Interface { return c.core }

// Probe asks the API server whether it is ready (/readyz, which every
// user may read); an answer refusing the question is an answer too.
func (c *typedClient) Probe(ctx context.Context) error {
	return c.core.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
}

// prober is a Client whose API server can be probed: the real one.
type prober interface {
	Probe(ctx context.Context) error
}

// probeEvery is how often a workload cluster's API server is probed
// besides its informers' reads. A reflector whose reads failed lately
// waits up to 30 s before it reads again (client-go's backoff, reset
// after two minutes), so an API server that stops again soon after an
// outage would be noticed that much later than UnreachableAfter.
const probeEvery = 5 * time.Second

// probe runs until w's connection ends, telling w's reads what each probe
// got.
func (w *Cluster) probe(p prober) {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(w.ctx, RequestTimeout)
		err := p.Probe(ctx)
		cancel()
		if w.ctx.Err() != nil {
			return
		}
		w.reads.probed(err)
	}
}
func (c *typedClient) DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface {
	return c.discovery
}

func (c *typedClient) MulticlusterV1beta1() mcsclient.MulticlusterV1beta1Interface { return c.mcs }

// GatewayV1 is the Gateway API of the cluster, a CRD too: JSON only.
func (c *typedClient) GatewayV1() gatewayclient.GatewayV1Interface { return c.gateway }

var (
	_ Client        = (*typedClient)(nil)
	_ MCSClient     = (*typedClient)(nil)
	_ GatewayClient = (*typedClient)(nil)
)

// NewClientFromKubeconfig builds the client of a workload cluster from the
// kubeconfig of its Secret, using its inline data only (package
// kubeconfig): a tenant writes that Secret, so what it asks the controller
// to run, read or route through is refused (a *kubeconfig.RefusedError),
// but for the exec commands the operator allows in policy.
//
// No response body is read past maxResponseBytes (0:
// DefaultMaxResponseBytes): a tenant's API server may answer anything.
// obs sees every request and its wait for the cluster's rate limit.
func NewClientFromKubeconfig(data []byte, policy kubeconfig.Policy, maxResponseBytes int64, obs Requests) (Client, error) {
	cfg, err := kubeconfig.RESTConfig(data, policy)
	if err != nil {
		return nil, err // it speaks of the kubeconfig and its fields already
	}
	most := cmp.Or(maxResponseBytes, DefaultMaxResponseBytes)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return limitBodies(rt, most) })
	if obs.Done != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countRequests(rt, obs.Done) })
	}
	// One limiter for the cluster: three clients, each with its own,
	// would allow three times the rate, and a write that goes kind by
	// kind (ServiceImports, then Services, then slices) would still get a
	// third of it.
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(clientQPS, clientBurst)
	if obs.Throttled != nil {
		cfg.RateLimiter = timedLimiter{RateLimiter: cfg.RateLimiter, waited: obs.Throttled}
	}
	cfg.UserAgent = "xcc-syncer-controller"
	// Protobuf: a target's full list of slices decodes faster than JSON,
	// and every resource the controller uses is built in.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	// API server warnings (FQDN EndpointSlices are deprecated) are logged
	// once per process, not once per write.
	cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client from kubeconfig: %w", err)
	}
	core, err := typedcorev1.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client from kubeconfig: %w", err)
	}
	discovery, err := typeddiscoveryv1.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client from kubeconfig: %w", err)
	}
	// The MCS API is a CRD: JSON only.
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	mcs, err := mcsclient.NewForConfigAndClient(jsonCfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client from kubeconfig: %w", err)
	}
	gateway, err := gatewayclient.NewForConfigAndClient(jsonCfg, hc)
	if err != nil {
		return nil, fmt.Errorf("client from kubeconfig: %w", err)
	}
	return &typedClient{core: core, discovery: discovery, mcs: mcs, gateway: gateway}, nil
}

// Set keeps one client per workload cluster, one Namespace informer on
// the slice namespace of each, and one Service informer per gateway
// Service with one on that Service's EndpointSlices. Each is shared by every GatewayDNS that uses it (its users, by
// GatewayDNS key) and stopped when none does (Release).
type Set struct {
	mu             sync.Mutex
	ctx            context.Context // parent of every informer; set by Start
	newClient      ClientFactory
	sliceNamespace string
	onNamespace    func(clusterNamespace string)
	onService      func(users []string)
	onMember       func(cluster string, users []string)
	clusters       map[string]*Cluster // by "<cluster-ns>/<cluster>"
	gauge          func(n int)
	onWrite        func(Writer, time.Duration, error)
	// own are the kinds of Config.Own.
	own         []OwnKind
	exportCache cache.TransformFunc
	limits      ReadLimits
}

// Config wires a Set to the controller.
type Config struct {
	// NewClient builds a client from a kubeconfig (NewClientFromKubeconfig in production).
	NewClient ClientFactory
	// SliceNamespace is the namespace that receives slices; its presence opts a cluster in.
	SliceNamespace string
	// OnNamespace is called when the slice namespace of a cluster in
	// clusterNamespace appears, goes, or first lists.
	OnNamespace func(clusterNamespace string)
	// OnService is called with the GatewayDNS keys that use a Service informer when it changes.
	OnService func(users []string)
	// OnMember is called instead of OnService for the informers of a
	// clusterset member (WatchExports, WatchExportEndpoints): with the
	// member's key too, so its events can be rate limited per member.
	// nil: OnService.
	OnMember func(cluster string, users []string)
	// Gauge is told the number of clusters watched whenever it changes.
	Gauge func(n int)
	// Limits bound the reads from each workload cluster (limits.go);
	// zero fields are the defaults.
	Limits ReadLimits
	// Written, if set, is told of every write into a cluster
	// (Cluster.NoteWrite): its writer, duration and error.
	Written func(Writer, time.Duration, error)
	// Own are the kinds of the objects the ClusterSet writer keeps of its
	// own in each member (own.go); none: Own never answers.
	Own []OwnKind
	// ExportCache is what a member's ServiceExport informer keeps of an
	// export (aggregate.ForCache, which the ClusterSet side reads); nil
	// keeps it whole.
	ExportCache cache.TransformFunc
}

// NewSet returns an empty Set; Start gives it the context its informers run in.
func NewSet(cfg Config) *Set {
	onMember := cfg.OnMember
	if onMember == nil {
		onMember = func(_ string, users []string) { cfg.OnService(users) }
	}
	return &Set{newClient: cfg.NewClient, sliceNamespace: cfg.SliceNamespace, onNamespace: cfg.OnNamespace,
		onService: cfg.OnService, onMember: onMember, gauge: cfg.Gauge, onWrite: cfg.Written, own: cfg.Own, exportCache: cfg.ExportCache, clusters: map[string]*Cluster{}, limits: cfg.Limits.withDefaults()}
}

// Start sets the context every informer runs in and ends with; call it
// before the first Get.
func (m *Set) Start(ctx context.Context) { m.ctx = ctx }

// Cluster is the connection to one workload cluster: its client, the
// informer on its slice namespace and those on its gateway Services.
type Cluster struct {
	key        string
	configHash string
	// server is the API server URL of the kubeconfig ("" if it has none).
	server     string
	client     Client
	cancel     context.CancelFunc
	ctx        context.Context
	nsInformer atomic.Pointer[objectWatch]
	services   map[string]*serviceWatch // by "<ns>/<name>"
	// names is the cluster-wide Service informer of spec.names, if a
	// GatewayDNS uses it.
	names *namesWatch
	// exports are the informers of a clusterset member (exports.go).
	exports *exportsWatch
	// eastWest are the informers of its east-west gateway (eastwest.go).
	eastWest *eastWestWatch
	// allServices is the cluster-wide Service informer names and exports
	// share (services.go), nil while neither reads it.
	allServices *allServices
	// property is its cluster id property as last read (property.go).
	property property
	users    map[string]bool
	// reads bounds what is read from the cluster (limits.go).
	reads           *reads
	notifyNamespace func()
	// writes are the writes into the cluster by each Writer (writes.go),
	// for the metrics; onWrite is the Set's Config.Written.
	writes  [writers]writeStats
	onWrite func(Writer, time.Duration, error)
}

// Key is the cluster's "<cluster-ns>/<cluster>".
func (w *Cluster) Key() string { return w.key }

// Client is the cluster's client; a new kubeconfig gives a new one.
func (w *Cluster) Client() Client { return w.client }

type serviceWatch struct {
	informer *objectWatch
	// endpoints watches the Service's EndpointSlices (health, and what a
	// headless export publishes).
	endpoints *objectWatch
	// content is set once a headless export uses the Service: every
	// change of its endpoints is then an event, not only health changes.
	content atomic.Bool
	cancel  context.CancelFunc
	users   map[string]bool
}

// Access is the result of looking up a workload cluster's client: the
// Cluster, or why there is none (a status reason and message).
type Access struct {
	Cluster         *Cluster
	Reason, Message string
}

// Get returns the connection to a workload cluster for user (a GatewayDNS key),
// building it from the kubeconfig Secret, or rebuilding it when the
// kubeconfig changed. A missing or garbage Secret gives a reason, not an error.
func (m *Set) Get(clusterNamespace, cluster string, secret *corev1.Secret, user string) Access {
	key := clusterNamespace + "/" + cluster
	if secret == nil {
		return Access{Reason: kubeconfig.ReasonMissing, Message: fmt.Sprintf("Secret %s/%s%s not found", clusterNamespace, cluster, KubeconfigSecretSuffix)}
	}
	raw := secret.Data[KubeconfigSecretKey]
	if len(raw) == 0 {
		return Access{Reason: kubeconfig.ReasonInvalid, Message: fmt.Sprintf("Secret %s/%s has no key %q", secret.Namespace, secret.Name, KubeconfigSecretKey)}
	}
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])

	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.clusters[key]; w != nil {
		if w.configHash == hash {
			w.users[user] = true
			if w.nsInformer.Load().cut() && w.reads.cut() == "" {
				m.watchNamespace(w)
			}
			return Access{Cluster: w}
		}
		klog.FromContext(m.ctx).Info("Kubeconfig changed, reconnecting", "cluster", key)
		m.stopLocked(w)
	}
	client, err := m.newClient(raw)
	if err != nil {
		reason := kubeconfig.ReasonInvalid
		var refused *kubeconfig.RefusedError
		if errors.As(err, &refused) {
			reason = kubeconfig.ReasonRefused
		}
		// Every refused field is a line of err; status shows them on one.
		return Access{Reason: reason, Message: fmt.Sprintf("Secret %s/%s: %s", secret.Namespace, secret.Name, strings.ReplaceAll(err.Error(), "\n", "; "))}
	}
	ctx, cancel := context.WithCancel(m.ctx)
	w := &Cluster{key: key, configHash: hash, server: kubeconfigServer(raw), client: client, cancel: cancel, ctx: ctx,
		services: map[string]*serviceWatch{}, users: map[string]bool{user: true},
		reads: newReads(m.limits, klog.LoggerWithValues(klog.FromContext(m.ctx), "cluster", key))}
	w.onWrite = m.onWrite
	w.notifyNamespace = func() { m.onNamespace(clusterNamespace) }
	w.reads.onReachability = w.notifyNamespace
	m.watchNamespace(w)
	if p, ok := client.(prober); ok {
		go w.probe(p)
	}
	m.clusters[key] = w
	klog.FromContext(m.ctx).Info("Watching workload cluster", "cluster", key)
	m.gauge(len(m.clusters))
	return Access{Cluster: w}
}

// watchNamespace starts the informer on w's slice namespace.
func (m *Set) watchNamespace(w *Cluster) {
	client := w.client
	ow := watchObject(w.reads, "Namespace "+m.sliceNamespace, m.sliceNamespace, &corev1.Namespace{}, namespaceForCache, w.notifyNamespace,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Namespaces().List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Namespaces().Watch(ctx, o)
		})
	ow.run(w.ctx, w.notifyNamespace)
	w.nsInformer.Store(ow)
}

// CutOff returns why the reads from w are cut off (a limit of
// ReadLimits was passed), or "" when they are not.
func (w *Cluster) CutOff() string { return w.reads.cut() }

// Unreachable returns why w counts as unreachable: every read of it (a
// list or watch of any of its informers) has failed for
// ReadLimits.UnreachableAfter, none going through; "" otherwise. Its
// informers keep what they last read, so without this a cluster whose
// API server went down would look as it was.
func (w *Cluster) Unreachable() string { return w.reads.unreachable() }

// kubeconfigServer returns the API server URL of a kubeconfig's current
// context, or "" when it has none.
func kubeconfigServer(data []byte) string {
	server, err := kubeconfig.Server(data)
	if err != nil {
		return ""
	}
	return server
}

// Destination names where the cluster's slices live: its API server and
// the UID of its slice namespace. Clusters whose kubeconfigs reach the
// same namespace of the same API server have the same destination, so
// hold the same slices. "" when the namespace has no UID (never in a real
// API server).
func (w *Cluster) Destination(nsUID types.UID) string {
	if nsUID == "" {
		return ""
	}
	return w.server + " " + string(nsUID)
}

// SliceNamespace reports whether the cluster has opted in, and the UID of
// its slice namespace (a namespace deleted and made again is another one);
// synced is false while the Namespace informer has not listed (cluster
// unreachable).
func (w *Cluster) SliceNamespace(name string) (uid types.UID, has, synced bool) {
	inf := w.nsInformer.Load()
	if !inf.HasSynced() {
		return "", false, false
	}
	obj, exists, _ := inf.store.GetByKey(name)
	ns, ok := obj.(*corev1.Namespace)
	if !exists || !ok || ns.DeletionTimestamp != nil {
		// Being deleted (the workload chart is uninstalled): writes would be refused.
		return "", false, true
	}
	return ns.UID, true, true
}

// WatchService makes sure the gateway Service namespace/name of w is
// watched for user: a field-selected informer on the Service and a
// label-selected one on its EndpointSlices, started here and nowhere else
// (again after a cut-off, once the cluster is no longer cut off). For a
// headless export (content) every change of the Service's endpoints
// enqueues its users, not only one of its health. Reading is Service,
// ReadyEndpoints and Endpoints, which never start anything.
func (m *Set) WatchService(w *Cluster, namespace, name, user string, content bool) {
	ref := namespace + "/" + name
	m.mu.Lock()
	defer m.mu.Unlock()
	sw := w.services[ref]
	if sw != nil && (sw.informer.cut() || sw.endpoints.cut()) {
		// Cut off: dropped (and its store with it).
		sw.cancel()
		delete(w.services, ref)
		sw = nil
	}
	if sw == nil && w.reads.cut() != "" {
		return
	}
	if sw == nil {
		sw = m.startServiceWatch(w, namespace, name)
		w.services[ref] = sw
	}
	sw.users[user] = true
	if content {
		sw.content.Store(true)
	}
}

// startServiceWatch starts the informers of WatchService; m.mu is held.
func (m *Set) startServiceWatch(w *Cluster, namespace, name string) *serviceWatch {
	ref := namespace + "/" + name
	ctx, cancel := context.WithCancel(w.ctx)
	client := w.client
	sw := &serviceWatch{cancel: cancel, users: map[string]bool{}}
	notify := func() { m.onService(m.usersOf(sw)) }
	sw.informer = watchObject(w.reads, "Service "+ref, name, &corev1.Service{}, watchedServiceForCache, notify,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Services(namespace).List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Services(namespace).Watch(ctx, o)
		})
	sw.informer.run(ctx, notify)
	sw.endpoints = watchEndpoints(client, w.reads, namespace, name, &sw.content, notify)
	sw.endpoints.run(ctx, notify)
	klog.FromContext(m.ctx).V(2).Info("Watching gateway Service", "cluster", w.key, "service", ref)
	return sw
}

// Service returns the cached gateway Service namespace/name of w (nil
// when it does not exist); synced is false until its informer, started by
// WatchService, has listed.
func (m *Set) Service(w *Cluster, namespace, name string) (svc *corev1.Service, synced bool) {
	ref := namespace + "/" + name
	m.mu.Lock()
	sw := w.services[ref]
	m.mu.Unlock()
	if sw == nil || !sw.informer.HasSynced() {
		return nil, false
	}
	obj, exists, _ := sw.informer.store.GetByKey(ref)
	if !exists {
		return nil, true
	}
	s, _ := obj.(*corev1.Service)
	return s, true
}

// Watched counts the clusters, the gateway Service informers and their
// users, for tests and the gauge.
func (m *Set) Watched() (clusters, services, users int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.clusters {
		for _, sw := range w.services {
			services++
			users += len(sw.users)
		}
	}
	return len(m.clusters), services, users
}

func (m *Set) usersOf(sw *serviceWatch) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(sw.users))
	for u := range sw.users {
		out = append(out, u)
	}
	return out
}

// Release drops the uses of user that are not in keep (cluster key ->
// Service refs still watched for it) and stops clients and informers that
// no GatewayDNS uses any more.
func (m *Set) Release(user string, keep map[string]map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.clusters {
		refs, keepCluster := keep[key]
		for ref, sw := range w.services {
			if unused(sw.users, user, refs[ref]) {
				sw.cancel()
				delete(w.services, ref)
				klog.FromContext(m.ctx).V(2).Info("Stopped watching gateway Service", "cluster", key, "service", ref)
			}
		}
		if nw := w.names; nw != nil && unused(nw.users, user, refs[NamesRef]) {
			nw.stop()
			w.names = nil
			klog.FromContext(m.ctx).Info("Stopped watching the Services of workload cluster for names", "cluster", key)
		}
		if ew := w.exports; ew != nil && !refs[ExportsRef] && ew.wanted[user] != nil {
			delete(ew.wanted, user)
			m.syncExportSlicesLocked(w, ew)
		}
		if ew := w.exports; ew != nil && unused(ew.users, user, refs[ExportsRef]) {
			ew.stop()
			w.exports = nil
			klog.FromContext(m.ctx).Info("Stopped watching the ServiceExports of workload cluster", "cluster", key)
		}
		m.releaseEastWestLocked(w, user, refs)
		m.releaseServicesLocked(w)
		if !keepCluster {
			delete(w.users, user)
		}
		if len(w.users) == 0 {
			m.stopLocked(w)
		}
	}
	m.gauge(len(m.clusters))
}

// unused drops user from an informer's users unless it keeps the
// informer, and reports whether no user is left.
func unused(users map[string]bool, user string, kept bool) bool {
	if !kept {
		delete(users, user)
	}
	return len(users) == 0
}

func (m *Set) stopLocked(w *Cluster) {
	w.cancel()
	delete(m.clusters, w.key)
	klog.FromContext(m.ctx).Info("Stopped watching workload cluster", "cluster", w.key)
}

// objectWatch is an informer on one object by name (field selector
// metadata.name), so a workload cluster's API server sends only the events
// of the gateway Service or the slice Namespace. It is a plain informer,
// not a SharedIndexInformer: the controller runs two per workload cluster,
// and the shared kind costs three goroutines and an event buffer more each.
// It does not resync: the GatewayDNS informer resyncs every GatewayDNS.
type objectWatch struct {
	store cache.Store
	ctl   cache.Controller
	// counter bounds what it reads (limits.go).
	counter *counter
}

func watchObject(r *reads, what, name string, obj runtime.Object, transform cache.TransformFunc, onChange func(),
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *objectWatch {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return watchFn(ctx, o)
		},
	}
	return newInformer(r, what, lw, cache.InformerOptions{
		ObjectType: obj,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { onChange() },
			UpdateFunc: func(any, any) { onChange() },
			DeleteFunc: func(any) { onChange() },
		},
		Transform: transform,
	})
}

// watchedServiceForCache keeps of a gateway or exported Service, watched
// by name, what is read of it: identity, deletion mark, spec and load-balancer status (no labels,
// annotations, finalizers, managedFields or status conditions, which the
// cluster's users choose and may make large). Idempotent.
func watchedServiceForCache(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			Generation: s.Generation, CreationTimestamp: s.CreationTimestamp, DeletionTimestamp: s.DeletionTimestamp,
		},
		Spec:   s.Spec,
		Status: corev1.ServiceStatus{LoadBalancer: s.Status.LoadBalancer},
	}, nil
}

// run starts the informer until ctx ends, or it is cut off (limits.go),
// and calls onSynced once it has listed, so a cluster that answers late
// is synced at once, and when it is cut off.
func (o *objectWatch) run(ctx context.Context, onSynced func()) {
	ctx, cancel := context.WithCancel(ctx)
	o.counter.mu.Lock()
	o.counter.stop = func() {
		cancel()
		onSynced()
	}
	o.counter.mu.Unlock()
	go func() {
		o.ctl.RunWithContext(ctx)
		cancel()
		o.counter.release()
	}()
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), o.ctl.HasSynced) {
			onSynced()
		}
	}()
}

// HasSynced reports whether the informer has listed and is not cut off.
func (o *objectWatch) HasSynced() bool { return !o.counter.cut() && o.ctl.HasSynced() }

// cut reports whether the informer was cut off (it no longer runs).
func (o *objectWatch) cut() bool { return o.counter.cut() }
