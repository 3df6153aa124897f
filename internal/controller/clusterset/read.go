package clusterset

import (
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
}

// readMembers reads every member (readMember), keeping for one that
// cannot be read what it last exported, and remembers each read.
func (c *Reconciler) readMembers(mem *setMemory, members []setMember, user string, keep map[string]map[string]bool) map[string]memberRead {
	reads := map[string]memberRead{}
	for _, m := range members {
		var r memberRead
		if m.cluster != nil && keep[m.cluster.Key()] == nil {
			// Kept connected while its id is read, or it is unreachable.
			keep[m.cluster.Key()] = map[string]bool{}
		}
		if m.cluster != nil && m.idKnown {
			r = c.readMember(m.cluster, m.ClusterID, user, keep)
		}
		if r.synced && m.cluster.CutOff() == "" {
			mem.exports[m.ClusterID] = r
		} else if last, ok := mem.exports[m.ClusterID]; ok {
			r.id, r.exports, r.endpoints = m.ClusterID, last.exports, last.endpoints
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
// gets every ref read, for Release.
func (c *Reconciler) readMember(w *workload.Cluster, id, user string, keep map[string]map[string]bool) memberRead {
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
		read = append(read, exportOf(id, e, c.cfg.Workloads.ExportedService(w, e.Namespace, e.Name)))
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
	return r
}

// exportOf is a member's ServiceExport and the Service it names (nil when
// there is none) as the aggregator reads them.
func exportOf(cluster string, e *mcsv1beta1.ServiceExport, svc *corev1.Service) aggregate.Export {
	x := aggregate.Export{Cluster: cluster, Namespace: e.Namespace, Name: e.Name, Created: e.CreationTimestamp.Time,
		Labels: e.Spec.ExportedLabels, Annotations: e.Spec.ExportedAnnotations, Cut: workload.ExportedCut(e)}
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
