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

// Reasons in status.clusters[].reason. README.md says what an operator does about each.
const (
	ReasonPublished                 = "Published"
	ReasonInvalidClusterName        = "InvalidClusterName"
	ReasonConflict                  = "Conflict"
	ReasonInvalidServiceRef         = "InvalidServiceRef"
	ReasonUnsupportedResolutionType = "UnsupportedResolutionType"
	ReasonKubeconfigMissing         = "KubeconfigMissing"
	ReasonKubeconfigInvalid         = "KubeconfigInvalid"
	ReasonKubeconfigRefused         = "KubeconfigRefused"
	ReasonClusterUnreachable        = "ClusterUnreachable"
	ReasonServiceNotFound           = "ServiceNotFound"
	ReasonServiceNotLoadBalancer    = "ServiceNotLoadBalancer"
	ReasonNoLoadBalancerIngress     = "NoLoadBalancerIngress"
	ReasonNoValidAddresses          = "NoValidAddresses"
	ReasonAddressNotAllowed         = "AddressNotAllowed"
	ReasonTooManyAddresses          = "TooManyAddresses"
	ReasonInvalidNamespaceName      = "InvalidNamespaceName"
	// ReasonAddressConflict: another cluster publishes one of this
	// cluster's addresses too. Its names are still published, but serve
	// publishes no PTR for a shared address (either cluster could be the
	// one lying about it). Conflict instead means an older GatewayDNS owns
	// the cluster's names.
	ReasonAddressConflict = "AddressConflict"
	// ReasonClusterDeleting: the Cluster has a deletionTimestamp; its
	// names are removed at once rather than when it is gone.
	ReasonClusterDeleting = "ClusterDeleting"
	// ReasonServiceNotHeadless: resolutionType headless names a Service
	// whose clusterIP is not None; nothing of it is published.
	ReasonServiceNotHeadless = "ServiceNotHeadless"
	// ReasonTooManyEndpoints: a headless Service has more ready endpoints
	// of one port set and address family than a slice may carry
	// (contract.MaxAddressesPerSlice); the last published ones stay.
	ReasonTooManyEndpoints = "TooManyEndpoints"
	// ReasonClusterCutOff: what the workload cluster's API server
	// returned passed a limit on reads (too many objects, too large a
	// response): its informers are stopped for a while and its last
	// published names kept, as for an unreachable cluster.
	ReasonClusterCutOff = "ClusterCutOff"
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
	// headless Service (State.Headless), if anything: what stays
	// published while the cluster's state is unknown.
	LastHeadless *contract.HeadlessEndpoints
	// NamesSynced is true once the informer on the cluster's Services
	// (spec.names) has listed; Names are its LoadBalancer Services
	// annotated with contract.AnnotationFQDN (AddNames).
	NamesSynced bool
	Names       []NameService
}

// State is what one GatewayDNS wants in the xcc-dns namespace of
// every opted-in cluster of its namespace.
type State struct {
	// Slices carry no namespace; the same set goes to every target cluster.
	Slices []*discoveryv1.EndpointSlice
	// Keep names the source clusters whose gateway slices stay as they are
	// (unknown state: unreachable, no kubeconfig): last known good wins.
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
func Compute(gd *v1alpha1.GatewayDNS, domain string, allowed cidr.List, clusters []Input) State {
	return ComputeLimited(gd, domain, allowed, Limits{}, clusters)
}

// ComputeLimited turns a GatewayDNS and what is known about the Clusters of
// its namespace into the EndpointSlices to publish and a status per cluster.
// Gateway and control-plane addresses outside allowed (the operator's
// --allowed-cidrs; empty allows any) are refused. One cluster's bad input
// only ever affects that cluster's entry, but for its fair share of a
// per-GatewayDNS limit (limits; zero fields are the defaults).
func ComputeLimited(gd *v1alpha1.GatewayDNS, domain string, allowed cidr.List, limits Limits, clusters []Input) State {
	limits = limits.withDefaults()
	out := State{Keep: map[string]bool{}, ConflictOwners: map[string]string{}, Headless: map[string]contract.HeadlessEndpoints{}, Limits: limits}
	isHeadless := gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless
	sorted := slices.Clone(clusters)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	svcNS, svcName, refErr := contract.ParseRef(gd.Spec.Service)
	nsErr := contract.ValidateLabel(gd.Namespace)
	var ttl int32
	if gd.Spec.TTL != nil {
		ttl = *gd.Spec.TTL
	}
	source := func(cluster string, kind contract.Kind, hostname string) contract.Source {
		return contract.Source{Namespace: gd.Namespace, GatewayDNS: gd.Name, Cluster: cluster, Kind: kind, Hostname: hostname, TTL: ttl}
	}
	// The multi-cluster name *.<gd>.<ns>.gateways.<domain>: the same
	// addresses as each cluster's gateway name, with health and locality.
	loc, locErr := contract.LocalityFromAPI(gd.Spec.Locality)
	out.Locality = loc
	var gwTTL int32
	if gd.Spec.GatewaysTTL != nil {
		gwTTL = *gd.Spec.GatewaysTTL
	}
	last := map[string]v1alpha1.ClusterStatus{}
	for _, st := range gd.Status.Clusters {
		last[st.Name] = st
	}
	gateways := func(cluster string, addrs contract.Addresses, h health) {
		if locErr != nil {
			return
		}
		src := contract.Source{Namespace: gd.Namespace, GatewayDNS: gd.Name, Cluster: cluster, Kind: contract.KindGateways,
			Hostname: contract.GatewaysHostname(gd.Name, gd.Namespace, domain), TTL: gwTTL, Locality: loc, Unhealthy: !h.healthy}
		out.Slices = append(out.Slices, contract.Build(src, addrs)...)
		sh := contract.SourceHosts{Cluster: cluster}
		if h.healthy {
			sh.Ready = addrs.All()
		} else {
			sh.Unready = addrs.All()
		}
		out.Sources = append(out.Sources, sh)
	}
	// The headless names <gd>.<ns>.services.<domain> and below: the ready
	// pods of each cluster, with health and locality as above, published
	// once every cluster's are known (the limit per GatewayDNS is shared
	// between them: publishHeadless).
	var pending []pendingHeadless
	headless := func(cluster string, eps contract.HeadlessEndpoints, h health) {
		// Its status entry is appended after this call.
		pending = append(pending, pendingHeadless{cluster: cluster, eps: eps, h: h, status: len(out.Clusters)})
	}
	publishHeadless := func(cluster string, eps contract.HeadlessEndpoints, h health) {
		out.Headless[cluster] = eps
		if locErr != nil || eps.Len() == 0 {
			return
		}
		src := contract.Source{Namespace: gd.Namespace, GatewayDNS: gd.Name, Cluster: cluster, Kind: contract.KindHeadless,
			Hostname: contract.HeadlessHostname(gd.Name, gd.Namespace, domain), TTL: ttl, Locality: loc, Unhealthy: !h.healthy}
		out.Slices = append(out.Slices, contract.BuildHeadless(src, eps)...)
		sh := contract.SourceHosts{Cluster: cluster}
		for _, g := range eps.Groups {
			for _, e := range slices.Concat(g.IPv4, g.IPv6) {
				if h.healthy {
					sh.Ready = append(sh.Ready, e.Address)
				} else {
					sh.Unready = append(sh.Unready, e.Address)
				}
			}
		}
		out.Sources = append(out.Sources, sh)
	}

	for _, c := range sorted {
		if !c.Selected {
			continue
		}
		st := v1alpha1.ClusterStatus{Name: c.Name}
		if nsErr != nil {
			st.Reason = ReasonInvalidNamespaceName
			st.Message = fmt.Sprintf("namespace %q cannot be a label of a published name: %v; no names published", gd.Namespace, nsErr)
			out.Clusters = append(out.Clusters, st)
			continue
		}
		if err := contract.ValidateLabel(c.Name); err != nil {
			st.Reason = ReasonInvalidClusterName
			st.Message = fmt.Sprintf("cluster name %q cannot be a label of a published name (lowercase letters, digits, '-', at most 63, not %q): refused, no names published", c.Name, "any")
			out.Clusters = append(out.Clusters, st)
			continue
		}
		if c.OwnedBy != "" {
			st.Reason = ReasonConflict
			st.Message = fmt.Sprintf("the names of this cluster are published by the older GatewayDNS %s", c.OwnedBy)
			out.ConflictOwners[c.Name] = c.OwnedBy
			out.Clusters = append(out.Clusters, st)
			continue
		}
		if c.Deleting {
			st.Reason, st.HealthReason = ReasonClusterDeleting, v1alpha1.HealthReasonClusterDeleting
			st.Message = "the Cluster is being deleted; its names are removed"
			out.Clusters = append(out.Clusters, st)
			continue
		}
		var notes []string
		if c.APIHost != "" && !isHeadless {
			// A headless export names no cluster of its own (the
			// GatewayDNS of the cluster's gateway, if any, does).
			api := onlyAllowed(contract.Classify([]string{c.APIHost}, nil, domain), allowed)
			st.APIAddresses = api.All()
			out.Slices = append(out.Slices, contract.Build(source(c.Name, contract.KindAPI, contract.APIHostname(c.Name, gd.Namespace, domain)), api)...)
			if len(api.Refused) > 0 {
				notes = append(notes, "api host refused: "+listSome(api.Refused))
			}
		}

		switch {
		case refErr != nil:
			st.Reason = ReasonInvalidServiceRef
			st.Message = fmt.Sprintf("spec.service: %v", refErr)
		case gd.Spec.ResolutionType != "" && gd.Spec.ResolutionType != v1alpha1.ResolutionTypeLoadBalancer && !isHeadless:
			st.Reason = ReasonUnsupportedResolutionType
			st.Message = fmt.Sprintf("resolutionType %q is not supported (only %q and %q)", gd.Spec.ResolutionType,
				v1alpha1.ResolutionTypeLoadBalancer, v1alpha1.ResolutionTypeHeadless)
		case c.AccessReason != "":
			st.Reason, st.Message = c.AccessReason, c.AccessMessage+"; last published addresses kept"
			out.Keep[c.Name] = true
			if isHeadless {
				keptHeadless(&st, c, last[c.Name], allowed, domain, headless)
				break
			}
			keptGateways(&st, c, last[c.Name])
		case !c.ServiceSynced:
			st.Reason = ReasonClusterUnreachable
			st.Message = fmt.Sprintf("Service %s/%s not listed yet (cluster unreachable or connecting); last published addresses kept", svcNS, svcName)
			out.Keep[c.Name] = true
			if isHeadless {
				keptHeadless(&st, c, last[c.Name], allowed, domain, headless)
				break
			}
			keptGateways(&st, c, last[c.Name])
		case c.Service == nil:
			st.Reason = ReasonServiceNotFound
			st.Message = fmt.Sprintf("Service %s/%s not found in the workload cluster", svcNS, svcName)
		case isHeadless:
			computeHeadless(&st, c, fmt.Sprintf("%s/%s", svcNS, svcName), last[c.Name], allowed, domain, limits.HeadlessEndpointsPerCluster, &notes, out.Keep, headless)
		case c.Service.Spec.Type != corev1.ServiceTypeLoadBalancer:
			st.Reason = ReasonServiceNotLoadBalancer
			st.Message = fmt.Sprintf("Service %s/%s is of type %q, not LoadBalancer", svcNS, svcName, c.Service.Spec.Type)
		case len(c.Service.Status.LoadBalancer.Ingress) == 0:
			st.Reason = ReasonNoLoadBalancerIngress
			st.Message = fmt.Sprintf("Service %s/%s has no load-balancer ingress yet", svcNS, svcName)
		default:
			var ips, hosts []string
			for _, in := range c.Service.Status.LoadBalancer.Ingress {
				if in.IP != "" {
					ips = append(ips, in.IP)
				}
				if in.Hostname != "" {
					hosts = append(hosts, in.Hostname)
				}
			}
			classified := contract.Classify(ips, hosts, domain)
			gw := onlyAllowed(classified, allowed)
			st.Addresses = gw.All()
			if len(gw.Refused) > 0 {
				notes = append(notes, "refused: "+listSome(gw.Refused))
			}
			if len(st.Addresses) == 0 {
				st.Reason = ReasonNoValidAddresses
				if len(gw.Refused) > len(classified.Refused) {
					// The operator's CIDRs, not the load balancer alone, left nothing.
					st.Reason = ReasonAddressNotAllowed
					st.Message = fmt.Sprintf("no address of Service %s/%s lies in the allowed CIDRs %s", svcNS, svcName, allowed)
				}
				break
			}
			if n := max(len(gw.IPv4), len(gw.IPv6), len(gw.FQDN)); n > contract.MaxAddressesPerSlice {
				// serve would refuse the slice whole; the last ones stay.
				st.Reason, st.Addresses = ReasonTooManyAddresses, nil
				st.Message = fmt.Sprintf("Service %s/%s has %d addresses of one family, more than %d; last published addresses kept", svcNS, svcName, n, contract.MaxAddressesPerSlice)
				out.Keep[c.Name] = true
				keptGateways(&st, c, last[c.Name])
				break
			}
			st.Reason, st.Ready = ReasonPublished, true
			out.Slices = append(out.Slices, contract.Build(source(c.Name, contract.KindGateway, contract.GatewayHostname(c.Name, gd.Namespace, domain)), gw)...)
			h := c.health(fmt.Sprintf("%s/%s", svcNS, svcName), last[c.Name])
			st.Healthy, st.HealthReason = h.healthy, h.reason
			gateways(c.Name, gw, h)
			if !h.healthy {
				notes = append(notes, "gateway unhealthy: "+h.message)
			}
		}
		if out.Keep[c.Name] && len(st.Addresses) > 0 {
			// The last addresses, carried in status from sync to sync (and
			// over a restart), are what the kept gateway name still
			// answers; the multi-cluster name keeps them too, with the
			// last health, unless the Cluster now says it is unavailable.
			addrs := onlyAllowed(contract.Classify(st.Addresses, nil, domain), allowed)
			st.Addresses = addrs.All()
			if len(st.Addresses) > 0 {
				gateways(c.Name, addrs, health{healthy: st.Healthy, reason: st.HealthReason})
			}
		}
		if st.HealthReason == "" && isHeadless {
			st.HealthReason = v1alpha1.HealthReasonNoReadyEndpoints
			if c.Unavailable != "" {
				st.HealthReason = v1alpha1.HealthReasonClusterNotAvailable
			}
		}
		if st.HealthReason == "" {
			// No address: nothing of this cluster is in the multi-cluster name.
			st.HealthReason = v1alpha1.HealthReasonNoAddress
			if c.Unavailable != "" {
				st.HealthReason = v1alpha1.HealthReasonClusterNotAvailable
			}
		}
		if len(notes) > 0 {
			st.Message = strings.TrimPrefix(st.Message+"; "+strings.Join(notes, "; "), "; ")
		}
		out.Clusters = append(out.Clusters, st)
	}
	limitHeadless(pending, out.Clusters, limits.HeadlessEndpointsPerGatewayDNS)
	for _, p := range pending {
		publishHeadless(p.cluster, p.eps, p.h)
	}
	sort.Slice(out.Slices, func(i, j int) bool { return out.Slices[i].Name < out.Slices[j].Name })
	if locErr != nil {
		// The API server validates spec.locality; if a bad one slips
		// through, no multi-cluster name rather than one serve refuses.
		for i := range out.Clusters {
			out.Clusters[i].Healthy = false
			out.Clusters[i].Message = strings.TrimPrefix(out.Clusters[i].Message+"; multi-cluster name not published: "+locErr.Error(), "; ")
		}
	}
	return out
}

// health is whether a cluster's gateway counts for the multi-cluster
// name, and if not, the first check that failed.
type health struct {
	healthy         bool
	reason, message string
}

// health checks, in order, that the Cluster is not being deleted, is
// available, and that the gateway Service (which has an address, or this
// is not called) has a ready endpoint. While the EndpointSlices of the
// Service have not been listed, the last health in status stands, as
// an unreachable cluster keeps its last slices; a cluster never seen
// healthy counts as not.
func (c Input) health(svc string, last v1alpha1.ClusterStatus) health {
	switch {
	case c.Deleting:
		return health{reason: v1alpha1.HealthReasonClusterDeleting, message: "the Cluster is being deleted"}
	case c.Unavailable != "":
		return health{reason: v1alpha1.HealthReasonClusterNotAvailable, message: "Cluster " + c.Unavailable}
	case !c.EndpointsSynced:
		if last.HealthReason == v1alpha1.HealthReasonHealthy || last.HealthReason == v1alpha1.HealthReasonNoReadyEndpoints {
			return health{healthy: last.Healthy, reason: last.HealthReason, message: "EndpointSlices of Service " + svc + " not listed yet; last health kept"}
		}
		return health{reason: v1alpha1.HealthReasonNoReadyEndpoints,
			message: "EndpointSlices of Service " + svc + " not listed yet (the kubeconfig needs list and watch on EndpointSlices in its namespace)"}
	case c.ReadyEndpoints == 0:
		return health{reason: v1alpha1.HealthReasonNoReadyEndpoints, message: "Service " + svc + " has no ready endpoint"}
	}
	return health{healthy: true, reason: v1alpha1.HealthReasonHealthy}
}

// keptGateways fills the status entry of a cluster whose state is
// unknown (its slices are kept) from its last entry: the addresses still
// published and their health, which only the Cluster's own conditions,
// read in the management cluster, can still take away.
func keptGateways(st *v1alpha1.ClusterStatus, c Input, last v1alpha1.ClusterStatus) {
	st.Addresses = slices.Clone(last.Addresses)
	st.Healthy, st.HealthReason = last.Healthy, last.HealthReason
	if st.HealthReason == "" && len(st.Addresses) > 0 {
		// Published before health was known: never seen healthy.
		st.HealthReason = v1alpha1.HealthReasonNoReadyEndpoints
	}
	if c.Unavailable != "" {
		st.Healthy, st.HealthReason = false, v1alpha1.HealthReasonClusterNotAvailable
	}
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
