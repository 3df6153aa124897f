package desired

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// computeHeadless fills the status entry of a cluster whose headless
// Service exists (c.Service) and publishes its ready endpoints through
// publish, or keeps the last ones (keep) when they cannot be read or are
// too many.
//
// More than limit endpoints (the limit per source cluster) are cut to
// limit (truncateHeadless): the cluster is TooManyEndpoints, and the
// endpoints kept are published.
func computeHeadless(st *v1alpha1.ClusterStatus, c Input, svc string, last v1alpha1.ClusterStatus, allowed cidr.List, domain string,
	limit int, notes *[]string, keep map[string]bool, publish func(string, contract.HeadlessEndpoints, health)) {
	if c.Service.Spec.ClusterIP != corev1.ClusterIPNone {
		st.Reason = ReasonServiceNotHeadless
		st.Message = fmt.Sprintf("Service %s has clusterIP %q, not None: resolutionType headless exports only headless Services", svc, c.Service.Spec.ClusterIP)
		return
	}
	if !c.EndpointsSynced {
		st.Reason = ReasonClusterUnreachable
		st.Message = fmt.Sprintf("EndpointSlices of Service %s not listed yet (cluster unreachable or connecting, or the kubeconfig lacks list and watch on EndpointSlices in %s); last published endpoints kept",
			svc, c.Service.Namespace)
		keep[c.Name] = true
		keptHeadless(st, c, last, allowed, domain, publish)
		return
	}
	eps := contract.ReadyEndpoints(c.Endpoints, allowed, domain)
	if len(eps.Refused) > 0 {
		*notes = append(*notes, "refused: "+listSome(eps.Refused))
	}
	for _, g := range eps.Groups {
		if n := max(len(g.IPv4), len(g.IPv6)); n > contract.MaxAddressesPerSlice {
			// serve would refuse the slice whole; the last ones stay.
			st.Reason = ReasonTooManyEndpoints
			st.Message = fmt.Sprintf("Service %s has %d ready endpoints of one port set and address family, more than %d; last published endpoints kept",
				svc, n, contract.MaxAddressesPerSlice)
			keep[c.Name] = true
			keptHeadless(st, c, last, allowed, domain, publish)
			return
		}
	}
	if eps.Len() == 0 && len(eps.Refused) > 0 {
		st.Reason = ReasonNoValidAddresses
		st.Message = fmt.Sprintf("no ready endpoint of Service %s can be published", svc)
		return
	}
	st.Reason, st.Ready = ReasonPublished, true
	if n := eps.Len(); n > limit {
		eps = truncateHeadless(eps, limit)
		st.Reason, st.Ready = ReasonTooManyEndpoints, false
		st.Message = fmt.Sprintf("Service %s: %s", svc, capMessage("ready endpoints", n, limit, FlagMaxHeadlessEndpointsPerCluster,
			fmt.Sprintf("%d published, by address, in turn from each port set and family", limit)))
	}
	st.Pods = int32(eps.Len())
	h := c.headlessHealth(eps.Len(), svc)
	st.Healthy, st.HealthReason = h.healthy, h.reason
	publish(c.Name, eps, h)
	if !h.healthy && eps.Len() > 0 {
		*notes = append(*notes, "unhealthy: "+h.message)
	}
}

// headlessHealth is whether a cluster's ready pods count for the name
// across clusters: the Cluster is available (Deleting is handled before
// this is called) and has at least one ready pod.
func (c Input) headlessHealth(pods int, svc string) health {
	switch {
	case c.Deleting:
		return health{reason: v1alpha1.HealthReasonClusterDeleting, message: "the Cluster is being deleted"}
	case c.Unavailable != "":
		return health{reason: v1alpha1.HealthReasonClusterNotAvailable, message: "Cluster " + c.Unavailable}
	case pods == 0:
		return health{reason: v1alpha1.HealthReasonNoReadyEndpoints, message: "Service " + svc + " has no ready endpoint"}
	}
	return health{healthy: true, reason: v1alpha1.HealthReasonHealthy}
}

// keptHeadless fills the status entry of a cluster whose endpoints are
// unknown or refused and publishes again what the last sync did, with
// the last health, which only the Cluster's own conditions can still take
// away (as keptGateways). The kept endpoints pass the checks of live ones
// again (contract.HeadlessEndpoints.Recheck). Without a last sync (the
// controller restarted and kept nothing for the cluster) nothing is
// published for the cluster in this generation.
func keptHeadless(st *v1alpha1.ClusterStatus, c Input, last v1alpha1.ClusterStatus, allowed cidr.List, domain string,
	publish func(string, contract.HeadlessEndpoints, health)) {
	st.Healthy, st.HealthReason = last.Healthy, last.HealthReason
	if c.Unavailable != "" {
		st.Healthy, st.HealthReason = false, v1alpha1.HealthReasonClusterNotAvailable
	}
	if c.LastHeadless == nil {
		// Nothing to publish yet (read back on a later sync); the last
		// health stands, so a later sync does not carry a false one.
		st.Pods = last.Pods
		return
	}
	eps := c.LastHeadless.Recheck(allowed, domain)
	st.Pods = int32(eps.Len())
	if st.Pods == 0 {
		st.Healthy = false
	}
	publish(c.Name, eps, health{healthy: st.Healthy, reason: st.HealthReason})
}

// pendingHeadless is a cluster's headless endpoints before the limit per
// GatewayDNS: what to publish, its health, and the index of its status
// entry.
type pendingHeadless struct {
	cluster string
	eps     contract.HeadlessEndpoints
	h       health
	status  int
}

// limitHeadless cuts the endpoints of pending to limit together, each
// cluster keeping its fair share (fairShares, in the order of the
// clusters, by name), and marks the status entry of each cluster cut
// TooManyEndpoints. Kept clusters (their last endpoints) count too.
func limitHeadless(pending []pendingHeadless, clusters []v1alpha1.ClusterStatus, limit int) {
	wants := make([]int, len(pending))
	total := 0
	for i, p := range pending {
		wants[i] = p.eps.Len()
		total += wants[i]
	}
	if total <= limit {
		return
	}
	shares := fairShares(wants, limit)
	for i := range pending {
		if shares[i] >= wants[i] {
			continue
		}
		p := &pending[i]
		p.eps = truncateHeadless(p.eps, shares[i])
		if p.eps.Len() == 0 && p.h.healthy {
			p.h = health{reason: v1alpha1.HealthReasonNoReadyEndpoints}
		}
		st := &clusters[p.status]
		if st.Reason == ReasonPublished {
			// A kept cluster keeps the reason it is kept for.
			st.Reason, st.Ready = ReasonTooManyEndpoints, false
		}
		st.Pods = int32(p.eps.Len())
		st.Healthy, st.HealthReason = p.h.healthy, p.h.reason
		st.Message = strings.TrimPrefix(st.Message+"; "+capMessage("ready endpoints in the clusters of this GatewayDNS", total, limit,
			FlagMaxHeadlessEndpointsPerGatewayDNS, fmt.Sprintf("this cluster's share is %d of its %d", shares[i], wants[i])), "; ")
	}
}
