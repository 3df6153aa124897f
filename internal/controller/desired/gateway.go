package desired

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// addAPI adds api.<cluster>.<ns>.clusters.<zone>: the Cluster's
// spec.controlPlaneEndpoint.host, inside the allowed CIDRs. A headless
// export names no cluster of its own (the GatewayDNS of the cluster's
// gateway, if any, does).
func addAPI(c *computation) {
	if c.headless {
		return
	}
	for _, e := range c.admitted {
		if e.in.APIHost == "" {
			continue
		}
		api := onlyAllowed(contract.Classify([]string{e.in.APIHost}, nil, c.zone), c.allowed)
		e.st.APIAddresses = api.All()
		c.out.Slices = append(c.out.Slices, contract.Build(c.source(e.in.Name, contract.KindAPI, contract.APIHostname(e.in.Name, c.gd.Namespace, c.zone)), api)...)
		if len(api.Refused) > 0 {
			e.note("api host refused: " + listSome(api.Refused))
		}
	}
}

// addGateway adds *.gateway.<cluster>.<ns>.clusters.<zone>: the
// load-balancer addresses of the cluster's gateway Service, and the
// reason of its status entry. An unreachable cluster keeps its last
// addresses (keptGateway).
func addGateway(c *computation) {
	if c.headless {
		return
	}
	for _, e := range c.admitted {
		if !c.readService(e, c.keptGateway) {
			continue
		}
		switch svc := e.in.Service; {
		case svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
			e.st.Reason = ReasonServiceNotLoadBalancer
			e.st.Message = fmt.Sprintf("Service %s is of type %q, not LoadBalancer", c.svc, svc.Spec.Type)
		case len(svc.Status.LoadBalancer.Ingress) == 0:
			e.st.Reason = ReasonNoLoadBalancerIngress
			e.st.Message = fmt.Sprintf("Service %s has no load-balancer ingress yet", c.svc)
		default:
			c.publishGateway(e)
		}
	}
}

// publishGateway publishes the load-balancer addresses of a cluster's
// gateway Service that pass the address rules and the allowed CIDRs; more
// than a slice may carry keeps the last ones.
func (c *computation) publishGateway(e *entry) {
	var ips, hosts []string
	for _, in := range e.in.Service.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			ips = append(ips, in.IP)
		}
		if in.Hostname != "" {
			hosts = append(hosts, in.Hostname)
		}
	}
	classified := contract.Classify(ips, hosts, c.zone)
	gw := onlyAllowed(classified, c.allowed)
	e.st.Addresses = gw.All()
	if len(gw.Refused) > 0 {
		e.note("refused: " + listSome(gw.Refused))
	}
	if len(e.st.Addresses) == 0 {
		e.st.Reason = ReasonNoValidAddresses
		if len(gw.Refused) > len(classified.Refused) {
			// The operator's CIDRs, not the load balancer alone, left nothing.
			e.st.Reason = ReasonAddressNotAllowed
			e.st.Message = fmt.Sprintf("no address of Service %s lies in the allowed CIDRs %s", c.svc, c.allowed)
		}
		return
	}
	if n := max(len(gw.IPv4), len(gw.IPv6), len(gw.FQDN)); n > contract.MaxAddressesPerSlice {
		// serve would refuse the slice whole; the last ones stay.
		e.st.Reason, e.st.Addresses = ReasonTooManyAddresses, nil
		e.st.Message = fmt.Sprintf("Service %s has %d addresses of one family, more than %d; last published addresses kept", c.svc, n, contract.MaxAddressesPerSlice)
		c.out.Keep[e.in.Name] = true
		c.keptGateway(e)
		return
	}
	e.st.Reason, e.st.Ready = ReasonPublished, true
	c.out.Slices = append(c.out.Slices, contract.Build(c.source(e.in.Name, contract.KindGateway, contract.GatewayHostname(e.in.Name, c.gd.Namespace, c.zone)), gw)...)
	e.gateway, e.gatewayLive = gw, true
}

// keptGateway fills the status entry of a cluster whose state is
// unknown (its slices are kept) from its last entry: the addresses still
// published and their health, which only the Cluster's own conditions,
// read in the management cluster, can still take away. The addresses,
// carried in status from sync to sync (and over a restart), pass the
// allowed CIDRs again; the multi-cluster name keeps them too.
func (c *computation) keptGateway(e *entry) {
	last := c.last[e.in.Name]
	e.st.Addresses = slices.Clone(last.Addresses)
	e.st.Healthy, e.st.HealthReason = last.Healthy, last.HealthReason
	if e.st.HealthReason == "" && len(e.st.Addresses) > 0 {
		// Published before health was known: never seen healthy.
		e.st.HealthReason = v1alpha1.HealthReasonNoReadyEndpoints
	}
	if e.in.Unavailable != "" {
		e.st.Healthy, e.st.HealthReason = false, v1alpha1.HealthReasonClusterNotAvailable
	}
	if len(e.st.Addresses) > 0 {
		e.gateway = onlyAllowed(contract.Classify(e.st.Addresses, nil, c.zone), c.allowed)
		e.st.Addresses = e.gateway.All()
	}
}

// addGateways adds *.<gd>.<ns>.gateways.<zone>: the same addresses as
// each cluster's gateway name, with the cluster's health (Input.health;
// a kept cluster's last one) and the locality policy, and the health of
// the status entry; a cluster without an address is not in it.
func addGateways(c *computation) {
	if c.headless {
		return
	}
	for _, e := range c.admitted {
		if e.gatewayLive {
			h := e.in.health(c.svc, c.last[e.in.Name])
			e.st.Healthy, e.st.HealthReason = h.healthy, h.reason
			c.publishGateways(e.in.Name, e.gateway, h)
			if !h.healthy {
				e.note("gateway unhealthy: " + h.message)
			}
		} else if len(e.st.Addresses) > 0 {
			c.publishGateways(e.in.Name, e.gateway, health{healthy: e.st.Healthy, reason: e.st.HealthReason})
		}
		if e.st.HealthReason == "" {
			// No address: nothing of this cluster is in the multi-cluster name.
			e.st.HealthReason = v1alpha1.HealthReasonNoAddress
			if e.in.Unavailable != "" {
				e.st.HealthReason = v1alpha1.HealthReasonClusterNotAvailable
			}
		}
	}
}

// publishGateways adds the gateways slices of one source cluster and the
// source, as serve reads it, for status's answered.
func (c *computation) publishGateways(cluster string, addrs contract.Addresses, h health) {
	if c.localityErr != nil {
		return
	}
	src := contract.Source{Namespace: c.gd.Namespace, GatewayDNS: c.gd.Name, Cluster: cluster, Kind: contract.KindGateways,
		Hostname: contract.GatewaysHostname(c.gd.Name, c.gd.Namespace, c.zone), TTL: c.gatewaysTTL, Locality: c.locality, Unhealthy: !h.healthy}
	c.out.Slices = append(c.out.Slices, contract.Build(src, addrs)...)
	sh := contract.SourceHosts{Cluster: cluster}
	if h.healthy {
		sh.Ready = addrs.All()
	} else {
		sh.Unready = addrs.All()
	}
	c.out.Sources = append(c.out.Sources, sh)
}
