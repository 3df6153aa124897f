package controller

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
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
	ReasonClusterUnreachable        = "ClusterUnreachable"
	ReasonServiceNotFound           = "ServiceNotFound"
	ReasonServiceNotLoadBalancer    = "ServiceNotLoadBalancer"
	ReasonNoLoadBalancerIngress     = "NoLoadBalancerIngress"
	ReasonNoValidAddresses          = "NoValidAddresses"
)

// clusterInput is what the informers know about one Cluster in the namespace
// of a GatewayDNS. computeDesired is a pure function of a list of these, so
// every case of bad input is a table test without any client.
type clusterInput struct {
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
}

// desiredState is what one GatewayDNS wants in the xcc-dns namespace of
// every opted-in cluster of its namespace.
type desiredState struct {
	// Slices carry no namespace; the same set goes to every target cluster.
	Slices []*discoveryv1.EndpointSlice
	// Keep names the source clusters whose gateway slices stay as they are
	// (unknown state: unreachable, no kubeconfig): last known good wins.
	Keep map[string]bool
	// Clusters has one status entry per selected cluster, sorted by name.
	Clusters []v1alpha1.ClusterStatus
	// ConflictOwners maps a cluster to the GatewayDNS that owns its names.
	ConflictOwners map[string]string
}

// computeDesired turns a GatewayDNS and what is known about the Clusters of
// its namespace into the EndpointSlices to publish and a status per cluster.
// One cluster's bad input only ever affects that cluster's entry.
func computeDesired(gd *v1alpha1.GatewayDNS, domain string, clusters []clusterInput) desiredState {
	out := desiredState{Keep: map[string]bool{}, ConflictOwners: map[string]string{}}
	sorted := slices.Clone(clusters)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	svcNS, svcName, refOK := splitServiceRef(gd.Spec.Service)

	for _, c := range sorted {
		if !c.Selected {
			continue
		}
		st := v1alpha1.ClusterStatus{Name: c.Name}
		if !isDNSLabel(c.Name) {
			st.Reason = ReasonInvalidClusterName
			st.Message = fmt.Sprintf("cluster name %q is not a DNS label (lowercase letters, digits, '-', at most 63): refused, no names published", c.Name)
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
		var notes []string
		if c.APIHost != "" {
			api := classify([]string{c.APIHost}, nil)
			st.APIAddresses = api.all()
			out.Slices = append(out.Slices, api.slices(gd, c.Name, recordAPI, apiHostname(c.Name, gd.Namespace, domain))...)
			if len(api.refused) > 0 {
				notes = append(notes, "api host refused: "+strings.Join(api.refused, ", "))
			}
		}

		switch {
		case !refOK:
			st.Reason = ReasonInvalidServiceRef
			st.Message = fmt.Sprintf("spec.service %q is not namespace/name of DNS labels", gd.Spec.Service)
		case gd.Spec.ResolutionType != "" && gd.Spec.ResolutionType != v1alpha1.ResolutionTypeLoadBalancer:
			st.Reason = ReasonUnsupportedResolutionType
			st.Message = fmt.Sprintf("resolutionType %q is not supported (only %q)", gd.Spec.ResolutionType, v1alpha1.ResolutionTypeLoadBalancer)
		case c.AccessReason != "":
			st.Reason, st.Message = c.AccessReason, c.AccessMessage+"; last published addresses kept"
			out.Keep[c.Name] = true
		case !c.ServiceSynced:
			st.Reason = ReasonClusterUnreachable
			st.Message = fmt.Sprintf("Service %s/%s not listed yet (cluster unreachable or connecting); last published addresses kept", svcNS, svcName)
			out.Keep[c.Name] = true
		case c.Service == nil:
			st.Reason = ReasonServiceNotFound
			st.Message = fmt.Sprintf("Service %s/%s not found in the workload cluster", svcNS, svcName)
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
			gw := classify(ips, hosts)
			st.Addresses = gw.all()
			if len(gw.refused) > 0 {
				notes = append(notes, "refused: "+strings.Join(gw.refused, ", "))
			}
			if len(st.Addresses) == 0 {
				st.Reason = ReasonNoValidAddresses
				break
			}
			st.Reason, st.Ready = ReasonPublished, true
			out.Slices = append(out.Slices, gw.slices(gd, c.Name, recordGateway, gatewayHostname(c.Name, gd.Namespace, domain))...)
		}
		if len(notes) > 0 {
			st.Message = strings.TrimPrefix(st.Message+"; "+strings.Join(notes, "; "), "; ")
		}
		out.Clusters = append(out.Clusters, st)
	}
	sort.Slice(out.Slices, func(i, j int) bool { return out.Slices[i].Name < out.Slices[j].Name })
	return out
}

// addressSet holds addresses sorted and split by EndpointSlice address type.
type addressSet struct {
	v4, v6, fqdn []string
	refused      []string
}

func (a addressSet) all() []string {
	return slices.Concat(a.v4, a.v6, a.fqdn)
}

// classify sorts IPs and hostnames into families and refuses what must
// never be published: loopback, link-local, unspecified, multicast, zoned
// and unparsable addresses, and hostnames that are not DNS names. An
// IPv4-mapped IPv6 address counts as IPv4; an IPv6 address never lands in an
// IPv4 slice (the API server would refuse the whole slice).
func classify(ips, hostnames []string) addressSet {
	var a addressSet
	seen := map[string]bool{}
	for _, s := range ips {
		addr, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			if isDNSName(strings.ToLower(s)) && !looksNumeric(s) {
				hostnames = append(hostnames, s)
				continue
			}
			a.refused = append(a.refused, fmt.Sprintf("%q (unparsable)", s))
			continue
		}
		addr = addr.Unmap()
		if why := unusable(addr); why != "" {
			a.refused = append(a.refused, fmt.Sprintf("%s (%s)", s, why))
			continue
		}
		key := addr.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		if addr.Is4() {
			a.v4 = append(a.v4, key)
		} else {
			a.v6 = append(a.v6, key)
		}
	}
	for _, h := range hostnames {
		n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		switch {
		case !isDNSName(n) || looksNumeric(n):
			a.refused = append(a.refused, fmt.Sprintf("%q (not a DNS name)", h))
			continue
		case n == "localhost" || strings.HasSuffix(n, ".localhost"):
			a.refused = append(a.refused, fmt.Sprintf("%q (loopback)", h))
			continue
		case !strings.Contains(n, "."):
			// The API server refuses single-label FQDN endpoints, which would
			// fail the whole slice.
			a.refused = append(a.refused, fmt.Sprintf("%q (single label, not a fully qualified name)", h))
			continue
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		a.fqdn = append(a.fqdn, n)
	}
	sort.Strings(a.v4)
	sort.Strings(a.v6)
	sort.Strings(a.fqdn)
	return a
}

// looksNumeric is true for strings of digits and dots only, which are
// malformed IPv4 addresses rather than hostnames (e.g. "10.0.0.300").
func looksNumeric(s string) bool {
	return strings.Trim(s, "0123456789.") == ""
}

func unusable(a netip.Addr) string {
	switch {
	case a.Zone() != "":
		return "zoned"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	return ""
}

// slices builds one EndpointSlice per non-empty address family.
func (a addressSet) slices(gd *v1alpha1.GatewayDNS, cluster, record, hostname string) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, f := range []struct {
		t     discoveryv1.AddressType
		addrs []string
	}{{discoveryv1.AddressTypeIPv4, a.v4}, {discoveryv1.AddressTypeIPv6, a.v6}, {discoveryv1.AddressTypeFQDN, a.fqdn}} {
		if len(f.addrs) == 0 {
			continue
		}
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: sliceName(gd.Namespace, gd.Name, cluster, record, strings.ToLower(string(f.t))),
				Labels: map[string]string{
					LabelManagedBy:     ManagedByValue,
					LabelServiceName:   gd.Name,
					LabelSourceCluster: cluster,
					LabelRecord:        record,
				},
				Annotations: map[string]string{
					AnnotationHostname:   hostname,
					AnnotationGatewayRef: gd.Namespace + "/" + gd.Name,
				},
			},
			AddressType: f.t,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  slices.Clone(f.addrs),
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			}},
		}
		if gd.Spec.TTL != nil {
			s.Annotations[AnnotationTTL] = strconv.Itoa(int(*gd.Spec.TTL))
		}
		out = append(out, s)
	}
	return out
}
