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
// synced, so that two clusters of one namespace claiming one address are
// found whichever GatewayDNS of it publishes each.
//
// Claims never meet across namespaces. A cluster's DNS holds only the
// records of its own namespace's GatewayDNS, so serve's PTR for an address
// is decided by that namespace's claims alone, and another tenant claiming
// the same address changes nothing there. Comparing across namespaces would
// only hand a tenant an oracle (which namespace and cluster hold an
// address) and a lever (flipping another tenant's clusters to
// AddressConflict).
type AddressClaims struct {
	mu   sync.Mutex
	byGD map[string]Claims // GatewayDNS key -> its clusters' claims
}

// NewAddressClaims returns claims of no GatewayDNS yet.
func NewAddressClaims() *AddressClaims { return &AddressClaims{byGD: map[string]Claims{}} }

// ClusterClaims returns what the status entries of a GatewayDNS of
// namespace claim. A cluster whose last slices are kept (d.Keep) still
// claims what it claimed before, from old.
func ClusterClaims(namespace string, d Result, old Claims) Claims {
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

// Get returns the claims last set for gd.
func (a *AddressClaims) Get(gd string) Claims {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byGD[gd]
}

// Set remembers the claims of gd (nil: it is gone) and returns, by cluster
// of gd, the other clusters of gd's namespace claiming each of its
// addresses, and the other GatewayDNS of that namespace whose conflicts the
// change may have changed: those claiming an address gd gained or lost.
func (a *AddressClaims) Set(gd string, now Claims) (shared map[string]map[string][]string, affected []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	namespace, _, _ := strings.Cut(gd, "/")
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
		if ns, _, _ := strings.Cut(other, "/"); ns != namespace {
			continue
		}
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
// namespace in shared, the addresses other clusters of the namespace claim
// too, by cluster name. A Published
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
			var names []string
			for _, id := range byAddr[addr] {
				names = append(names, strings.TrimPrefix(id, namespace+"/"))
			}
			notes = append(notes, fmt.Sprintf("%s also claimed by %s", addr, strings.Join(names, ", ")))
		}
		note := "address conflict: " + strings.Join(notes, "; ") + "; no PTR is published for a shared address"
		if st.Reason == ReasonPublished {
			out[i].Reason = ReasonAddressConflict
		}
		out[i].Message = strings.TrimPrefix(st.Message+"; "+note, "; ")
	}
	return out
}
