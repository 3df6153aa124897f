package workload

import (
	"context"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
)

// EastWestRef is the ref under which Release keeps a member's informers
// of its east-west gateway.
const EastWestRef = "*east-west"

// GatewayClient is the Gateway API (gateway.networking.k8s.io) of a
// workload cluster: only the exporting members of a ClusterSet with
// networks need it.
type GatewayClient interface {
	GatewayV1() gatewayclient.GatewayV1Interface
}

// Gateways returns the cluster's Gateway API client, if its client has one.
func (w *Cluster) Gateways() (GatewayClient, bool) {
	c, ok := w.client.(GatewayClient)
	return c, ok
}

// GatewayRef names the operator's east-west Gateway in a member.
type GatewayRef struct{ Namespace, Name string }

// eastWestWatch is what a clusterset reads of a member's east-west
// gateway: the operator's Gateway (one object, by name) and every
// ListenerSet of the member, whoever wrote it, for the listener ports
// anyone holds (eastwest.Allocate) and the status of the controller's.
type eastWestWatch struct {
	ref     GatewayRef
	gateway *objectWatch
	sets    *objectWatch
	cancel  context.CancelFunc
	users   map[string]bool
}

// WatchEastWest makes sure the east-west Gateway ref of w and the
// ListenerSets of w are watched for user: started here, again when ref
// changed or an informer was cut off. A client without the Gateway API
// watches nothing; EastWest then never syncs.
func (m *Set) WatchEastWest(w *Cluster, user string, ref GatewayRef) {
	gc, ok := w.Gateways()
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ew := w.eastWest
	if ew != nil && (ew.ref != ref || ew.gateway.cut() || ew.sets.cut()) {
		ew.cancel()
		w.eastWest, ew = nil, nil
	}
	if ew == nil && w.reads.cut() != "" {
		return
	}
	if ew == nil {
		ctx, cancel := context.WithCancel(w.ctx)
		ew = &eastWestWatch{ref: ref, cancel: cancel, users: map[string]bool{}}
		notify := func() { m.onMember(w.key, m.eastWestUsersOf(ew)) }
		client := gc.GatewayV1()
		ew.gateway = watchObject(w.reads, "east-west Gateway", ref.Name, &gatewayv1.Gateway{}, nil, notify,
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.Gateways(ref.Namespace).List(ctx, o)
			},
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return client.Gateways(ref.Namespace).Watch(ctx, o)
			})
		ew.sets = watchListenerSets(client, w.reads, notify)
		ew.gateway.run(ctx, notify)
		ew.sets.run(ctx, notify)
		w.eastWest = ew
		klog.FromContext(m.ctx).Info("Watching the east-west Gateway of workload cluster", "cluster", w.key, "gateway", ref.Namespace+"/"+ref.Name)
	}
	ew.users[user] = true
}

// EastWest returns the cached east-west Gateway of w (nil: none) and its
// ListenerSets, sorted by namespace and name; synced is false until both
// informers have listed (unreachable, cut off, no Gateway API CRDs).
func (m *Set) EastWest(w *Cluster) (gw *gatewayv1.Gateway, sets []*gatewayv1.ListenerSet, synced bool) {
	m.mu.Lock()
	ew := w.eastWest
	m.mu.Unlock()
	if ew == nil || !ew.gateway.HasSynced() || !ew.sets.HasSynced() {
		return nil, nil, false
	}
	if o, ok, _ := ew.gateway.store.GetByKey(ew.ref.Namespace + "/" + ew.ref.Name); ok {
		gw, _ = o.(*gatewayv1.Gateway)
	}
	for _, o := range ew.sets.store.List() {
		if s, ok := o.(*gatewayv1.ListenerSet); ok {
			sets = append(sets, s)
		}
	}
	sort.Slice(sets, func(i, j int) bool {
		return sets[i].Namespace+"/"+sets[i].Name < sets[j].Namespace+"/"+sets[j].Name
	})
	return gw, sets, true
}

func (m *Set) eastWestUsersOf(ew *eastWestWatch) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(ew.users))
	for u := range ew.users {
		out = append(out, u)
	}
	return out
}

// releaseEastWestLocked stops w's east-west informers once no user keeps
// them (refs: what user still reads of w).
func (m *Set) releaseEastWestLocked(w *Cluster, user string, refs map[string]bool) {
	if ew := w.eastWest; ew != nil && unused(ew.users, user, refs[EastWestRef]) {
		ew.cancel()
		w.eastWest = nil
		klog.FromContext(m.ctx).Info("Stopped watching the east-west Gateway of workload cluster", "cluster", w.key)
	}
}

// watchListenerSets is the cluster-wide ListenerSet informer of a member,
// caching of each what the east-west reading uses.
func watchListenerSets(client gatewayclient.GatewayV1Interface, r *reads, onChange func()) *objectWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.ListenerSets(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.ListenerSets(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	return newInformer(r, "ListenerSets of every namespace", lw, cache.InformerOptions{
		ObjectType: &gatewayv1.ListenerSet{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { onChange() },
			UpdateFunc: func(any, any) { onChange() },
			DeleteFunc: func(any) { onChange() },
		},
		Transform: listenerSetForCache,
	})
}

// listenerSetForCache keeps of a ListenerSet its identity, labels, spec
// and status, not its annotations or managed fields. Idempotent.
func listenerSetForCache(obj any) (any, error) {
	s, ok := obj.(*gatewayv1.ListenerSet)
	if !ok {
		return obj, nil
	}
	out := &gatewayv1.ListenerSet{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			Generation: s.Generation, Labels: s.Labels, DeletionTimestamp: s.DeletionTimestamp},
		Spec: s.Spec, Status: s.Status,
	}
	return out, nil
}
