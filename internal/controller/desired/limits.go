package desired

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// Defaults of Limits: what the Services of the workload clusters, whose
// admins are tenants, can make one GatewayDNS publish. Each is a flag of
// the controller (--max-names-per-cluster, ...).
const (
	// DefaultMaxNamesPerCluster bounds the names (fqdn annotation) the
	// Services of one source cluster claim for one GatewayDNS.
	DefaultMaxNamesPerCluster = 200
	// DefaultMaxNamesPerGatewayDNS bounds the names one GatewayDNS
	// publishes from all its clusters together.
	DefaultMaxNamesPerGatewayDNS = 1000
	// DefaultMaxHeadlessEndpointsPerCluster bounds the endpoints (pods)
	// of a headless export from one source cluster: two address families
	// of one full slice (contract.MaxAddressesPerSlice) each.
	DefaultMaxHeadlessEndpointsPerCluster = 2 * contract.MaxAddressesPerSlice
	// DefaultMaxHeadlessEndpointsPerGatewayDNS bounds the endpoints of a
	// headless export from all its clusters together.
	DefaultMaxHeadlessEndpointsPerGatewayDNS = 10000
)

// The controller's flags that set Limits, named in status messages.
const (
	FlagMaxNamesPerCluster                = "max-names-per-cluster"
	FlagMaxNamesPerGatewayDNS             = "max-names-per-gatewaydns"
	FlagMaxHeadlessEndpointsPerCluster    = "max-headless-endpoints-per-cluster"
	FlagMaxHeadlessEndpointsPerGatewayDNS = "max-headless-endpoints-per-gatewaydns"
)

// Limits bound what the inputs of one GatewayDNS, all written by tenants,
// can make it publish. A zero field is its default. When a limit cuts, a
// deterministic part is published (sorted, and shared fairly between clusters),
// so the cut does not move from sync to sync, and nothing of another
// cluster within its share, or of another GatewayDNS, is lost.
type Limits struct {
	// NamesPerCluster and NamesPerGatewayDNS bound the distinct names
	// claimed with the fqdn annotation (spec.names), per source cluster
	// and per GatewayDNS.
	NamesPerCluster, NamesPerGatewayDNS int
	// HeadlessEndpointsPerCluster and HeadlessEndpointsPerGatewayDNS
	// bound the endpoints of a headless export, per source cluster and
	// per GatewayDNS.
	HeadlessEndpointsPerCluster, HeadlessEndpointsPerGatewayDNS int
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	l.NamesPerCluster = cmp.Or(l.NamesPerCluster, DefaultMaxNamesPerCluster)
	l.NamesPerGatewayDNS = cmp.Or(l.NamesPerGatewayDNS, DefaultMaxNamesPerGatewayDNS)
	l.HeadlessEndpointsPerCluster = cmp.Or(l.HeadlessEndpointsPerCluster, DefaultMaxHeadlessEndpointsPerCluster)
	l.HeadlessEndpointsPerGatewayDNS = cmp.Or(l.HeadlessEndpointsPerGatewayDNS, DefaultMaxHeadlessEndpointsPerGatewayDNS)
	return l
}

// fairShares splits total between wants (one per cluster, in the order
// of the clusters): max-min fair, so each gets what it wants if that is
// no more than an equal share of what the smaller ones leave, and the
// others split the rest equally, the first ones (by index) one more
// when it does not divide. A cluster that wants much only ever takes its
// share from the others. Deterministic; the sum is min(total, sum(wants)).
func fairShares(wants []int, total int) []int {
	out := make([]int, len(wants))
	order := make([]int, len(wants))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(wants[a], wants[b]) })
	left := max(total, 0)
	for k, i := range order {
		n := len(order) - k
		share := left / n
		if wants[i] <= share {
			out[i] = wants[i]
			left -= wants[i]
			continue
		}
		// Every cluster from here on wants more than an equal share.
		rest := order[k:]
		slices.Sort(rest)
		for j, r := range rest {
			out[r] = share
			if j < left%n {
				out[r]++
			}
		}
		return out
	}
	return out
}

// truncateHeadless returns n of the endpoints of h: in turn one of each
// (port set, family) list, in their sorted order, so every port set and
// family gets a share. Refused stays as it is.
func truncateHeadless(h contract.HeadlessEndpoints, n int) contract.HeadlessEndpoints {
	if h.Len() <= n {
		return h
	}
	out := contract.HeadlessEndpoints{Refused: h.Refused, Groups: make([]contract.HeadlessGroup, len(h.Groups))}
	for i, g := range h.Groups {
		out.Groups[i].Ports = g.Ports
	}
	for taken, round := 0, 0; taken < n; round++ {
		for i, g := range h.Groups {
			if taken < n && round < len(g.IPv4) {
				out.Groups[i].IPv4 = append(out.Groups[i].IPv4, g.IPv4[round])
				taken++
			}
			if taken < n && round < len(g.IPv6) {
				out.Groups[i].IPv6 = append(out.Groups[i].IPv6, g.IPv6[round])
				taken++
			}
		}
	}
	out.Groups = slices.DeleteFunc(out.Groups, func(g contract.HeadlessGroup) bool { return len(g.IPv4)+len(g.IPv6) == 0 })
	return out
}

// pickNames chooses at most most of the names the clusters claim
// (byCluster, each sorted, in the order of the clusters): in turn each
// cluster's next name not chosen yet, so every cluster gets a share and a
// cluster claiming many names cannot push out another's. Deterministic.
func pickNames(byCluster [][]string, most int) map[string]bool {
	chosen := map[string]bool{}
	next := make([]int, len(byCluster))
	for progress := true; progress && len(chosen) < most; {
		progress = false
		for c, names := range byCluster {
			for next[c] < len(names) && chosen[names[next[c]]] {
				next[c]++
			}
			if next[c] < len(names) && len(chosen) < most {
				chosen[names[next[c]]] = true
				next[c]++
				progress = true
			}
		}
	}
	return chosen
}

// capMessage is the message of a cut by a limit: what, how many, the
// limit, its flag, and what is published of it.
func capMessage(what string, count, limit int, flag, published string) string {
	return fmt.Sprintf("%d %s, more than the limit of %d (--%s): %s", count, what, limit, flag, published)
}
