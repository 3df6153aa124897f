package desired

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// Reasons in status.names[].reason (ReasonPublished and ReasonConflict too).
const (
	// ReasonNameRefused: the name lies outside what the operator granted
	// the GatewayDNS's namespace (its default <label>.<ns>.names.<zone>
	// and --name-grants); nothing is published for it.
	ReasonNameRefused = "NameRefused"
	// ReasonInvalidName: the annotation's value is no name that can be
	// claimed (not a DNS name, too long, a wildcard, the label "any").
	ReasonInvalidName = "InvalidName"
	// ReasonNoAddresses: no Service claiming the name has a valid
	// load-balancer address (none yet, or all refused).
	ReasonNoAddresses = "NoAddresses"
)

// KeepNamesKey is the key of State.Keep that keeps only the KindName
// slices of cluster as they are: its Services have not been listed yet
// (the informer is starting, or the kubeconfig may not list Services
// cluster-wide). A cluster name never holds a NUL.
func KeepNamesKey(cluster string) string { return cluster + "\x00names" }

// maxNameSources bounds the sources a status entry of a name lists.
const maxNameSources = 10

// NameService is a LoadBalancer Service of a workload cluster annotated
// with contract.AnnotationFQDN, as the informer keeps it, with the health
// of its endpoints.
type NameService struct {
	// Namespace and Name of the Service in the workload cluster.
	Namespace, Name string
	// Value is the annotation's value, as the tenant wrote it.
	Value   string
	Ingress []corev1.LoadBalancerIngress
	// EndpointsSynced and ReadyEndpoints are as Input's, for this Service.
	EndpointsSynced bool
	ReadyEndpoints  int
}

// AddNames adds to out (Compute's State for gd) the names the annotated
// Services of gd's selected clusters claim (spec.names): one KindName
// slice per (name, source cluster, address family), with the health and
// locality rules of the gateways name, and a status entry per name.
// owners maps a name to an older GatewayDNS of the namespace that claims
// it too ("<ns>/<name>"): then it is Conflict here. It returns the names
// gd claims (valid and granted), published or not, sorted.
func AddNames(out *State, gd *v1alpha1.GatewayDNS, domain string, allowed cidr.List, grants contract.Grants,
	clusters []Input, owners map[string]string) []string {
	if gd.Spec.Names == nil || !gd.Spec.Names.Enabled || gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless {
		return nil
	}
	loc, locErr := contract.LocalityFromAPI(gd.Spec.Locality)
	var ttl int32
	if gd.Spec.GatewaysTTL != nil {
		ttl = *gd.Spec.GatewaysTTL
	}
	published := map[string]bool{}
	for _, st := range out.Clusters {
		// Only a cluster whose names gd owns, and which is neither kept
		// (its name slices stay as they are) nor refused, is a source.
		published[st.Name] = st.Reason != ReasonConflict && st.Reason != ReasonInvalidClusterName &&
			st.Reason != ReasonInvalidNamespaceName && st.Reason != ReasonClusterDeleting && !out.Keep[st.Name]
	}
	lastHealth := map[string]bool{}
	for _, n := range gd.Status.Names {
		for _, s := range n.Sources {
			lastHealth[n.Name+" "+s] = n.Reason == ReasonPublished && n.HealthySources > 0
		}
	}

	type source struct {
		cluster, service string // service: <ns>/<name> in the cluster
		addrs            contract.Addresses
		h                health
	}
	type entry struct {
		st      v1alpha1.NameStatus
		sources []source
		notes   []string
	}
	byName := map[string]*entry{}
	get := func(name string) *entry {
		e := byName[name]
		if e == nil {
			e = &entry{st: v1alpha1.NameStatus{Name: name}}
			byName[name] = e
		}
		return e
	}
	var claimed []string
	sorted := slices.Clone(clusters)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	limits := out.Limits.withDefaults()
	within, cut := limitNames(sorted, published, gd.Namespace, domain, grants, limits)
	for _, c := range sorted {
		if !c.Selected || !published[c.Name] {
			continue
		}
		if !c.NamesSynced {
			// What it published stays until its Services are listed.
			out.Keep[KeepNamesKey(c.Name)] = true
			for i := range out.Clusters {
				if out.Clusters[i].Name == c.Name {
					out.Clusters[i].Message = strings.TrimPrefix(out.Clusters[i].Message+"; names: Services not listed yet (the kubeconfig needs list and watch on Services and EndpointSlices of every namespace); last published names kept", "; ")
				}
			}
			continue
		}
		svcs := slices.Clone(c.Names)
		sort.Slice(svcs, func(i, j int) bool {
			return svcs[i].Namespace+"/"+svcs[i].Name < svcs[j].Namespace+"/"+svcs[j].Name
		})
		for _, svc := range svcs {
			ref := c.Name + "/" + svc.Namespace + "/" + svc.Name
			name, err := contract.NameHostname(svc.Value, gd.Namespace, domain, grants)
			if err != nil {
				// Keyed by the value (bounded: a tenant may write anything).
				e := get(bounded(svc.Value, 253))
				reason := ReasonInvalidName
				if errors.Is(err, contract.ErrNameRefused) {
					reason = ReasonNameRefused
				}
				if e.st.Reason == "" {
					e.st.Reason, e.st.Message = reason, err.Error()
				}
				e.st.Sources = appendSource(e.st.Sources, ref)
				continue
			}
			if !within[c.Name][name] {
				// Over a limit: no entry (their number is the tenant's
				// choice); the cluster's entry says so.
				continue
			}
			e := get(name)
			if !slices.Contains(claimed, name) {
				claimed = append(claimed, name)
			}
			e.st.Sources = appendSource(e.st.Sources, ref)
			if owner := owners[name]; owner != "" {
				e.st.Reason, e.st.Message = ReasonConflict, "published by the older GatewayDNS "+owner
				continue
			}
			if slices.ContainsFunc(e.sources, func(s source) bool { return s.cluster == c.Name }) {
				// One Service per name and cluster: the first by namespace/name.
				e.notes = append(e.notes, fmt.Sprintf("Service %s ignored: the name is claimed in cluster %s by an earlier Service", ref, c.Name))
				continue
			}
			var ips, hosts []string
			for _, in := range svc.Ingress {
				if in.IP != "" {
					ips = append(ips, in.IP)
				}
				if in.Hostname != "" {
					hosts = append(hosts, in.Hostname)
				}
			}
			addrs := onlyAllowed(contract.Classify(ips, hosts, domain), allowed)
			if len(addrs.Refused) > 0 {
				e.notes = append(e.notes, ref+" refused: "+listSome(addrs.Refused))
			}
			if len(addrs.All()) == 0 {
				e.notes = append(e.notes, ref+": no valid load-balancer address")
				continue
			}
			if n := max(len(addrs.IPv4), len(addrs.IPv6), len(addrs.FQDN)); n > contract.MaxAddressesPerSlice {
				e.notes = append(e.notes, fmt.Sprintf("%s: %d addresses of one family, more than %d: not published", ref, n, contract.MaxAddressesPerSlice))
				continue
			}
			in := c
			in.EndpointsSynced, in.ReadyEndpoints = svc.EndpointsSynced, svc.ReadyEndpoints
			last := v1alpha1.ClusterStatus{}
			if healthy, seen := lastHealth[name+" "+ref]; seen {
				last.Healthy, last.HealthReason = healthy, v1alpha1.HealthReasonNoReadyEndpoints
				if healthy {
					last.HealthReason = v1alpha1.HealthReasonHealthy
				}
			}
			h := in.health(svc.Namespace+"/"+svc.Name, last)
			if !h.healthy {
				e.notes = append(e.notes, ref+" unhealthy: "+h.message)
			}
			e.sources = append(e.sources, source{cluster: c.Name, service: svc.Namespace + "/" + svc.Name, addrs: addrs, h: h})
		}
	}

	for i := range out.Clusters {
		st := &out.Clusters[i]
		msg := cut[st.Name]
		if msg == "" {
			continue
		}
		if st.Reason == ReasonPublished {
			st.Reason, st.Ready = ReasonTooManyNames, false
		}
		st.Message = strings.TrimPrefix(st.Message+"; names: "+bounded(msg, maxNameMessage), "; ")
	}

	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var statuses []v1alpha1.NameStatus
	for _, n := range names {
		e := byName[n]
		if e.st.Reason == "" {
			e.st.Reason = ReasonNoAddresses
			if len(e.sources) > 0 {
				e.st.Reason = ReasonPublished
			}
		}
		if e.st.Reason == ReasonPublished && locErr != nil {
			e.st.Reason, e.sources = ReasonNoAddresses, nil
			e.notes = append(e.notes, "not published: "+locErr.Error())
		}
		if e.st.Reason == ReasonPublished {
			for _, s := range e.sources {
				src := contract.Source{Namespace: gd.Namespace, GatewayDNS: gd.Name, Cluster: s.cluster, Kind: contract.KindName,
					Hostname: n, TTL: ttl, Locality: loc, Unhealthy: !s.h.healthy}
				out.Slices = append(out.Slices, contract.Build(src, s.addrs)...)
				if s.h.healthy {
					e.st.HealthySources++
				}
			}
		}
		if len(e.notes) > 0 {
			e.st.Message = strings.TrimPrefix(e.st.Message+"; "+listSome(e.notes), "; ")
		}
		e.st.Message = bounded(e.st.Message, maxNameMessage)
		statuses = append(statuses, e.st)
	}
	sort.Slice(out.Slices, func(i, j int) bool { return out.Slices[i].Name < out.Slices[j].Name })
	out.Names = statuses
	sort.Strings(claimed)
	return claimed
}

// appendSource adds ref to a status entry's sources, at most
// maxNameSources of them.
func appendSource(sources []string, ref string) []string {
	if len(sources) >= maxNameSources || slices.Contains(sources, ref) {
		return sources
	}
	return append(sources, ref)
}

// maxNameMessage bounds the message of a name's status entry: it quotes
// annotation values, which a tenant may make of any length.
const maxNameMessage = 1024

// bounded cuts s to at most most bytes and says so.
func bounded(s string, most int) string {
	if len(s) > most {
		return strings.ToValidUTF8(s[:most], "") + "..."
	}
	return s
}

// limitNames applies the limits on names: of the distinct valid names
// the Services of each cluster claim (those AddNames would publish from
// it), the first NamesPerCluster by name; of those, at most
// NamesPerGatewayDNS together, each cluster in turn (pickNames). within
// holds, per cluster, the names it may publish; cut, per cluster whose
// names a limit cut, what its status entry says.
func limitNames(clusters []Input, published map[string]bool, namespace, domain string, grants contract.Grants,
	limits Limits) (within map[string]map[string]bool, cut map[string]string) {
	within, cut = map[string]map[string]bool{}, map[string]string{}
	var order []string
	var perCluster [][]string
	for _, c := range clusters {
		if !c.Selected || !published[c.Name] || !c.NamesSynced {
			continue
		}
		var names []string
		for _, svc := range c.Names {
			if name, err := contract.NameHostname(svc.Value, namespace, domain, grants); err == nil {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		names = slices.Compact(names)
		if len(names) > limits.NamesPerCluster {
			cut[c.Name] = capMessage("names claimed by its Services", len(names), limits.NamesPerCluster, FlagMaxNamesPerCluster,
				"the first by name published; not published from it: "+listSome(names[limits.NamesPerCluster:]))
			names = names[:limits.NamesPerCluster]
		}
		order = append(order, c.Name)
		perCluster = append(perCluster, names)
	}
	chosen := pickNames(perCluster, limits.NamesPerGatewayDNS)
	total := map[string]bool{}
	for _, names := range perCluster {
		for _, n := range names {
			total[n] = true
		}
	}
	for i, c := range order {
		within[c] = map[string]bool{}
		var lost []string
		for _, n := range perCluster[i] {
			if chosen[n] {
				within[c][n] = true
			} else {
				lost = append(lost, n)
			}
		}
		if len(lost) > 0 {
			cut[c] = strings.TrimPrefix(cut[c]+"; "+capMessage("names claimed in the clusters of this GatewayDNS", len(total),
				limits.NamesPerGatewayDNS, FlagMaxNamesPerGatewayDNS, "each cluster's names in turn published; not published from this one: "+listSome(lost)), "; ")
		}
	}
	return within, cut
}
