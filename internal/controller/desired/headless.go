package desired

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// addHeadless adds <gd>.<ns>.services.<zone> and the names below it
// (resolutionType headless): the ready pods of each cluster's headless
// Service, with health and locality as the gateways name, published once
// every cluster's are known, since the limit per GatewayDNS is shared
// between them (limitHeadless).
func addHeadless(c *computation) {
	if !c.headless {
		return
	}
	var pending []pendingHeadless
	publish := func(e *entry, eps contract.HeadlessEndpoints, h health) {
		pending = append(pending, pendingHeadless{entry: e, eps: eps, h: h})
	}
	for _, e := range c.admitted {
		kept := func(e *entry) { c.keptHeadless(e, publish) }
		if c.readService(e, kept) {
			c.readHeadless(e, publish)
		}
		if e.st.HealthReason == "" {
			e.st.HealthReason = v1alpha1.HealthReasonNoReadyEndpoints
			if e.in.Unavailable != "" {
				e.st.HealthReason = v1alpha1.HealthReasonClusterNotAvailable
			}
		}
	}
	limitHeadless(pending, c.limits.HeadlessEndpointsPerGatewayDNS)
	for _, p := range pending {
		c.publishHeadless(p)
	}
}

// readHeadless fills the status entry of a cluster whose headless
// Service exists and passes its ready endpoints to publish, or keeps the
// last ones (keptHeadless) when they cannot be read or are too many.
//
// More than the limit per source cluster are cut to it
// (truncateHeadless): the cluster is TooManyEndpoints, and the endpoints
// kept are published.
func (c *computation) readHeadless(e *entry, publish func(*entry, contract.HeadlessEndpoints, health)) {
	svc := e.in.Service
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		e.st.Reason = ReasonServiceNotHeadless
		e.st.Message = fmt.Sprintf("Service %s has clusterIP %q, not None: resolutionType headless exports only headless Services", c.svc, svc.Spec.ClusterIP)
		return
	}
	if !e.in.EndpointsSynced {
		e.st.Reason = ReasonClusterUnreachable
		e.st.Message = fmt.Sprintf("EndpointSlices of Service %s not listed yet (cluster unreachable or connecting, or the kubeconfig lacks list and watch on EndpointSlices in %s); last published endpoints kept",
			c.svc, svc.Namespace)
		c.out.Keep[e.in.Name] = true
		c.keptHeadless(e, publish)
		return
	}
	eps := contract.ReadyEndpoints(e.in.Endpoints, c.allowed, c.zone)
	if len(eps.Refused) > 0 {
		e.note("refused: " + listSome(eps.Refused))
	}
	for _, g := range eps.Groups {
		if n := max(len(g.IPv4), len(g.IPv6)); n > contract.MaxAddressesPerSlice {
			// serve would refuse the slice whole; the last ones stay.
			e.st.Reason = ReasonTooManyEndpoints
			e.st.Message = fmt.Sprintf("Service %s has %d ready endpoints of one port set and address family, more than %d; last published endpoints kept",
				c.svc, n, contract.MaxAddressesPerSlice)
			c.out.Keep[e.in.Name] = true
			c.keptHeadless(e, publish)
			return
		}
	}
	if eps.Len() == 0 && len(eps.Refused) > 0 {
		e.st.Reason = ReasonNoValidAddresses
		e.st.Message = fmt.Sprintf("no ready endpoint of Service %s can be published", c.svc)
		return
	}
	e.st.Reason, e.st.Ready = ReasonPublished, true
	if n, limit := eps.Len(), c.limits.HeadlessEndpointsPerCluster; n > limit {
		eps = truncateHeadless(eps, limit)
		e.st.Reason, e.st.Ready = ReasonTooManyEndpoints, false
		e.st.Message = fmt.Sprintf("Service %s: %s", c.svc, capMessage("ready endpoints", n, limit, FlagMaxHeadlessEndpointsPerCluster,
			fmt.Sprintf("%d published, by address, in turn from each port set and family", limit)))
	}
	e.st.Pods = int32(eps.Len())
	h := e.in.headlessHealth(eps.Len(), c.svc)
	e.st.Healthy, e.st.HealthReason = h.healthy, h.reason
	publish(e, eps, h)
	if !h.healthy && eps.Len() > 0 {
		e.note("unhealthy: " + h.message)
	}
}

// keptHeadless fills the status entry of a cluster whose endpoints are
// unknown or refused and publishes again what the last sync did, with
// the last health, which only the Cluster's own conditions can still take
// away (as keptGateway). The kept endpoints pass the checks of live ones
// again (contract.HeadlessEndpoints.Recheck). Without a last sync (the
// controller restarted and kept nothing for the cluster) nothing is
// published for the cluster in this generation.
func (c *computation) keptHeadless(e *entry, publish func(*entry, contract.HeadlessEndpoints, health)) {
	last := c.last[e.in.Name]
	e.st.Healthy, e.st.HealthReason = last.Healthy, last.HealthReason
	if e.in.Unavailable != "" {
		e.st.Healthy, e.st.HealthReason = false, v1alpha1.HealthReasonClusterNotAvailable
	}
	if e.in.LastHeadless == nil {
		// Nothing to publish yet (read back on a later sync); the last
		// health stands, so a later sync does not carry a false one.
		e.st.Pods = last.Pods
		return
	}
	eps := e.in.LastHeadless.Recheck(c.allowed, c.zone)
	e.st.Pods = int32(eps.Len())
	if e.st.Pods == 0 {
		e.st.Healthy = false
	}
	publish(e, eps, health{healthy: e.st.Healthy, reason: e.st.HealthReason})
}

// publishHeadless adds the headless slices of one source cluster, the
// source as serve reads it (for status's answered) and the endpoints to
// remember (Result.Headless).
func (c *computation) publishHeadless(p pendingHeadless) {
	cluster := p.entry.in.Name
	c.out.Headless[cluster] = p.eps
	if c.localityErr != nil || p.eps.Len() == 0 {
		return
	}
	src := contract.Source{Namespace: c.gd.Namespace, GatewayDNS: c.gd.Name, Cluster: cluster, Kind: contract.KindHeadless,
		Hostname: contract.HeadlessHostname(c.gd.Name, c.gd.Namespace, c.zone), TTL: c.ttl, Locality: c.locality, Unhealthy: !p.h.healthy}
	c.out.Slices = append(c.out.Slices, contract.BuildHeadless(src, p.eps)...)
	sh := contract.SourceHosts{Cluster: cluster}
	for _, g := range p.eps.Groups {
		for _, ep := range slices.Concat(g.IPv4, g.IPv6) {
			if p.h.healthy {
				sh.Ready = append(sh.Ready, ep.Address)
			} else {
				sh.Unready = append(sh.Unready, ep.Address)
			}
		}
	}
	c.out.Sources = append(c.out.Sources, sh)
}

// pendingHeadless is a cluster's headless endpoints before the limit per
// GatewayDNS: what to publish, its health, and its status entry.
type pendingHeadless struct {
	entry *entry
	eps   contract.HeadlessEndpoints
	h     health
}

// limitHeadless cuts the endpoints of pending to limit together, each
// cluster keeping its fair share (fairShares, in the order of the
// clusters, by name), and marks the status entry of each cluster cut
// TooManyEndpoints. Kept clusters (their last endpoints) count too.
func limitHeadless(pending []pendingHeadless, limit int) {
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
		st := &p.entry.st
		if st.Reason == ReasonPublished {
			// A kept cluster keeps the reason it is kept for.
			st.Reason, st.Ready = ReasonTooManyEndpoints, false
		}
		st.Pods = int32(p.eps.Len())
		st.Healthy, st.HealthReason = p.h.healthy, p.h.reason
		p.entry.note(capMessage("ready endpoints in the clusters of this GatewayDNS", total, limit,
			FlagMaxHeadlessEndpointsPerGatewayDNS, fmt.Sprintf("this cluster's share is %d of its %d", shares[i], wants[i])))
	}
}
