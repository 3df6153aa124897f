package gatewaydns

import (
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
)

// namesEnabled reports whether gd publishes the names Services claim
// with the fqdn annotation (spec.names).
func namesEnabled(gd *v1alpha1.GatewayDNS) bool {
	return gd.Spec.Names != nil && gd.Spec.Names.Enabled && gd.Spec.ResolutionType != v1alpha1.ResolutionTypeHeadless
}

// nameClaims remembers, per GatewayDNS key, the names its clusters'
// Services claim (valid and granted, published or not), so that of two
// GatewayDNS of a namespace claiming one name the older publishes it and
// the newer reports Conflict, whichever syncs first. It is one index for
// every GatewayDNS, not part of each one's memory: a sync reads the
// claims of the others.
type nameClaims struct {
	mu   sync.Mutex
	byGD map[string][]string
}

func newNameClaims() *nameClaims { return &nameClaims{byGD: map[string][]string{}} }

// set records the names of gd (nil: none) and reports whether they changed.
func (n *nameClaims) set(gd string, names []string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := !slices.Equal(n.byGD[gd], names)
	if len(names) == 0 {
		delete(n.byGD, gd)
	} else {
		n.byGD[gd] = names
	}
	return changed
}

func (n *nameClaims) get(gd string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byGD[gd]
}

// nameOwners maps each name an older GatewayDNS of gd's namespace claims
// (by creationTimestamp, then name; the one rule of cluster conflicts) to
// that GatewayDNS: gd may not publish it. Only GatewayDNS that publish
// names and are not being deleted count.
func (c *Reconciler) nameOwners(gd *v1alpha1.GatewayDNS) map[string]string {
	objs, err := c.gdns.GetIndexer().ByIndex(cache.NamespaceIndex, gd.Namespace)
	if err != nil {
		return nil
	}
	var older []*v1alpha1.GatewayDNS
	for _, o := range objs {
		other, err := toGatewayDNS(o)
		if err != nil || other.Name == gd.Name || other.DeletionTimestamp != nil || !namesEnabled(other) {
			continue
		}
		ti, tj := other.CreationTimestamp, gd.CreationTimestamp
		if ti.Before(&tj) || (ti.Equal(&tj) && other.Name < gd.Name) {
			older = append(older, other)
		}
	}
	sort.Slice(older, func(i, j int) bool {
		ti, tj := older[i].CreationTimestamp, older[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return older[i].Name < older[j].Name
	})
	owners := map[string]string{}
	for i := len(older) - 1; i >= 0; i-- { // the oldest wins: written last
		key := older[i].Namespace + "/" + older[i].Name
		for _, name := range c.names.get(key) {
			owners[name] = key
		}
	}
	return owners
}

// recordNames stores what gd claims and, when that changed, syncs the
// other GatewayDNS of its namespace that publish names again: whether
// they are in conflict with gd may have changed.
func (c *Reconciler) recordNames(gd *v1alpha1.GatewayDNS, claimed []string) {
	key := gd.Namespace + "/" + gd.Name
	if !c.names.set(key, claimed) {
		return
	}
	c.requeueNamesOf(gd.Namespace, gd.Name)
}

// requeueNamesOf queues every GatewayDNS of namespace but name that
// publishes names.
func (c *Reconciler) requeueNamesOf(namespace, name string) {
	objs, err := c.gdns.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return
	}
	for _, o := range objs {
		if other, err := toGatewayDNS(o); err == nil && other.Name != name && namesEnabled(other) {
			c.queue.Add(other.Namespace + "/" + other.Name)
		}
	}
}

// recordNameTransitions emits an Event per name whose reason changed: a
// Warning (NameRefused, InvalidName, Conflict, NoAddresses) when it is
// not published, Normal Published when it is. On the first sync since
// start the reasons come from the stored status.
func (c *Reconciler) recordNameTransitions(gd *v1alpha1.GatewayDNS, names []v1alpha1.NameStatus) {
	now := make(map[string]string, len(names))
	for _, n := range names {
		now[n.Name] = n.Reason
	}
	before, known := c.memory.of(gd.Namespace+"/"+gd.Name, gd.UID).lastNameReasons(now)
	if !known {
		before = map[string]string{}
		for _, n := range gd.Status.Names {
			before[n.Name] = n.Reason
		}
	}
	for _, n := range names {
		if before[n.Name] == n.Reason {
			continue
		}
		if n.Reason == desired.ReasonPublished {
			c.cfg.Recorder.Eventf(gd, corev1.EventTypeNormal, n.Reason, "name %s: %d healthy of %v", n.Name, n.HealthySources, n.Sources)
			continue
		}
		c.cfg.Recorder.Eventf(gd, corev1.EventTypeWarning, n.Reason, "name %s (%v): %s", n.Name, n.Sources, n.Message)
	}
}

// listedNames bounds status.names to most entries: those not Published
// first, then by name; it returns how many were left out.
func listedNames(names []v1alpha1.NameStatus, most int) ([]v1alpha1.NameStatus, int32) {
	if len(names) <= most {
		return names, 0
	}
	sorted := slices.Clone(names)
	sort.SliceStable(sorted, func(i, j int) bool {
		pi, pj := sorted[i].Reason == desired.ReasonPublished, sorted[j].Reason == desired.ReasonPublished
		if pi != pj {
			return !pi
		}
		return sorted[i].Name < sorted[j].Name
	})
	return sorted[:most], int32(len(names) - most)
}
