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
	// Service and slices: equal digests, equal objects (Digest).
	Digests map[aggregate.Key]uint64
}

// Compute returns the desired objects of the member in.Cluster, built
// afresh: ComputeWith without a Memo.
func Compute(in Input) Objects { return ComputeWith(in, nil) }

// ComputeWith returns the desired objects of the member in.Cluster. With a
// Memo (one per member), an import whose inputs are those of the last
// call is not built again: its objects, and their digest, are the last
// ones, so a change among many imports costs the imports it touches.
func ComputeWith(in Input, memo *Memo) Objects {
	out := Objects{Digests: map[aggregate.Key]uint64{}}
	lim := in.Limits.orDefaults()
	memo = memo.start(in.Cluster, lim, in.AllowedCIDRs)
	defer memo.finish()
	var imports []aggregate.Import
	var parts []*contribution
	made := map[aggregate.Key]*built{}
	for _, imp := range in.Result.Imports {
		if !in.Namespaces[imp.Namespace] {
			continue
		}
		imports = append(imports, imp)
		b := memo.built(imp, in.Imports[imp.Key].Endpoints)
		if b == nil {
			b = build(in.Cluster, imp, in.Imports[imp.Key].Endpoints, lim, in.AllowedCIDRs)
			memo.keep(b)
		}
		made[imp.Key] = b
		if b.service != nil {
			out.Services = append(out.Services, b.service)
		}
		out.Refused = append(out.Refused, b.refused...)
		for _, p := range b.parts {
			// boundMembers cuts a copy: the built one is the memo's.
			cp := *p
			parts = append(parts, &cp)
		}
	}
	cuts := boundMembers(parts, lim)
	for _, imp := range imports {
		b, st := made[imp.Key], in.Imports[imp.Key]
		si := b.serviceImport(imp, st, cuts[imp.Key])
		out.Imports = append(out.Imports, si)
		for _, note := range cuts[imp.Key] {
			out.Refused = append(out.Refused, fmt.Sprintf("import %s/%s: %s", imp.Namespace, imp.Name, note))
		}
	}
	byImport := map[aggregate.Key][]*discoveryv1.EndpointSlice{}
	for _, p := range parts {
		out.Slices = append(out.Slices, p.slices...)
		byImport[p.key] = append(byImport[p.key], p.slices...)
	}
	for _, imp := range imports {
		out.Digests[imp.Key] = made[imp.Key].digestOf(byImport[imp.Key], len(cuts[imp.Key]) > 0)
	}
	slices.SortFunc(out.Slices, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out.Exports = exportStatuses(in)
	return out
}

// build makes what the member gets of imp before the caps over all its
// imports: the derived Service, each source's slices, and what was
// refused of them.
func build(member string, imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, lim Limits, allowed cidr.List) *built {
	// The inputs as they are now: a caller may change its map after.
	b := &built{imp: imp, endpoints: make(map[string][]*discoveryv1.EndpointSlice, len(endpoints))}
	for cluster, sl := range endpoints {
		b.endpoints[cluster] = slices.Clone(sl)
	}
	derived := DerivedServiceName(imp.Namespace, imp.Name)
	if imp.Type == aggregate.ImportClusterSetIP {
		b.service, b.refused = derivedService(imp, derived)
	}
	for _, cluster := range imp.Clusters {
		src, refused := readSource(cluster, cluster == member, endpoints[cluster], imp, lim, allowed)
		b.parts = append(b.parts, &contribution{key: imp.Key, cluster: cluster, created: imp.Created[cluster],
			slices: sourceSlices(imp, derived, src)})
		b.refused = append(b.refused, prefixAll(fmt.Sprintf("import %s/%s: ", imp.Namespace, imp.Name), refused)...)
	}
	return b
}

// contribution is what one source cluster puts into the member for one
// import: its slices.
type contribution struct {
	key     aggregate.Key
	cluster string
	created time.Time
	slices  []*discoveryv1.EndpointSlice
}

// boundMembers cuts what each source cluster puts into the member, over
// all its imports, to EndpointsPerMember endpoints and SlicesPerMember
// slices: its oldest exports keep theirs, in that order, and the newest
// are cut, so one member's many imports cost another a bounded amount
// and other members' are not touched. It returns, per import, a note for
// each source cut.
func boundMembers(parts []*contribution, lim Limits) map[aggregate.Key][]string {
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
		var keep []*discoveryv1.EndpointSlice
		for _, s := range p.slices {
			offered += len(s.Endpoints)
			if b.slices == 0 || b.endpoints == 0 {
				continue
			}
			if len(s.Endpoints) > b.endpoints {
				// A copy: the slice built may be a Memo's.
				cut := *s
				cut.Endpoints = s.Endpoints[:b.endpoints]
				s = &cut
			}
			b.slices--
			b.endpoints -= len(s.Endpoints)
			kept += len(s.Endpoints)
			keep = append(keep, s)
		}
		if len(keep) < len(p.slices) || kept < offered {
			notes[p.key] = append(notes[p.key], fmt.Sprintf(
				"cluster %s: %d of its %d endpoints not imported: past its cap in this cluster of %d endpoints and %d EndpointSlices over all its imports, which its older exports take first",
				p.cluster, offered-kept, offered, lim.EndpointsPerMember, lim.SlicesPerMember))
		}
		p.slices = keep
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
