package workload

import (
	"context"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	mcsclient "sigs.k8s.io/mcs-api/pkg/client/clientset/versioned/typed/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// ExportsRef is the ref under which Release keeps a cluster's informers
// for the Multi-Cluster Services API (its ServiceExports and Namespaces).
const ExportsRef = "*exports"

// MCSClient is the Multi-Cluster Services API (multicluster.x-k8s.io) of a
// workload cluster. It is apart from Client because only the members of a
// clusterset need it, and a CRD speaks JSON, not protobuf; the production
// client has both.
type MCSClient interface {
	MulticlusterV1beta1() mcsclient.MulticlusterV1beta1Interface
}

// MCS returns the cluster's Multi-Cluster Services client, if its client
// has one.
func (w *Cluster) MCS() (MCSClient, bool) {
	c, ok := w.client.(MCSClient)
	return c, ok
}

// exportsWatch is what a clusterset reads of a member besides the
// EndpointSlices of the exports it admits (WatchService): every
// ServiceExport, every Namespace, since an import is written only where
// its namespace exists, and every Service, cut to what the aggregator
// reads, so that whether an export is valid is known for all of them
// with one informer (an invalid export takes no place under the member's
// limit) and a Service-less export costs no informer of its own.
type exportsWatch struct {
	exports    *objectWatch
	namespaces *objectWatch
	// services is the cluster's shared Service informer (allServices).
	services *objectWatch
	ctx      context.Context
	cancel   context.CancelFunc
	// release tells the shared Service informer exports no longer read it.
	release func()
	users   map[string]bool
	// slices is the member's EndpointSlice informer of admitted exports
	// (export_slices.go), nil while no user wants one; wanted are the
	// exports each user reads ("<namespace>/<name>").
	slices *exportSlices
	wanted map[string]map[string]bool
	// own are the controller's own objects in the member (own.go).
	own *ownWatch
}

// WatchExports makes sure the ServiceExports and Namespaces of w are
// watched for user (a clusterset): started here and nowhere else (again
// after a cut-off, once the cluster is no longer cut off). A client
// without the MCS API watches nothing; Exports then never syncs. Reading
// is Exports, which never starts anything.
func (m *Set) WatchExports(w *Cluster, user string) {
	mcs, ok := w.MCS()
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ew := w.exports
	if ew != nil && (ew.exports.cut() || ew.namespaces.cut() || ew.services.cut() || ew.own.cut()) {
		ew.stop()
		w.exports = nil
		ew = nil
	}
	if ew == nil && w.reads.cut() != "" {
		return
	}
	if ew == nil {
		services := m.servicesLocked(w)
		if services == nil {
			return
		}
		ctx, cancel := context.WithCancel(w.ctx)
		ew = &exportsWatch{ctx: ctx, cancel: cancel, users: map[string]bool{}, services: services.informer,
			wanted: map[string]map[string]bool{}}
		notify := func() { m.onMember(w.key, m.exportsUsersOf(ew)) }
		ew.exports = watchExports(mcs, w.reads, notify)
		ew.namespaces = watchNamespaces(w.client, w.reads, notify)
		ew.exports.run(ctx, notify)
		ew.namespaces.run(ctx, notify)
		ew.own = watchOwn(ctx, w, mcs, m.sliceNamespace, m.own, notify)
		exported := func(namespace, name string) bool {
			_, exists, _ := ew.exports.store.GetByKey(namespace + "/" + name)
			return exists
		}
		services.exported.Store(&exported)
		services.onExports.Store(&notify)
		ew.release = func() { services.onExports.Store(nil); services.exported.Store(nil) }
		w.exports = ew
		klog.FromContext(m.ctx).Info("Watching the ServiceExports of workload cluster", "cluster", w.key)
	}
	ew.users[user] = true
}

// Exports returns the cached ServiceExports of w, sorted by namespace and
// name, and the names of its Namespaces that are not being deleted.
// synced is false until the informers started by WatchExports have
// listed (unreachable, cut off, or the MCS CRDs not installed).
func (m *Set) Exports(w *Cluster) (exports []*mcsv1beta1.ServiceExport, namespaces map[string]bool, synced bool) {
	m.mu.Lock()
	ew := w.exports
	m.mu.Unlock()
	if ew == nil || !ew.exports.HasSynced() || !ew.namespaces.HasSynced() || !ew.services.HasSynced() {
		return nil, nil, false
	}
	for _, o := range ew.exports.store.List() {
		if e, ok := o.(*mcsv1beta1.ServiceExport); ok {
			exports = append(exports, e)
		}
	}
	sort.Slice(exports, func(i, j int) bool {
		return exports[i].Namespace+"/"+exports[i].Name < exports[j].Namespace+"/"+exports[j].Name
	})
	namespaces = map[string]bool{}
	for _, o := range ew.namespaces.store.List() {
		if ns, ok := o.(*corev1.Namespace); ok && ns.DeletionTimestamp == nil {
			namespaces[ns.Name] = true
		}
	}
	return exports, namespaces, true
}

// ExportedService returns the Service namespace/name of w as the
// member-wide informer of WatchExports caches it (serviceForCache), nil
// when there is none or it has not listed: read after Exports said synced.
func (m *Set) ExportedService(w *Cluster, namespace, name string) *corev1.Service {
	m.mu.Lock()
	ew := w.exports
	m.mu.Unlock()
	if ew == nil {
		return nil
	}
	obj, exists, _ := ew.services.store.GetByKey(namespace + "/" + name)
	if !exists {
		return nil
	}
	s, _ := obj.(*corev1.Service)
	return s
}

// stop stops the informers of ew and tells the shared Service informer.
func (ew *exportsWatch) stop() {
	ew.cancel()
	if ew.release != nil {
		ew.release()
	}
}

func (m *Set) exportsUsersOf(ew *exportsWatch) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(ew.users))
	for u := range ew.users {
		out = append(out, u)
	}
	return out
}

// watchExports is the cluster-wide ServiceExport informer of a member.
func watchExports(client MCSClient, r *reads, onChange func()) *objectWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.MulticlusterV1beta1().ServiceExports(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.MulticlusterV1beta1().ServiceExports(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	return newInformer(r, "ServiceExports of every namespace", lw, cache.InformerOptions{
		ObjectType: &mcsv1beta1.ServiceExport{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { onChange() },
			UpdateFunc: func(old, cur any) {
				if exportChanged(old, cur) {
					onChange()
				}
			},
			DeleteFunc: func(any) { onChange() },
		},
		Transform: exportForCache,
	})
}

// exportChanged reports whether an update of a cached export is one the
// set reads: its spec, identity or deletion, not its status alone. The
// status is the controller's own write: an event for it would sync the
// whole set again once per export it writes.
func exportChanged(old, cur any) bool {
	o, ok1 := old.(*mcsv1beta1.ServiceExport)
	c, ok2 := cur.(*mcsv1beta1.ServiceExport)
	if !ok1 || !ok2 {
		return true
	}
	return o.UID != c.UID || o.Generation != c.Generation || !o.CreationTimestamp.Equal(&c.CreationTimestamp) ||
		!o.DeletionTimestamp.Equal(c.DeletionTimestamp) || !equality.Semantic.DeepEqual(o.Spec, c.Spec)
}

// watchNamespaces is the cluster-wide Namespace informer of a member.
func watchNamespaces(client Client, r *reads, onChange func()) *objectWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Namespaces().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Namespaces().Watch(ctx, o)
		},
	}
	return newInformer(r, "Namespaces", lw, cache.InformerOptions{
		ObjectType: &corev1.Namespace{},
		Handler: cache.ResourceEventHandlerFuncs{
			// Only a namespace that comes or goes changes where imports go.
			AddFunc: func(any) { onChange() },
			UpdateFunc: func(old, cur any) {
				o, _ := old.(*corev1.Namespace)
				n, _ := cur.(*corev1.Namespace)
				if o == nil || n == nil || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
					onChange()
				}
			},
			DeleteFunc: func(any) { onChange() },
		},
		Transform: namespaceForCache,
	})
}

// serviceForCache keeps of a Service what the aggregator reads (type,
// cluster IP, ports, session affinity, traffic policy and distribution)
// and its identity; the rest of a Service (selector, status, metadata)
// is the member's users' and may be large. Idempotent.
func serviceForCache(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	out := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			DeletionTimestamp: s.DeletionTimestamp},
		Spec: corev1.ServiceSpec{
			Type: s.Spec.Type, ClusterIP: s.Spec.ClusterIP, SessionAffinity: s.Spec.SessionAffinity,
			SessionAffinityConfig: s.Spec.SessionAffinityConfig, InternalTrafficPolicy: s.Spec.InternalTrafficPolicy,
			TrafficDistribution: s.Spec.TrafficDistribution,
		},
	}
	for _, p := range s.Spec.Ports {
		out.Spec.Ports = append(out.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, AppProtocol: p.AppProtocol})
	}
	return out, nil
}

// exportForCache keeps of a ServiceExport what the aggregator and the
// status writes read: identity, creation time, exported labels and
// annotations (aggregate.ReadBound) and conditions (boundConditions); no
// labels, annotations or managedFields, which a member's users choose
// and may make large. Idempotent.
func exportForCache(obj any) (any, error) {
	e, ok := obj.(*mcsv1beta1.ServiceExport)
	if !ok {
		return obj, nil
	}
	out := &mcsv1beta1.ServiceExport{
		ObjectMeta: metav1.ObjectMeta{
			Name: e.Name, Namespace: e.Namespace, UID: e.UID, ResourceVersion: e.ResourceVersion,
			Generation: e.Generation, CreationTimestamp: e.CreationTimestamp, DeletionTimestamp: e.DeletionTimestamp,
		},
		Status: mcsv1beta1.ServiceExportStatus{Conditions: boundConditions(e.Status.Conditions)},
	}
	var labelsCut, annotationsCut int
	out.Spec.ExportedLabels, labelsCut = aggregate.ReadBound(e.Spec.ExportedLabels)
	out.Spec.ExportedAnnotations, annotationsCut = aggregate.ReadBound(e.Spec.ExportedAnnotations)
	// What an earlier pass cut is kept: the transform is idempotent.
	if cut := labelsCut + annotationsCut + ExportedCut(e); cut > 0 {
		out.Annotations = map[string]string{AnnotationExportedCut: strconv.Itoa(cut)}
	}
	internMeta(&out.ObjectMeta)
	return out, nil
}

// Bounds of the conditions of a cached ServiceExport: a member (or its
// API server) may write any number, each with a 32 KiB message. The
// controller writes the status from the cache, so what is cut here is
// cut in the member too at its next status write; the controller's own
// messages are cut alike (aggregate.CutMessage) and never change by it.
const (
	// MaxCachedConditions is the most conditions kept: the controller's
	// own types (Valid, Conflict, Ready, CrossNetwork) and the first others.
	MaxCachedConditions = 8
	// maxConditionTypeBytes and maxConditionReasonBytes are the API's
	// bounds of a condition's type and reason; a hostile API server may
	// send longer ones.
	maxConditionTypeBytes   = 316
	maxConditionReasonBytes = 1024
)

// boundConditions keeps of conds the controller's own types and the
// first others, MaxCachedConditions at most, in their order, with the
// message cut to aggregate.MaxConditionMessageBytes and type and reason
// to the API's bounds. Idempotent.
func boundConditions(conds []metav1.Condition) []metav1.Condition {
	if len(conds) == 0 {
		return conds
	}
	own := map[string]bool{string(aggregate.ConditionValid): true, string(aggregate.ConditionConflict): true, string(aggregate.ConditionReady): true,
		string(aggregate.ConditionCrossNetwork): true}
	seen := map[string]bool{}
	others := MaxCachedConditions - len(own)
	var out []metav1.Condition
	for _, c := range conds {
		c.Type = c.Type[:min(len(c.Type), maxConditionTypeBytes)]
		if seen[c.Type] {
			continue
		}
		if !own[c.Type] {
			if others == 0 {
				continue
			}
			others--
		}
		seen[c.Type] = true
		c.Reason = c.Reason[:min(len(c.Reason), maxConditionReasonBytes)]
		c.Message = aggregate.CutMessage(c.Message)
		out = append(out, c)
	}
	return out
}

// AnnotationExportedCut, on a cached ServiceExport only, is how many of
// its exported labels and annotations exportForCache cut.
const AnnotationExportedCut = "xcc-dns.io/exported-cut"

// ExportedCut is what AnnotationExportedCut says of a cached export.
func ExportedCut(e *mcsv1beta1.ServiceExport) int {
	n, _ := strconv.Atoi(e.Annotations[AnnotationExportedCut])
	return n
}

// namespaceForCache keeps a Namespace's name, UID and deletion mark.
// Idempotent.
func namespaceForCache(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, DeletionTimestamp: ns.DeletionTimestamp,
	}}, nil
}
