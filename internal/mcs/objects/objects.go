package objects

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// maxImportIPs is the most spec.ips a ServiceImport holds: one per family.
const maxImportIPs = 2

// Input is what one member's objects are computed from.
type Input struct {
	// Cluster is the member's cluster id.
	Cluster string
	// Namespaces are the namespaces that exist in the member.
	Namespaces map[string]bool
	// Result is the aggregator's result over the whole clusterset.
	Result aggregate.Result
	// Imports holds, per import, what the member and the sources say.
	Imports map[aggregate.Key]ImportState
	// Limits bound each source's endpoints, per import and over all its
	// imports; zero fields take defaults.
	Limits Limits
	// AllowedCIDRs are the operator's --allowed-cidrs: an endpoint address
	// outside them is refused here as in the clusterset DNS records, so
	// kube-proxy never sends traffic where DNS would not. Empty allows any.
	AllowedCIDRs cidr.List
	// Networks group the members; the zero value is one network, where
	// every member gets every source's pods.
	Networks Networks
	// Skip, with a Memo, says of an import whose objects' digest is known
	// without building them that the member holds those objects already
	// (apply.Round.Settled): they are not built. Nil skips none.
	Skip func(k aggregate.Key, digest uint64) bool
}

// ImportState is what is known of one import beyond the aggregator.
type ImportState struct {
	// Endpoints are the EndpointSlices of each source cluster's exported
	// Service, by cluster id, as read. Only the import's clusters are used.
	Endpoints map[string][]*discoveryv1.EndpointSlice
	// ClusterIPs are those the member's API server allocated to the
	// derived Service, read back; empty until allocated.
	ClusterIPs []string
	// Written says the import is written in every reachable member, the
	// condition of Ready on the exports of it.
	Written bool
	// Version is the caller's number for the import and its sources'
	// slices, changed whenever either is (one per ClusterSet, not per
	// member): a Memo compares it instead of the slices. 0 is none.
	Version uint64
}

// ExportStatus is the conditions one of the member's own ServiceExports
// should have: Valid, Conflict, Ready. LastTransitionTime and
// ObservedGeneration are the writer's to set.
type ExportStatus struct {
	Namespace, Name string
	Conditions      []metav1.Condition
}

// Objects are the desired objects of one member, each list in a fixed
// order (namespace, then name).
type Objects struct {
	// Imports carry their desired status; the lastTransitionTime and
	// observedGeneration of its conditions are the writer's to set.
	Imports  []*mcsv1beta1.ServiceImport
	Services []*corev1.Service
	Slices   []*discoveryv1.EndpointSlice
	Exports  []ExportStatus
	// Refused lists what a source offered and the member does not get.
	Refused []string
	// Digests are, per import, a digest of its ServiceImport, derived
	// Service and slices: equal digests, equal objects (Digest). Every
	// import of the member is in it, skipped or not.
	Digests map[aggregate.Key]uint64
	// Skipped are the imports Input.Skip left out: their objects are in
	// none of the lists above.
	Skipped []aggregate.Key
}

// Compute returns the desired objects of the member in.Cluster, built
// afresh: ComputeWith without a Memo.
func Compute(in Input) Objects { return ComputeWith(in, nil) }

// ComputeWith returns the desired objects of the member in.Cluster. With a
// Memo (one per member), the digest of an import whose inputs are those
// of the last call is known without building it, and an import that
// in.Skip then holds settled is not built at all: it is in Digests and
// Skipped, not in the object lists. So a change among many imports costs
// the imports it touches, and the memo keeps a digest per import, not
// its objects.
func ComputeWith(in Input, memo *Memo) Objects {
	out := Objects{Digests: map[aggregate.Key]uint64{}}
	lim := in.Limits.orDefaults()
	memo = memo.start(in.Cluster, lim, in.AllowedCIDRs)
	defer memo.finish()
	type entry struct {
		imp aggregate.Import
		// endpoints are the sources' slices as the member gets them, and
		// notes what networks left out of them (Networks.sources).
		endpoints map[string][]*discoveryv1.EndpointSlice
		notes     []string
		known     *known
		built     *built // nil until built in this call
		parts     []*contribution
	}
	var entries []*entry
	var parts []*contribution
	for _, imp := range in.Result.Imports {
		if !in.Namespaces[imp.Namespace] {
			continue
		}
		endpoints, notes, given := in.Networks.sources(in.Cluster, imp, in.Imports[imp.Key].Endpoints, memo)
		version := in.Imports[imp.Key].Version
		if !given {
			// Slices of the networks' making: not what the version is of.
			version = 0
		}
		e := &entry{imp: imp, endpoints: endpoints, notes: notes, known: memo.known(imp, endpoints, version)}
		if e.known == nil {
			e.built = build(in.Cluster, imp, endpoints, lim, in.AllowedCIDRs)
			e.known = newKnown(imp, endpoints, version, e.built)
			memo.keep(e.known)
		}
		e.parts = e.known.contributions()
		parts = append(parts, e.parts...)
		out.Refused = append(out.Refused, e.known.refused...)
		entries = append(entries, e)
	}
	cuts := boundMembers(parts, lim)
	for _, e := range entries {
		k, st := e.imp.Key, in.Imports[e.imp.Key]
		st.Endpoints = e.endpoints
		if len(e.notes) > 0 {
			cuts[k] = append(slices.Clone(e.notes), cuts[k]...)
		}
		for _, note := range cuts[k] {
			out.Refused = append(out.Refused, fmt.Sprintf("import %s/%s: %s", e.imp.Namespace, e.imp.Name, note))
		}
		kept := keptOf(e.parts)
		if d, ok := e.known.digestFor(st, cuts[k], kept); ok && in.Skip != nil && in.Skip(k, d) {
			out.Digests[k] = d
			out.Skipped = append(out.Skipped, k)
			continue
		}
		if e.built == nil {
			e.built = build(in.Cluster, e.imp, st.Endpoints, lim, in.AllowedCIDRs)
		}
		si := serviceImport(e.imp, st, cuts[k])
		var sl []*discoveryv1.EndpointSlice
		for i, p := range e.parts {
			sl = append(sl, p.cut(e.built.slices[i])...)
		}
		var svcs []*corev1.Service
		if e.built.service != nil {
			svcs = []*corev1.Service{e.built.service}
		}
		d := Digest([]*mcsv1beta1.ServiceImport{si}, svcs, sl)
		e.known.setDigest(st, cuts[k], kept, d)
		out.Digests[k] = d
		out.Imports = append(out.Imports, si)
		out.Services = append(out.Services, svcs...)
		out.Slices = append(out.Slices, sl...)
	}
	slices.SortFunc(out.Slices, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out.Exports = exportStatuses(in)
	return out
}

// built is what the member gets of one import before the caps over all
// the imports of a source: the derived Service, and the slices of each
// source, in the order of the import's clusters.
type built struct {
	service *corev1.Service
	slices  [][]*discoveryv1.EndpointSlice
	refused []string
}

// build makes what the member gets of imp before the caps over all its
// imports: the derived Service, each source's slices, and what was
// refused of them.
func build(member string, imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, lim Limits, allowed cidr.List) *built {
	b := &built{}
	derived := DerivedServiceName(imp.Namespace, imp.Name)
	if imp.Type == aggregate.ImportClusterSetIP {
		b.service, b.refused = derivedService(imp, derived)
	}
	for _, cluster := range imp.Clusters {
		src, refused := readSource(cluster, cluster == member, endpoints[cluster], imp, lim, allowed)
		b.slices = append(b.slices, sourceSlices(imp, derived, src))
		b.refused = append(b.refused, prefixAll(fmt.Sprintf("import %s/%s: ", imp.Namespace, imp.Name), refused)...)
	}
	return b
}

// contribution is what one source cluster puts into the member for one
// import: how many endpoints each of its slices holds, and how much of
// them the caps keep (boundMembers).
type contribution struct {
	key     aggregate.Key
	cluster string
	created time.Time
	sizes   []int
	// kept slices are kept, the last of them with lastKept endpoints.
	kept, lastKept int
}

// cut is the part of sl, the source's slices, that the caps keep; a
// slice cut short is a copy, so a slice built is never changed.
func (p *contribution) cut(sl []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	out := sl[:p.kept]
	if p.kept == 0 || len(out[p.kept-1].Endpoints) == p.lastKept {
		return out
	}
	out = slices.Clone(out)
	last := *out[p.kept-1]
	last.Endpoints = last.Endpoints[:p.lastKept]
	out[p.kept-1] = &last
	return out
}

// keptOf is what the caps keep of each part, as one list.
func keptOf(parts []*contribution) []int {
	out := make([]int, 0, 2*len(parts))
	for _, p := range parts {
		out = append(out, p.kept, p.lastKept)
	}
	return out
}

// boundMembers cuts what each source cluster puts into the member, over
// all its imports, to EndpointsPerMember endpoints and SlicesPerMember
// slices: its oldest exports keep theirs, in that order, and the newest
// are cut, so one member's many imports cost another a bounded amount
// and other members' are not touched. It sets what each part keeps and
// returns, per import, a note for each source cut.
func boundMembers(parts []*contribution, lim Limits) map[aggregate.Key][]string {
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b *contribution) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), a.created.Compare(b.created),
			cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
	})
	type budget struct{ endpoints, slices int }
	left := map[string]*budget{}
	notes := map[aggregate.Key][]string{}
	for _, p := range parts {
		b := left[p.cluster]
		if b == nil {
			b = &budget{endpoints: lim.EndpointsPerMember, slices: lim.SlicesPerMember}
			left[p.cluster] = b
		}
		offered, kept := 0, 0
		p.kept, p.lastKept = 0, 0
		for _, n := range p.sizes {
			offered += n
			if b.slices == 0 || b.endpoints == 0 {
				continue
			}
			n = min(n, b.endpoints)
			b.slices--
			b.endpoints -= n
			kept += n
			p.kept, p.lastKept = p.kept+1, n
		}
		if p.kept < len(p.sizes) || kept < offered {
			notes[p.key] = append(notes[p.key], fmt.Sprintf(
				"cluster %s: %d of its %d endpoints not imported: past its cap in this cluster of %d endpoints and %d EndpointSlices over all its imports, which its older exports take first",
				p.cluster, offered-kept, offered, lim.EndpointsPerMember, lim.SlicesPerMember))
		}
	}
	return notes
}

// serviceImport is the ServiceImport of imp in a member, st its state
// there, with its status (importStatus): a ClusterSetIP import has the
// addresses of its derived Service and their families, a Headless one the
// families of its sources' endpoints.
func serviceImport(imp aggregate.Import, st ImportState, cuts []string) *mcsv1beta1.ServiceImport {
	si := &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Name: imp.Name, Namespace: imp.Namespace, Labels: baseLabels(imp.Name)},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type:                  mcsv1beta1.ServiceImportType(imp.Type),
			SessionAffinity:       corev1.ServiceAffinity(imp.SessionAffinity),
			SessionAffinityConfig: affinityConfig(imp.SessionAffinityConfig),
			InternalTrafficPolicy: optional[corev1.ServiceInternalTrafficPolicy](imp.InternalTrafficPolicy),
			TrafficDistribution:   optional[string](imp.TrafficDistribution),
		},
	}
	for _, p := range imp.Ports {
		si.Spec.Ports = append(si.Spec.Ports, mcsv1beta1.ServicePort{
			Name: p.Name, Protocol: corev1.Protocol(p.Protocol), Port: p.Port, AppProtocol: optional[string](p.AppProtocol),
		})
	}
	if imp.Type == aggregate.ImportClusterSetIP {
		si.Spec.IPs, si.Spec.IPFamilies = importIPs(st.ClusterIPs)
	} else {
		si.Spec.IPFamilies = endpointFamilies(imp, st.Endpoints)
	}
	si.Status = importStatus(imp, si.Spec.IPs, cuts)
	exportedMeta(si, imp)
	return si
}

// exportedMeta puts the import's exported labels and annotations on si,
// and lists their keys in its annotations. The aggregator left out every
// key reserved for the controller, so none replaces one of si's own.
func exportedMeta(si *mcsv1beta1.ServiceImport, imp aggregate.Import) {
	if len(imp.Labels) == 0 && len(imp.Annotations) == 0 {
		return
	}
	for k, v := range imp.Labels {
		if _, own := si.Labels[k]; !own {
			si.Labels[k] = v
		}
	}
	si.Annotations = maps.Clone(imp.Annotations)
	if si.Annotations == nil {
		si.Annotations = map[string]string{}
	}
	if len(imp.Labels) > 0 {
		si.Annotations[AnnotationExportedLabels] = strings.Join(slices.Sorted(maps.Keys(imp.Labels)), ",")
	}
	if len(imp.Annotations) > 0 {
		si.Annotations[AnnotationExportedAnnotations] = strings.Join(slices.Sorted(maps.Keys(imp.Annotations)), ",")
	}
}

// importIPs keeps the valid addresses of the derived Service's
// ClusterIPs, in their order (the first is the primary family), at most
// one per family, and their families.
func importIPs(clusterIPs []string) ([]string, []corev1.IPFamily) {
	var ips []string
	var families []corev1.IPFamily
	for _, s := range clusterIPs {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || len(ips) == maxImportIPs {
			continue
		}
		f := corev1.IPv6Protocol
		if a.Unmap().Is4() {
			f = corev1.IPv4Protocol
		}
		if slices.Contains(families, f) {
			continue
		}
		ips, families = append(ips, a.Unmap().String()), append(families, f)
	}
	return ips, families
}

// derivedService is the selectorless Service kube-proxy programs the
// ClusterSetIP of imp with; its endpoints are the slices of this package.
// A Service of several ports must name each, so an unnamed port merged
// with named ones from other exports is left out of it (and refused).
func derivedService(imp aggregate.Import, name string) (*corev1.Service, []string) {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: imp.Namespace, Labels: baseLabels(imp.Name)},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicyPreferDualStack),
			SessionAffinity:       corev1.ServiceAffinity(imp.SessionAffinity),
			SessionAffinityConfig: affinityConfig(imp.SessionAffinityConfig),
			InternalTrafficPolicy: optional[corev1.ServiceInternalTrafficPolicy](imp.InternalTrafficPolicy),
			TrafficDistribution:   optional[string](imp.TrafficDistribution),
		},
	}
	var refused []string
	for _, p := range imp.Ports {
		if p.Name == "" && len(imp.Ports) > 1 {
			refused = append(refused, fmt.Sprintf("import %s/%s: port %s/%d: unnamed among named ports, left out of the derived Service",
				imp.Namespace, imp.Name, p.Protocol, p.Port))
			continue
		}
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{
			Name: p.Name, Protocol: corev1.Protocol(p.Protocol), Port: p.Port,
			TargetPort: intstr.FromInt32(p.Port), AppProtocol: optional[string](p.AppProtocol),
		})
	}
	return s, refused
}

// sourceSlices are the slices of one source: per port set and family,
// chunks of MaxEndpointsPerSlice endpoints.
func sourceSlices(imp aggregate.Import, derived string, src source) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, g := range src.groups {
		for _, f := range []struct {
			t   discoveryv1.AddressType
			eps []endpoint
		}{{discoveryv1.AddressTypeIPv4, g.ipv4}, {discoveryv1.AddressTypeIPv6, g.ipv6}} {
			for i, chunk := range chunks(f.eps, MaxEndpointsPerSlice) {
				s := newSlice(imp, derived, src.cluster, f.t, g, i)
				for _, e := range chunk {
					s.Endpoints = append(s.Endpoints, sliceEndpoint(e))
				}
				out = append(out, s)
			}
		}
	}
	return out
}

func newSlice(imp aggregate.Import, derived, cluster string, t discoveryv1.AddressType, g *group, index int) *discoveryv1.EndpointSlice {
	labels := baseLabels(imp.Name)
	labels[LabelSliceManagedBy] = ManagedByValue
	labels[LabelSourceCluster] = cluster
	labels[LabelKubeServiceName] = derived
	if imp.Type == aggregate.ImportHeadless {
		labels[LabelHeadless] = ""
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: sliceName(derived, cluster, t, g.key, index), Namespace: imp.Namespace, Labels: labels},
		AddressType: t,
	}
	for _, p := range g.ports {
		s.Ports = append(s.Ports, *p.DeepCopy())
	}
	return s
}

// sliceEndpoint writes an endpoint as ready, serving and not terminating:
// only such endpoints are read.
func sliceEndpoint(e endpoint) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{
		Addresses:  []string{e.address},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
	}
	if e.hostname != "" {
		ep.Hostname = ptr.To(e.hostname)
	}
	if e.nodeName != "" {
		ep.NodeName = ptr.To(e.nodeName)
	}
	return ep
}

func chunks[T any](s []T, n int) [][]T {
	var out [][]T
	for len(s) > 0 {
		k := min(n, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func affinityConfig(c *aggregate.SessionAffinityConfig) *corev1.SessionAffinityConfig {
	if c == nil {
		return nil
	}
	return &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(c.TimeoutSeconds)}}
}

// optional is nil for "" (a field the API leaves unset), else a pointer.
func optional[T ~string](s string) *T {
	if s == "" {
		return nil
	}
	return ptr.To(T(s))
}

// endpointFamilies are the address families of the sources' EndpointSlices
// of a Headless import, IPv4 first; none while no source has a slice.
// Clients (the upstream MCS conformance suite among them) read
// spec.ipFamilies to know which records to ask for.
func endpointFamilies(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice) []corev1.IPFamily {
	has := map[discoveryv1.AddressType]bool{}
	for _, cluster := range imp.Clusters {
		for _, s := range endpoints[cluster] {
			if s != nil {
				has[s.AddressType] = true
			}
		}
	}
	var out []corev1.IPFamily
	if has[discoveryv1.AddressTypeIPv4] {
		out = append(out, corev1.IPv4Protocol)
	}
	if has[discoveryv1.AddressTypeIPv6] {
		out = append(out, corev1.IPv6Protocol)
	}
	return out
}
