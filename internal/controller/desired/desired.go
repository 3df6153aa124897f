package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// Input is what the informers know about one Cluster in the namespace
// of a GatewayDNS. Compute is a pure function of a list of these, so
// every case of bad input is a table test without any client.
type Input struct {
	Name     string
	Selected bool
	// OwnedBy is "<ns>/<name>" of an older GatewayDNS that selects this
	// cluster too and so publishes its names; empty when the names are ours.
	OwnedBy string
	// APIHost is spec.controlPlaneEndpoint.host of the Cluster.
	APIHost string
	// AccessReason is empty when there is a client for the workload cluster,
	// else why there is none (KubeconfigMissing, KubeconfigInvalid).
	AccessReason, AccessMessage string
	// ServiceSynced is true once the gateway Service informer of this
	// cluster has listed; false means the cluster is (still) unreachable.
	ServiceSynced bool
	// Service is the gateway Service; nil when it does not exist.
	Service *corev1.Service
	// Deleting is true when the Cluster has a deletionTimestamp: it loses
	// its names at once, the multi-cluster name included.
	Deleting bool
	// Unavailable is empty while the Cluster counts as available by its
	// Cluster API conditions, else why not (Availability).
	Unavailable string
	// EndpointsSynced is true once the informer on the gateway Service's
	// EndpointSlices has listed; ReadyEndpoints counts their endpoints
	// that take traffic (ReadyEndpoints).
	EndpointsSynced bool
	ReadyEndpoints  int
	// Endpoints are the EndpointSlices of the headless Service (read
	// only), for resolutionType headless; valid when EndpointsSynced.
	Endpoints []*discoveryv1.EndpointSlice
	// LastHeadless is what the last sync published of this cluster's
	// headless Service (Result.Headless), if anything: what stays
	// published while the cluster's state is unknown.
	LastHeadless *contract.HeadlessEndpoints
	// NamesSynced is true once the informer on the cluster's Services
	// (spec.names) has listed; Names are its LoadBalancer Services
	// annotated with contract.AnnotationFQDN (AddNames).
	NamesSynced bool
	Names       []NameService
}

// Result is what one GatewayDNS wants in the xcc-dns namespace of
// every opted-in cluster of its namespace.
type Result struct {
	// Slices carry no namespace; the same set goes to every target cluster.
	Slices []*discoveryv1.EndpointSlice
	// Keep names the source clusters whose gateway slices stay as they are
	// (not known now: unreachable, no kubeconfig): last known good wins.
	Keep map[string]bool
	// Clusters has one status entry per selected cluster, sorted by name.
	Clusters []v1alpha1.ClusterStatus
	// ConflictOwners maps a cluster to the GatewayDNS that owns its names.
	ConflictOwners map[string]string
	// Locality is the policy of the multi-cluster name, and Sources its
	// source clusters with their hosts (ready when healthy), sorted by
	// cluster, as serve reads them from the slices: what status's
	// answered is computed from (contract.Answered).
	Locality contract.Locality
	Sources  []contract.SourceHosts
	// Headless is, for resolutionType headless, the ready endpoints
	// published per source cluster (kept ones included): the next sync's
	// LastHeadless.
	Headless map[string]contract.HeadlessEndpoints
	// Names has a status entry per name claimed with the fqdn annotation
	// (AddNames), sorted by name.
	Names []v1alpha1.NameStatus
	// Limits are those Compute applied, defaults filled in; AddNames
	// applies them too.
	Limits Limits
}

// Compute is ComputeLimited with the default Limits.
func Compute(gd *v1alpha1.GatewayDNS, zone string, allowed cidr.List, clusters []Input) Result {
	return ComputeLimited(gd, zone, allowed, Limits{}, clusters)
}

// ComputeLimited turns a GatewayDNS and what is known about the Clusters of
// its namespace into the EndpointSlices to publish and a status per cluster.
// Gateway and control-plane addresses outside allowed (the operator's
// --allowed-cidrs; empty allows any) are refused. One cluster's bad input
// only ever affects that cluster's entry, but for its fair share of a
// per-GatewayDNS limit (limits; zero fields are the defaults).
//
// It admits each selected cluster (admit), then adds every kind of name
// in turn (kinds). The names the Services claim need the operator's
// grants and the names older GatewayDNS own: AddNames adds that kind.
func ComputeLimited(gd *v1alpha1.GatewayDNS, zone string, allowed cidr.List, limits Limits, clusters []Input) Result {
	c := newComputation(gd, zone, allowed, limits.withDefaults(), clusters)
	c.out = &Result{Keep: map[string]bool{}, ConflictOwners: map[string]string{}, Headless: map[string]contract.HeadlessEndpoints{},
		Limits: c.limits, Locality: c.locality}
	c.admit()
	for _, k := range kinds {
		k.add(c)
	}
	c.noteLocality()
	c.finish()
	return *c.out
}

// computation is one run of the kinds over the clusters of a GatewayDNS:
// the GatewayDNS's spec read once, and the Result being built.
type computation struct {
	gd      *v1alpha1.GatewayDNS
	zone    string
	allowed cidr.List
	limits  Limits
	// clusters are every Input, sorted by name.
	clusters []Input
	// entries has one per selected cluster, in the order of clusters;
	// admitted those of them the kinds publish (admit).
	entries, admitted []*entry
	out               *Result

	headless bool
	// svc is spec.service as "<ns>/<name>", unless refErr says why not.
	svc    string
	refErr error
	// ttl is spec.ttl, gatewaysTTL spec.gatewaysTTL; 0 when unset.
	ttl, gatewaysTTL int32
	// locality is the policy of the multi-cluster names, unless
	// localityErr says why there is none.
	locality    contract.Locality
	localityErr error
	// last is the status entry each cluster had, by name.
	last map[string]v1alpha1.ClusterStatus
	// names are the inputs of the names kind; nil unless AddNames runs it.
	names *nameInputs
}

func newComputation(gd *v1alpha1.GatewayDNS, zone string, allowed cidr.List, limits Limits, clusters []Input) *computation {
	c := &computation{gd: gd, zone: zone, allowed: allowed, limits: limits,
		headless: gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless, last: map[string]v1alpha1.ClusterStatus{}}
	c.clusters = slices.Clone(clusters)
	sort.Slice(c.clusters, func(i, j int) bool { return c.clusters[i].Name < c.clusters[j].Name })
	ns, name, err := contract.ParseRef(gd.Spec.Service)
	c.svc, c.refErr = ns+"/"+name, err
	if gd.Spec.TTL != nil {
		c.ttl = *gd.Spec.TTL
	}
	if gd.Spec.GatewaysTTL != nil {
		c.gatewaysTTL = *gd.Spec.GatewaysTTL
	}
	c.locality, c.localityErr = contract.LocalityFromAPI(gd.Spec.Locality)
	for _, st := range gd.Status.Clusters {
		c.last[st.Name] = st
	}
	return c
}

// entry is the status entry of one selected cluster while the kinds fill
// it in, and what one kind leaves in it for a later one.
type entry struct {
	in *Input
	st v1alpha1.ClusterStatus
	// notes are added to the message of the status entry, in order.
	notes []string
	// gateway are the addresses the cluster's gateway name publishes, live
	// (gatewayLive) or its last ones, kept: the multi-cluster name's too.
	gateway     contract.Addresses
	gatewayLive bool
}

// note adds a part to the entry's message.
func (e *entry) note(s string) { e.notes = append(e.notes, s) }

// message is the entry's message with its notes.
func (e *entry) message() string {
	if len(e.notes) == 0 {
		return e.st.Message
	}
	return strings.TrimPrefix(e.st.Message+"; "+strings.Join(e.notes, "; "), "; ")
}

// source is the Source of a slice of the cluster's own names.
func (c *computation) source(cluster string, kind contract.Kind, hostname string) contract.Source {
	return contract.Source{Namespace: c.gd.Namespace, GatewayDNS: c.gd.Name, Cluster: cluster, Kind: kind, Hostname: hostname, TTL: c.ttl}
}

// admit makes an entry for each selected cluster and refuses, with its
// reason, one none of whose names may be published: the namespace or
// cluster name is no label, an older GatewayDNS owns them, or the Cluster
// is being deleted. The others are admitted: the kinds publish them.
func (c *computation) admit() {
	nsErr := contract.ValidateLabel(c.gd.Namespace)
	for i := range c.clusters {
		in := &c.clusters[i]
		if !in.Selected {
			continue
		}
		e := &entry{in: in, st: v1alpha1.ClusterStatus{Name: in.Name}}
		c.entries = append(c.entries, e)
		switch {
		case nsErr != nil:
			e.st.Reason = ReasonInvalidNamespaceName
			e.st.Message = fmt.Sprintf("namespace %q cannot be a label of a published name: %v; no names published", c.gd.Namespace, nsErr)
		case contract.ValidateLabel(in.Name) != nil:
			e.st.Reason = ReasonInvalidClusterName
			e.st.Message = fmt.Sprintf("cluster name %q cannot be a label of a published name (lowercase letters, digits, '-', at most 63, not %q): refused, no names published", in.Name, "any")
		case in.OwnedBy != "":
			e.st.Reason = ReasonConflict
			e.st.Message = fmt.Sprintf("the names of this cluster are published by the older GatewayDNS %s", in.OwnedBy)
			c.out.ConflictOwners[in.Name] = in.OwnedBy
		case in.Deleting:
			e.st.Reason, e.st.HealthReason = ReasonClusterDeleting, v1alpha1.HealthReasonClusterDeleting
			e.st.Message = "the Cluster is being deleted; its names are removed"
		default:
			c.admitted = append(c.admitted, e)
		}
	}
}

// readService sets the status of a cluster whose Service (spec.service)
// cannot be read, and reports whether it can: the reference is bad, the
// resolution type unknown, the cluster unreachable (kept: its last names
// stay, as kept fills in) or the Service missing.
func (c *computation) readService(e *entry, kept func(*entry)) bool {
	switch rt := c.gd.Spec.ResolutionType; {
	case c.refErr != nil:
		e.st.Reason = ReasonInvalidServiceRef
		e.st.Message = fmt.Sprintf("spec.service: %v", c.refErr)
	case rt != "" && rt != v1alpha1.ResolutionTypeLoadBalancer && rt != v1alpha1.ResolutionTypeHeadless:
		e.st.Reason = ReasonUnsupportedResolutionType
		e.st.Message = fmt.Sprintf("resolutionType %q is not supported (only %q and %q)", rt,
			v1alpha1.ResolutionTypeLoadBalancer, v1alpha1.ResolutionTypeHeadless)
	case e.in.AccessReason != "":
		e.st.Reason, e.st.Message = e.in.AccessReason, e.in.AccessMessage+"; last published addresses kept"
		c.out.Keep[e.in.Name] = true
		kept(e)
	case !e.in.ServiceSynced:
		e.st.Reason = ReasonClusterUnreachable
		e.st.Message = fmt.Sprintf("Service %s not listed yet (cluster unreachable or connecting); last published addresses kept", c.svc)
		c.out.Keep[e.in.Name] = true
		kept(e)
	case e.in.Service == nil:
		e.st.Reason = ReasonServiceNotFound
		e.st.Message = fmt.Sprintf("Service %s not found in the workload cluster", c.svc)
	default:
		return true
	}
	return false
}

// noteLocality says on every entry that no multi-cluster name is
// published when spec.locality is bad: the API server validates it, but
// if a bad one slips through, no name rather than one serve refuses.
func (c *computation) noteLocality() {
	if c.localityErr == nil {
		return
	}
	for _, e := range c.entries {
		e.st.Healthy = false
		e.note("multi-cluster name not published: " + c.localityErr.Error())
	}
}

// finish writes the entries into the Result's status, with their notes,
// and sorts its slices.
func (c *computation) finish() {
	c.out.Clusters = c.out.Clusters[:0]
	if c.out.Clusters == nil && len(c.entries) > 0 {
		c.out.Clusters = make([]v1alpha1.ClusterStatus, 0, len(c.entries))
	}
	for _, e := range c.entries {
		st := e.st
		st.Message = e.message()
		c.out.Clusters = append(c.out.Clusters, st)
	}
	sort.Slice(c.out.Slices, func(i, j int) bool { return c.out.Slices[i].Name < c.out.Slices[j].Name })
}

// maxListedRefusals bounds the refused addresses a status message names:
// a Service may report any number, and the status is one etcd value.
const maxListedRefusals = 10

// listSome joins the first maxListedRefusals items and counts the rest.
func listSome(items []string) string {
	if len(items) <= maxListedRefusals {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListedRefusals], ", "), len(items)-maxListedRefusals)
}

// onlyAllowed moves the IPv4 and IPv6 addresses of a that lie outside
// allowed into a.Refused, saying why; an empty allowed keeps every one.
// Hostnames stay: a CNAME asserts no address of ours (its target answers
// for itself, and no PTR is ever derived from it), and load balancers that
// only report hostnames would otherwise be unusable with allowed CIDRs.
func onlyAllowed(a contract.Addresses, allowed cidr.List) contract.Addresses {
	if len(allowed) == 0 {
		return a
	}
	keep := func(addrs []string) []string {
		var out []string
		for _, s := range addrs {
			if ip, err := netip.ParseAddr(s); err == nil && allowed.Contains(ip) {
				out = append(out, s)
				continue
			}
			a.Refused = append(a.Refused, fmt.Sprintf("%s: not in the allowed CIDRs %s", s, allowed))
		}
		return out
	}
	a.Refused = slices.Clone(a.Refused)
	a.IPv4, a.IPv6 = keep(a.IPv4), keep(a.IPv6)
	return a
}
