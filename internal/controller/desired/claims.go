package desired

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

// Claims maps a cluster ("<namespace>/<name>") to the addresses (IPs, not
// hostnames: only addresses get PTRs) its names publish.
type Claims map[string][]string

// AddressClaims holds the claims of every GatewayDNS the controller has
// synced, so that two clusters claiming one address are found whichever
// GatewayDNS, in whichever namespace, publishes each.
type AddressClaims struct {
	mu   sync.Mutex
	byGD map[string]Claims // GatewayDNS key -> its clusters' claims
}

// NewAddressClaims returns an empty record of claims.
func NewAddressClaims() *AddressClaims { return &AddressClaims{byGD: map[string]Claims{}} }

// ClusterClaims returns what the status entries of a GatewayDNS of
// namespace claim. A cluster whose last slices are kept (d.Keep) still
// claims what it claimed before, from old.
func ClusterClaims(namespace string, d State, old Claims) Claims {
	out := Claims{}
	for _, st := range d.Clusters {
		id := namespace + "/" + st.Name
		if d.Keep[st.Name] {
			if addrs := old[id]; len(addrs) > 0 {
				out[id] = addrs
			}
			continue
		}
		var addrs []string
		for _, a := range slices.Concat(st.Addresses, st.APIAddresses) {
			if _, err := netip.ParseAddr(a); err == nil && !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		if len(addrs) > 0 {
			slices.Sort(addrs)
			out[id] = addrs
		}
	}
	return out
}

// Get returns the claims last recorded for gd.
func (a *AddressClaims) Get(gd string) Claims {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byGD[gd]
}

// Set records the claims of gd (nil: it is gone) and returns, by cluster
// of gd, the other clusters claiming each of its addresses, and the other
// GatewayDNS whose conflicts the change may have changed: those claiming
// an address gd gained or lost.
func (a *AddressClaims) Set(gd string, now Claims) (shared map[string]map[string][]string, affected []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	before := a.byGD[gd]
	if now == nil {
		delete(a.byGD, gd)
	} else {
		a.byGD[gd] = now
	}
	changed := map[string]bool{}
	for _, c := range []Claims{before, now} {
		for id, addrs := range c {
			for _, addr := range addrs {
				if !slices.Contains(before[id], addr) || !slices.Contains(now[id], addr) {
					changed[addr] = true
				}
			}
		}
	}
	// Who claims each address of gd, or one that changed.
	holders := map[string]map[string]bool{} // address -> cluster ids
	seen := map[string]bool{}
	for other, c := range a.byGD {
		for id, addrs := range c {
			for _, addr := range addrs {
				if holders[addr] == nil {
					holders[addr] = map[string]bool{}
				}
				holders[addr][id] = true
				if other != gd && changed[addr] && !seen[other] {
					seen[other] = true
					affected = append(affected, other)
				}
			}
		}
	}
	shared = map[string]map[string][]string{}
	for id, addrs := range now {
		for _, addr := range addrs {
			var others []string
			for h := range holders[addr] {
				if h != id {
					others = append(others, h)
				}
			}
			if len(others) == 0 {
				continue
			}
			sort.Strings(others)
			if shared[id] == nil {
				shared[id] = map[string][]string{}
			}
			shared[id][addr] = others
		}
	}
	sort.Strings(affected)
	return shared, affected
}

// MarkAddressConflicts reports, on the status entry of every cluster of
// namespace in shared, the addresses other clusters claim too. A Published
// cluster becomes AddressConflict (still Ready: its names are published);
// any other reason stays, with the note added to its message.
func MarkAddressConflicts(clusters []v1alpha1.ClusterStatus, namespace string, shared map[string]map[string][]string) []v1alpha1.ClusterStatus {
	out := slices.Clone(clusters)
	for i, st := range out {
		byAddr := shared[namespace+"/"+st.Name]
		if len(byAddr) == 0 {
			continue
		}
		var notes []string
		for _, addr := range slices.Sorted(maps.Keys(byAddr)) {
			notes = append(notes, fmt.Sprintf("%s also claimed by %s", addr, strings.Join(byAddr[addr], ", ")))
		}
		note := "address conflict: " + strings.Join(notes, "; ") + "; no PTR is published for a shared address"
		if st.Reason == ReasonPublished {
			out[i].Reason = ReasonAddressConflict
		}
		out[i].Message = strings.TrimPrefix(st.Message+"; "+note, "; ")
	}
	return out
}
