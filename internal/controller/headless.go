package controller

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
)

// headlessPublished remembers, per GatewayDNS key, the ready endpoints a
// headless export last published per source cluster
// (desired.State.Headless): what stays published while a cluster's
// endpoints are unknown. Pod addresses are too many and change too often
// for status, which carries only their count.
type headlessPublished struct {
	mu    sync.Mutex
	byKey map[string]map[string]contract.HeadlessEndpoints
	// recovered holds the keys whose slices were read back from a
	// target since the controller started (recoverHeadless).
	recovered map[string]bool
}

func newHeadlessPublished() *headlessPublished {
	return &headlessPublished{byKey: map[string]map[string]contract.HeadlessEndpoints{}, recovered: map[string]bool{}}
}

func (h *headlessPublished) get(key string) map[string]contract.HeadlessEndpoints {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byKey[key]
}

// set replaces what key published; nil or empty forgets it.
func (h *headlessPublished) set(key string, eps map[string]contract.HeadlessEndpoints) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(eps) == 0 {
		delete(h.byKey, key)
		return
	}
	h.byKey[key] = eps
}

// recoverHeadless gives the kept clusters of src that have no last
// endpoints in memory (the controller restarted) the ones a target still
// holds: the first target that answers is listed once per GatewayDNS
// (its managed headless slices of key), and its slices are read back
// into endpoints. Without this, a cluster unreachable across a restart
// would lose its pods in every other cluster.
func (c *Controller) recoverHeadless(ctx context.Context, key string, src gathered) {
	c.headless.mu.Lock()
	done := c.headless.recovered[key]
	c.headless.mu.Unlock()
	if done {
		return
	}
	need := false
	for _, in := range src.clusters {
		need = need || (in.Selected && in.LastHeadless == nil && (in.AccessReason != "" || !in.ServiceSynced || !in.EndpointsSynced))
	}
	if !need {
		return
	}
	sel := labels.SelectorFromSet(labels.Set{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRecord: string(contract.KindHeadless)}).String()
	for _, t := range src.targets {
		if _, has, synced := t.Cluster.SliceNamespace(c.cfg.SliceNamespace); !has || !synced {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
		list, err := t.Cluster.Client().DiscoveryV1().EndpointSlices(c.cfg.SliceNamespace).List(rctx, metav1.ListOptions{LabelSelector: sel})
		cancel()
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Reading back headless slices failed", "cluster", t.Name, "err", err)
			continue
		}
		var own []*discoveryv1.EndpointSlice
		for i := range list.Items {
			if list.Items[i].Annotations[contract.AnnotationGatewayRef] == key {
				own = append(own, &list.Items[i])
			}
		}
		got := headlessFromSlices(own)
		for i := range src.clusters {
			if eps, ok := got[src.clusters[i].Name]; ok && src.clusters[i].LastHeadless == nil {
				src.clusters[i].LastHeadless = &eps
			}
		}
		c.headless.mu.Lock()
		c.headless.recovered[key] = true
		c.headless.mu.Unlock()
		return
	}
}

// headlessFromSlices reads slices written by contract.BuildHeadless back
// into endpoints, by source cluster: one group per port set, each
// endpoint's one address and its hostname.
func headlessFromSlices(in []*discoveryv1.EndpointSlice) map[string]contract.HeadlessEndpoints {
	out := map[string]contract.HeadlessEndpoints{}
	for _, s := range in {
		source := s.Labels[contract.LabelSourceCluster]
		var ports []contract.Port
		for _, p := range s.Ports {
			if p.Name == nil || p.Port == nil {
				continue
			}
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			ports = append(ports, contract.Port{Name: *p.Name, Protocol: proto, Port: *p.Port})
		}
		var eps []contract.Endpoint
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) != 1 {
				continue
			}
			e := contract.Endpoint{Address: ep.Addresses[0]}
			if ep.Hostname != nil {
				e.Hostname = *ep.Hostname
			}
			eps = append(eps, e)
		}
		h := out[source]
		i := slices.IndexFunc(h.Groups, func(g contract.HeadlessGroup) bool { return slices.Equal(g.Ports, ports) })
		if i < 0 {
			h.Groups = append(h.Groups, contract.HeadlessGroup{Ports: ports})
			i = len(h.Groups) - 1
		}
		if s.AddressType == discoveryv1.AddressTypeIPv6 {
			h.Groups[i].IPv6 = append(h.Groups[i].IPv6, eps...)
		} else {
			h.Groups[i].IPv4 = append(h.Groups[i].IPv4, eps...)
		}
		out[source] = h
	}
	return out
}
