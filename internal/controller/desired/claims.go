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

// Shared tells, for the clusters of one GatewayDNS, which other clusters
// of its namespace claim their addresses. It keeps each shared address's
// holders once, not a list of the others per cluster: n clusters on one
// address would make that n*n names, in memory and in status.
type Shared struct {
	claims  Claims              // the GatewayDNS's clusters' addresses
	holders map[string][]string // address -> every cluster claiming it, sorted; only shared addresses
}

// Conflicts returns the addresses of cluster id that other clusters
// claim too, sorted.
func (s Shared) Conflicts(id string) []string {
	var out []string
	for _, addr := range s.claims[id] {
		if len(s.holders[addr]) > 1 {
			out = append(out, addr)
		}
	}
	return out
}

// Others returns the first n (by name) of the clusters other than id that
// claim addr, and how many more there are.
func (s Shared) Others(id, addr string, n int) (names []string, more int) {
	for _, h := range s.holders[addr] {
		switch {
		case h == id:
		case len(names) < n:
			names = append(names, h)
		default:
			more++
		}
	}
	return names, more
}

// Set remembers the claims of gd (nil: it is gone) and returns which
// other clusters of gd's namespace claim the addresses of gd's clusters,
// and the other GatewayDNS of that namespace whose conflicts the change
// may have changed: those claiming an address gd gained or lost.
func (a *AddressClaims) Set(gd string, now Claims) (shared Shared, affected []string) {
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
	shared = Shared{claims: now, holders: map[string][]string{}}
	for _, addrs := range now {
		for _, addr := range addrs {
			if _, done := shared.holders[addr]; done || len(holders[addr]) < 2 {
				continue
			}
			shared.holders[addr] = slices.Sorted(maps.Keys(holders[addr]))
		}
	}
	sort.Strings(affected)
	return shared, affected
}

// How much of a conflict one status entry names: the rest is counted.
// Clusters a tenant points at one address would otherwise make each
// entry name all the others, and the status grow with their square.
const (
	maxConflictAddressesNamed = 3
	maxConflictClustersNamed  = 3
)

// MarkAddressConflicts reports, on the status entry of every cluster of
// namespace that shares an address, the addresses other clusters of the
// namespace claim too, by cluster name (a few of each, and how many
// more). A Published cluster becomes AddressConflict (still Ready: its
// names are published); any other reason stays, with the note added to
// its message.
func MarkAddressConflicts(clusters []v1alpha1.ClusterStatus, namespace string, shared Shared) []v1alpha1.ClusterStatus {
	out := slices.Clone(clusters)
	for i, st := range out {
		id := namespace + "/" + st.Name
		addrs := shared.Conflicts(id)
		if len(addrs) == 0 {
			continue
		}
		var notes []string
		for _, addr := range addrs[:min(len(addrs), maxConflictAddressesNamed)] {
			others, more := shared.Others(id, addr, maxConflictClustersNamed)
			for j, o := range others {
				others[j] = strings.TrimPrefix(o, namespace+"/")
			}
			if more > 0 {
				others = append(others, fmt.Sprintf("%d more", more))
			}
			notes = append(notes, fmt.Sprintf("%s also claimed by %s", addr, strings.Join(others, ", ")))
		}
		if more := len(addrs) - maxConflictAddressesNamed; more > 0 {
			notes = append(notes, fmt.Sprintf("%d more shared addresses", more))
		}
		note := "address conflict: " + strings.Join(notes, "; ") + "; no PTR is published for a shared address"
		if st.Reason == ReasonPublished {
			out[i].Reason = ReasonAddressConflict
		}
		out[i].Message = strings.TrimPrefix(st.Message+"; "+note, "; ")
	}
	return out
}
