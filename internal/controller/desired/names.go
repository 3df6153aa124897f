package desired

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// KeepNamesKey is the key of Result.Keep that keeps only the KindName
// slices of cluster as they are: its Services have not been listed yet
// (the informer is starting, or the kubeconfig may not list Services
// cluster-wide). A cluster name never holds a NUL.
func KeepNamesKey(cluster string) string { return cluster + "\x00names" }

// maxNameSources bounds the sources a status entry of a name lists.
const maxNameSources = 10

// NameService is a LoadBalancer Service of a workload cluster annotated
// with contract.AnnotationFQDN (contract.NameService).
type NameService = contract.NameService

// AddNames adds to out (Compute's Result for gd) the names the annotated
// Services of gd's selected clusters claim (spec.names): one KindName
// slice per (name, source cluster, address family), with the health and
// locality rules of the gateways name, and a status entry per name.
// owners maps a name to an older GatewayDNS of the namespace that claims
// it too ("<ns>/<name>"): then it is Conflict here. It returns the names
// gd claims (valid and granted), published or not, sorted.
//
// It runs the names kind (addNames), which Compute skips for want of the
// grants and owners, on the status entries Compute made.
func AddNames(out *Result, gd *v1alpha1.GatewayDNS, zone string, allowed cidr.List, grants contract.Grants,
	clusters []Input, owners map[string]string) []string {
	if !namesEnabled(gd) {
		return nil
	}
	c := newComputation(gd, zone, allowed, out.Limits.withDefaults(), clusters)
	c.out = out
	for _, st := range out.Clusters {
		c.entries = append(c.entries, &entry{in: &Input{Name: st.Name}, st: st})
	}
	c.names = &nameInputs{grants: grants, owners: owners}
	addNames(c)
	c.finish()
	return c.names.claimed
}

// namesEnabled reports whether gd publishes the names Services claim:
// spec.names on a GatewayDNS of resolutionType loadBalancer.
func namesEnabled(gd *v1alpha1.GatewayDNS) bool {
	return gd.Spec.Names != nil && gd.Spec.Names.Enabled && gd.Spec.ResolutionType != v1alpha1.ResolutionTypeHeadless
}

// nameInputs are what the names kind needs besides the clusters, and
// what it gathers while it runs.
type nameInputs struct {
	grants contract.Grants
	owners map[string]string
	// byName is the status entry of each name (or refused value) and
	// its sources; claimed the names gd claims.
	byName  map[string]*nameEntry
	claimed []string
	// lastHealth says, by name and source ref, whether the source was
	// healthy in the last status.
	lastHealth map[string]bool
}

// nameEntry is the status entry of one name while it is gathered.
type nameEntry struct {
	st      v1alpha1.NameStatus
	sources []nameSource
	notes   []string
	// kept counts the sources of clusters that were not read, whose
	// slices stay (keptNames); keptHealthy those last seen healthy.
	kept, keptHealthy int32
}

// nameSource is one cluster's Service claiming a name.
type nameSource struct {
	cluster string
	addrs   contract.Addresses
	h       health
}

// addNames adds <name>.<ns>.names.<zone> and the granted names: for each
// cluster whose names gd publishes, the valid names its Services claim,
// within the limits (limitNames), then a status entry per name with its
// slices (publishNames). A cluster whose Services are not listed yet
// keeps what it published.
func addNames(c *computation) {
	if c.names == nil || !namesEnabled(c.gd) {
		return
	}
	n := c.names
	n.byName, n.lastHealth = map[string]*nameEntry{}, map[string]bool{}
	for _, st := range c.gd.Status.Names {
		for _, s := range st.Sources {
			n.lastHealth[st.Name+" "+s] = st.Reason == ReasonPublished && st.HealthySources > 0
		}
	}
	published := c.namesPublished()
	within, cut := limitNames(c.clusters, published, c.gd.Namespace, c.zone, n.grants, c.limits)
	for _, in := range c.clusters {
		if in.Selected && c.out.Keep[in.Name] {
			c.keptNames(in.Name)
		}
		if !in.Selected || !published[in.Name] {
			continue
		}
		if !in.NamesSynced {
			c.keepNames(in.Name)
			c.keptNames(in.Name)
			continue
		}
		svcs := slices.Clone(in.Names)
		sort.Slice(svcs, func(i, j int) bool {
			return svcs[i].Namespace+"/"+svcs[i].Name < svcs[j].Namespace+"/"+svcs[j].Name
		})
		for _, svc := range svcs {
			c.claimName(in, svc, within[in.Name])
		}
	}
	c.noteNamesCut(cut)
	c.publishNames()
	sort.Strings(n.claimed)
}

// namesPublished says, by cluster, whether its names are gd's to publish:
// gd owns them, and the cluster is neither kept (its name slices stay as
// they are) nor refused.
func (c *computation) namesPublished() map[string]bool {
	published := map[string]bool{}
	for _, e := range c.entries {
		st := e.st
		published[st.Name] = st.Reason != ReasonConflict && st.Reason != ReasonInvalidClusterName &&
			st.Reason != ReasonInvalidNamespaceName && st.Reason != ReasonClusterDeleting && !c.out.Keep[st.Name]
	}
	return published
}

// keepNames keeps what cluster published until its Services are listed.
func (c *computation) keepNames(cluster string) {
	c.out.Keep[KeepNamesKey(cluster)] = true
	for _, e := range c.entries {
		if e.st.Name == cluster {
			e.note("names: Services not listed yet (the kubeconfig needs list and watch on Services and EndpointSlices of every namespace); last published names kept")
		}
	}
}

// keptNames carries the last status entries of the names cluster
// published: its name slices stay while it cannot be read (Keep), so a
// name that answers keeps an entry saying from which sources and why.
func (c *computation) keptNames(cluster string) {
	n := c.names
	for _, last := range c.gd.Status.Names {
		if last.Reason != ReasonPublished {
			continue
		}
		for _, ref := range last.Sources {
			if !strings.HasPrefix(ref, cluster+"/") {
				continue
			}
			e := n.entry(last.Name)
			e.st.Sources = appendSource(e.st.Sources, ref)
			e.kept++
			if n.lastHealth[last.Name+" "+ref] {
				e.keptHealthy++
			}
			e.notes = append(e.notes, ref+": cluster not read; last published addresses kept")
			if !slices.Contains(n.claimed, last.Name) {
				n.claimed = append(n.claimed, last.Name)
			}
		}
	}
}

// entry returns the status entry of name, made on first use.
func (n *nameInputs) entry(name string) *nameEntry {
	e := n.byName[name]
	if e == nil {
		e = &nameEntry{st: v1alpha1.NameStatus{Name: name}}
		n.byName[name] = e
	}
	return e
}

// claimName reads the name one Service of cluster in claims: refused
// (entry keyed by the value), over a limit (no entry), owned by an older
// GatewayDNS (Conflict), claimed already in the cluster, or a source of
// the name when it has an address.
func (c *computation) claimName(in Input, svc NameService, within map[string]bool) {
	n := c.names
	ref := in.Name + "/" + svc.Namespace + "/" + svc.Name
	name, err := contract.NameHostname(svc.Value, c.gd.Namespace, c.zone, n.grants)
	if err != nil {
		// Keyed by the value (bounded: a tenant may write anything).
		e := n.entry(bounded(svc.Value, 253))
		reason := ReasonInvalidName
		if errors.Is(err, contract.ErrNameRefused) {
			reason = ReasonNameRefused
		}
		if e.st.Reason == "" {
			e.st.Reason, e.st.Message = reason, err.Error()
		}
		e.st.Sources = appendSource(e.st.Sources, ref)
		return
	}
	if !within[name] {
		// Over a limit: no entry (their number is the tenant's choice);
		// the cluster's entry says so.
		return
	}
	e := n.entry(name)
	if !slices.Contains(n.claimed, name) {
		n.claimed = append(n.claimed, name)
	}
	e.st.Sources = appendSource(e.st.Sources, ref)
	if owner := n.owners[name]; owner != "" {
		e.st.Reason, e.st.Message = ReasonConflict, "published by the older GatewayDNS "+owner
		return
	}
	if slices.ContainsFunc(e.sources, func(s nameSource) bool { return s.cluster == in.Name }) {
		// One Service per name and cluster: the first by namespace/name.
		e.notes = append(e.notes, fmt.Sprintf("Service %s ignored: the name is claimed in cluster %s by an earlier Service", ref, in.Name))
		return
	}
	if src, ok := c.nameSource(in, svc, ref, name, e); ok {
		e.sources = append(e.sources, src)
	}
}

// nameSource reads the load-balancer addresses of a Service claiming
// name under the gateway's rules, and its health (Input.health, the
// Service's endpoints standing for the gateway's); ok is false, with a
// note on e, when it has none to publish.
func (c *computation) nameSource(in Input, svc NameService, ref, name string, e *nameEntry) (nameSource, bool) {
	var ips, hosts []string
	for _, ing := range svc.Ingress {
		if ing.IP != "" {
			ips = append(ips, ing.IP)
		}
		if ing.Hostname != "" {
			hosts = append(hosts, ing.Hostname)
		}
	}
	addrs := onlyAllowed(contract.Classify(ips, hosts, c.zone), c.allowed)
	if len(addrs.Refused) > 0 {
		e.notes = append(e.notes, ref+" refused: "+listSome(addrs.Refused))
	}
	if len(addrs.All()) == 0 {
		e.notes = append(e.notes, ref+": no valid load-balancer address")
		return nameSource{}, false
	}
	if n := max(len(addrs.IPv4), len(addrs.IPv6), len(addrs.FQDN)); n > contract.MaxAddressesPerSlice {
		e.notes = append(e.notes, fmt.Sprintf("%s: %d addresses of one family, more than %d: not published", ref, n, contract.MaxAddressesPerSlice))
		return nameSource{}, false
	}
	in.EndpointsSynced, in.ReadyEndpoints = svc.EndpointsSynced, svc.ReadyEndpoints
	last := v1alpha1.ClusterStatus{}
	if healthy, seen := c.names.lastHealth[name+" "+ref]; seen {
		last.Healthy, last.HealthReason = healthy, v1alpha1.HealthReasonNoReadyEndpoints
		if healthy {
			last.HealthReason = v1alpha1.HealthReasonHealthy
		}
	}
	h := in.health(svc.Namespace+"/"+svc.Name, last)
	if !h.healthy {
		e.notes = append(e.notes, ref+" unhealthy: "+h.message)
	}
	return nameSource{cluster: in.Name, addrs: addrs, h: h}, true
}

// noteNamesCut says, on the entry of each cluster whose names a limit
// cut, which were not published.
func (c *computation) noteNamesCut(cut map[string]string) {
	for _, e := range c.entries {
		msg := cut[e.st.Name]
		if msg == "" {
			continue
		}
		if e.st.Reason == ReasonPublished {
			e.st.Reason, e.st.Ready = ReasonTooManyNames, false
		}
		e.note("names: " + bounded(msg, maxNameMessage))
	}
}

// publishNames decides the reason of each name's status entry, adds the
// slices of each published one, and sets Result.Names, sorted by name.
func (c *computation) publishNames() {
	n := c.names
	names := make([]string, 0, len(n.byName))
	for name := range n.byName {
		names = append(names, name)
	}
	sort.Strings(names)
	var statuses []v1alpha1.NameStatus
	for _, name := range names {
		e := n.byName[name]
		if e.st.Reason == "" {
			e.st.Reason = ReasonNoAddresses
			if len(e.sources) > 0 || e.kept > 0 {
				e.st.Reason = ReasonPublished
			}
		}
		if e.st.Reason == ReasonPublished && c.localityErr != nil {
			e.st.Reason, e.sources = ReasonNoAddresses, nil
			e.notes = append(e.notes, "not published: "+c.localityErr.Error())
		}
		if e.st.Reason == ReasonPublished {
			e.st.HealthySources += e.keptHealthy
			for _, s := range e.sources {
				src := contract.Source{Namespace: c.gd.Namespace, GatewayDNS: c.gd.Name, Cluster: s.cluster, Kind: contract.KindName,
					Hostname: name, TTL: c.gatewaysTTL, Locality: c.locality, Unhealthy: !s.h.healthy}
				c.out.Slices = append(c.out.Slices, contract.Build(src, s.addrs)...)
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
	c.out.Names = statuses
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
func limitNames(clusters []Input, published map[string]bool, namespace, zone string, grants contract.Grants,
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
			if name, err := contract.NameHostname(svc.Value, namespace, zone, grants); err == nil {
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
