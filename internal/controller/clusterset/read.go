package clusterset

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// memberRead is what one sync read of a member of a clusterset: its
// exports as the aggregator takes them, the EndpointSlices of each
// exported Service, and its namespaces. synced is false while any of it
// has not been listed (unreachable, cut off, the MCS CRDs missing): the
// member then keeps what it last exported.
type memberRead struct {
	id         string
	exports    []aggregate.Export
	endpoints  map[aggregate.Key][]*discoveryv1.EndpointSlice
	namespaces map[string]bool
	// own are the member's ServiceExports as cached, for their status.
	own    []*mcsv1beta1.ServiceExport
	synced bool
	// sum changes whenever exports or endpoints do (readSum); 0 for a
	// read not made by this process (kept across a restart): unknown.
	sum uint64
}

// readMembers reads every member (readMember), keeping for one that
// cannot be read what it last exported, and remembers each read.
func (c *Reconciler) readMembers(mem *setMemory, members []setMember, user string, keep map[string]map[string]bool) map[string]memberRead {
	reads := map[string]memberRead{}
	now := time.Now().UTC()
	for _, m := range members {
		var r memberRead
		if m.cluster != nil && keep[m.cluster.Key()] == nil {
			// Kept connected while its id is read, or it is unreachable.
			keep[m.cluster.Key()] = map[string]bool{}
		}
		if m.cluster != nil && m.idKnown {
			last, known := mem.exports[m.ClusterID]
			r = c.readMember(m.cluster, m.ClusterID, user, keep, seenOf(last, known, m.registered, now))
		}
		if r.synced && m.cluster.CutOff() == "" {
			mem.exports[m.ClusterID] = r
		} else if last, ok := mem.exports[m.ClusterID]; ok {
			r.id, r.exports, r.endpoints, r.sum = m.ClusterID, last.exports, last.endpoints, last.sum
		}
		reads[m.ClusterID] = r
	}
	// A member that left takes its exports with it.
	for id := range mem.exports {
		if _, ok := reads[id]; !ok {
			delete(mem.exports, id)
		}
	}
	return reads
}

// readMember reads member w (cluster id id) for user, the clusterset's
// key, starting the informers it needs: every ServiceExport, Namespace
// and Service, and, while it has an export admitted under
// MaxExportsPerMember, its EndpointSlices (one watch of the member, read
// only for the admitted exports' Services). The keep map (cluster key -> refs)
// gets every ref read, for Release. seen gives each export the time the
// controller vouches for (aggregate.Export.Seen).
func (c *Reconciler) readMember(w *workload.Cluster, id, user string, keep map[string]map[string]bool,
	seen func(aggregate.Key) time.Time) memberRead {
	refs := keep[w.Key()]
	if refs == nil {
		refs = map[string]bool{}
		keep[w.Key()] = refs
	}
	refs[workload.ExportsRef] = true
	c.cfg.Workloads.WatchExports(w, user)
	exports, namespaces, synced := c.cfg.Workloads.Exports(w)
	r := memberRead{id: id, namespaces: namespaces, own: exports, synced: synced,
		endpoints: map[aggregate.Key][]*discoveryv1.EndpointSlice{}}
	live := make([]*mcsv1beta1.ServiceExport, 0, len(exports))
	for _, e := range exports {
		if e.DeletionTimestamp == nil {
			live = append(live, e)
		}
	}
	// Of a member's valid exports, its limit's worth are imported, the
	// namespaces sharing it (aggregate.Admit); only their endpoints are
	// read. The others' Services are known from one member-wide informer.
	read := make([]aggregate.Export, 0, len(live))
	for _, e := range live {
		x := exportOf(id, e, c.cfg.Workloads.ExportedService(w, e.Namespace, e.Name))
		x.Seen = seen(aggregate.Key{Namespace: e.Namespace, Name: e.Name})
		read = append(read, x)
	}
	admitted := aggregate.Admit(read, c.cfg.MaxExportsPerMember)
	keys := map[string]bool{}
	for i, x := range admitted {
		if !x.OverLimit && aggregate.Valid(x) {
			keys[live[i].Namespace+"/"+live[i].Name] = true
		}
	}
	c.cfg.Workloads.WatchExportEndpoints(w, user, keys)
	for i, x := range admitted {
		e := live[i]
		if !keys[e.Namespace+"/"+e.Name] {
			r.exports = append(r.exports, x)
			continue
		}
		eps, epSynced := c.cfg.Workloads.ExportEndpoints(w, e.Namespace, e.Name)
		if !epSynced {
			r.synced = false
			continue
		}
		r.exports = append(r.exports, x)
		r.endpoints[aggregate.Key{Namespace: e.Namespace, Name: e.Name}] = eps
	}
	r.sum = readSum(live, admitted, r.endpoints, func(e *mcsv1beta1.ServiceExport) *corev1.Service {
		return c.cfg.Workloads.ExportedService(w, e.Namespace, e.Name)
	})
	return r
}

// readSum is a sum of one hash per export read and per slice of its
// endpoints, from what the read was made of: each ServiceExport and its
// Service by UID and resourceVersion (exportOf reads nothing else of
// them), the time vouched for it and whether it is over the limit. It
// changes whenever the read does, so a sync that read nothing new
// needs no encoding of the state to know it is kept already
// (saveClusterSet). Never 0.
func readSum(live []*mcsv1beta1.ServiceExport, read []aggregate.Export, endpoints map[aggregate.Key][]*discoveryv1.EndpointSlice,
	service func(*mcsv1beta1.ServiceExport) *corev1.Service) uint64 {
	sum := uint64(1)
	for i, e := range live {
		h := hashOf(string(e.UID), e.ResourceVersion)
		if svc := service(e); svc != nil {
			_, _ = h.WriteString(string(svc.UID) + "\x00" + svc.ResourceVersion + "\x00")
		}
		_, _ = h.WriteString(uint64String(uint64(read[i].Seen.UnixNano())))
		if read[i].OverLimit {
			_ = h.WriteByte(1)
		}
		sum += h.Sum64()
	}
	for _, sl := range endpoints {
		for _, s := range sl {
			if s != nil {
				h := hashOf(string(s.UID), s.ResourceVersion)
				sum += h.Sum64()
			}
		}
	}
	if sum == 0 {
		sum = 1
	}
	return sum
}

// seenOf gives each export of a member read now the earliest time the
// controller vouches for, which precedence never ranks it older than: the
// time kept of it in the member's last read (known; kept across restarts
// in the controller's state); for an export that read lacked, now; for
// every export of the member's first read, and one kept before these
// times were, the creation time of the member's Cluster, which the
// management API server set. So a member that claims a creationTimestamp
// of 1970 ranks from when the controller first saw the export, and at
// the first read from when it became a Cluster; exports found in the
// first read keep their order among themselves.
func seenOf(last memberRead, known bool, registered, now time.Time) func(aggregate.Key) time.Time {
	prev := make(map[aggregate.Key]time.Time, len(last.exports))
	for _, x := range last.exports {
		prev[aggregate.Key{Namespace: x.Namespace, Name: x.Name}] = x.Seen
	}
	return func(k aggregate.Key) time.Time {
		t, ok := prev[k]
		switch {
		case ok:
		case known:
			t = now
		default:
			t = registered
		}
		if t.Before(registered) {
			t = registered
		}
		return t
	}
}

// exportOf is a member's ServiceExport and the Service it names (nil when
// there is none) as the aggregator reads them.
func exportOf(cluster string, e *mcsv1beta1.ServiceExport, svc *corev1.Service) aggregate.Export {
	x := aggregate.Export{Cluster: cluster, Namespace: e.Namespace, Name: e.Name, Created: e.CreationTimestamp.Time,
		Labels: e.Spec.ExportedLabels, Annotations: e.Spec.ExportedAnnotations, Cut: aggregate.ExportedCut(e)}
	if svc == nil || svc.DeletionTimestamp != nil {
		return x
	}
	s := &aggregate.Service{
		Type:            aggregate.ServiceType(svc.Spec.Type),
		ClusterIP:       svc.Spec.ClusterIP,
		SessionAffinity: string(svc.Spec.SessionAffinity),
	}
	if cfg := svc.Spec.SessionAffinityConfig; cfg != nil && cfg.ClientIP != nil && cfg.ClientIP.TimeoutSeconds != nil {
		s.SessionAffinityConfig = &aggregate.SessionAffinityConfig{TimeoutSeconds: *cfg.ClientIP.TimeoutSeconds}
	}
	if p := svc.Spec.InternalTrafficPolicy; p != nil {
		s.InternalTrafficPolicy = string(*p)
	}
	if d := svc.Spec.TrafficDistribution; d != nil {
		s.TrafficDistribution = *d
	}
	for _, p := range svc.Spec.Ports {
		port := aggregate.Port{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port}
		if p.AppProtocol != nil {
			port.AppProtocol = *p.AppProtocol
		}
		s.Ports = append(s.Ports, port)
	}
	x.Service = s
	return x
}
