package serve

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// reverseOwnerPrefix starts the owner of a PTR record.
const reverseOwnerPrefix = "Reverse "

// PTR records are derived here from the A and AAAA records serve publishes,
// never read from a slice: a PTR can only point at a name that answers with
// that address, so no slice (and no tenant) can name an address it was not
// given. They exist only for addresses inside the operator's reverse CIDRs.
//
// The CoreDNS etcd plugin answers a PTR query from the one record at the
// reverse name's own key (an exact read, e.g. /skydns/arpa/in-addr/10/0/0/5),
// with host the target name. So an address has one PTR or none: none when
// names of two clusters claim it, since either could be lying. The gateway
// and api names of one cluster sharing an address are one claimant; the PTR
// then names the gateway.

func isReverseOwner(owner string) bool { return strings.HasPrefix(owner, reverseOwnerPrefix) }

// reverseAddr returns the address of a record's host when it lies inside
// cidrs, and whether it does.
func reverseAddr(host string, cidrs cidr.List) (netip.Addr, bool) {
	if len(cidrs) == 0 {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !cidrs.Contains(ip) {
		return netip.Addr{}, false
	}
	return ip, true
}

// reverseRecord returns the PTR record of addr given every owned record
// whose host is addr, and whether there is one.
func reverseRecord(addr netip.Addr, claims skydnsrecord.Set) (string, skydnsrecord.Record, bool) {
	names := map[string]skydnsrecord.Record{} // name -> one of its records there
	for k, r := range claims {
		if isNameOwner(r.Owner) || isReverseOwner(r.Owner) || isMultiOwner(r.Owner) {
			continue
		}
		name, err := skydnsrecord.Name(skydnsrecord.ParentKey(k))
		if err != nil {
			continue
		}
		if old, ok := names[name]; !ok || r.TTL < old.TTL {
			names[name] = r
		}
	}
	if len(names) == 0 {
		return "", skydnsrecord.Record{}, false
	}
	sorted := slices.SortedFunc(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}, byGatewayFirst)
	_, cluster, _ := strings.Cut(sorted[0], ".")
	for _, n := range sorted[1:] {
		if _, c, _ := strings.Cut(n, "."); c != cluster {
			return "", skydnsrecord.Record{}, false
		}
	}
	key := skydnsrecord.Key(cidr.ReverseName(addr))
	return key, skydnsrecord.Record{Host: sorted[0], TTL: names[sorted[0]].TTL, Owner: reverseOwnerPrefix + key}, true
}

// byGatewayFirst orders one cluster's names: its gateway name, then the
// rest by name.
func byGatewayFirst(a, b string) int {
	ga, gb := strings.HasPrefix(a, string(contract.KindGateway)+"."), strings.HasPrefix(b, string(contract.KindGateway)+".")
	switch {
	case ga && !gb:
		return -1
	case gb && !ga:
		return 1
	}
	return strings.Compare(a, b)
}

// WithReverseRecords adds to records the PTR record of every address
// inside cidrs that records point at: the set serve writes.
func WithReverseRecords(records skydnsrecord.Set, cidrs cidr.List) skydnsrecord.Set {
	return withDerived(records, func(_ string, r skydnsrecord.Record) (netip.Addr, bool) {
		if isMultiOwner(r.Owner) {
			return netip.Addr{}, false
		}
		return reverseAddr(r.Host, cidrs)
	}, reverseRecord)
}

// reverseAddrs adds to addrs the hosts of records inside the reverse CIDRs.
func (s *Syncer) reverseAddrs(addrs map[netip.Addr]bool, records skydnsrecord.Set) {
	for _, r := range records {
		if isMultiOwner(r.Owner) {
			continue
		}
		if ip, ok := reverseAddr(r.Host, s.reverse); ok {
			addrs[ip] = true
		}
	}
}

// syncReverse makes the PTR record of each of addrs match the records that
// now point at it. It holds reverseMu from reading the claims to writing,
// so two slices claiming one address, synced at once, cannot leave the PTR
// that the first one computed before it saw the second.
func (s *Syncer) syncReverse(ctx context.Context, addrs map[netip.Addr]bool) error {
	s.reverseMu.Lock()
	defer s.reverseMu.Unlock()
	for ip := range addrs {
		claims := s.store.OwnedWithHost(ip.String())
		key := skydnsrecord.Key(cidr.ReverseName(ip))
		var want skydnsrecord.Set
		if k, r, ok := reverseRecord(ip, claims); ok {
			want = skydnsrecord.Set{k: r}
		} else if len(claims) > 0 {
			klog.FromContext(ctx).V(2).Info("No PTR: the address is claimed by names of more than one cluster", "address", ip)
		}
		res, err := s.store.SyncOwner(ctx, reverseOwnerPrefix+key, want)
		if err != nil {
			return fmt.Errorf("sync PTR record of %s: %w", ip, err)
		}
		s.observe(ctx, res, "reverse", ip.String())
	}
	return nil
}
