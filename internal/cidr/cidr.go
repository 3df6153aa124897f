// Package cidr holds the address ranges an operator sets: the CIDRs
// every address the controller publishes or imports must lie in
// (controller --allowed-cidrs) and the CIDRs whose reverse names xcc-dns
// answers (serve and patch-corefile --reverse-cidrs). It also names the
// reverse DNS names of addresses and ranges, as CoreDNS does. It is pure:
// no I/O.
package cidr

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Reverse DNS trees (RFC 1035 3.5, RFC 3596 2.5) and their label widths.
const (
	inAddrArpa = "in-addr.arpa"
	ip6Arpa    = "ip6.arpa"
	// octetBits and nibbleBits are the bits of an address one reverse
	// label holds: a decimal octet for IPv4, a hex nibble for IPv6.
	octetBits  = 8
	nibbleBits = 4
)

// List is a set of CIDRs given by the operator, as a flag value: a
// comma-separated list, each a network address with its prefix length
// (192.0.2.0/24, 2001:db8::/32).
type List []netip.Prefix

// MustParse is Parse for lists known to be valid, such as constants in
// tests; it panics on an error.
func MustParse(s string) List {
	l, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

// Parse reads a comma-separated list of CIDRs. Empty items are skipped, so
// "" is the empty list. A CIDR with host bits set (192.0.2.5/24) is refused
// rather than widened: it is more likely a typo than the intended range.
func Parse(s string) (List, error) {
	var out List
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, fmt.Errorf("CIDR %q: %w", item, err)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("CIDR %q: an IPv4-mapped IPv6 range; write it as IPv4", item)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("CIDR %q has host bits set; the network is %s", item, p.Masked())
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// String returns the list as Parse reads it.
func (l List) String() string {
	s := make([]string, len(l))
	for i, p := range l {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value.
func (l *List) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Contains reports whether addr lies in one of the CIDRs. IPv4-mapped IPv6
// addresses are taken as IPv4.
func (l List) Contains(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range l {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ReverseName returns the reverse DNS name of addr, canonical and without
// the final dot: 10.0.0.5 -> 5.0.0.10.in-addr.arpa, 2001:db8::1 ->
// 1.0.0.0. ... .8.b.d.0.1.0.0.2.ip6.arpa.
func ReverseName(addr netip.Addr) string {
	return reverseLabels(addr.Unmap(), addr.Unmap().BitLen())
}

// ReverseZone returns the reverse name whose subtree holds every address
// of p: the prefix length rounded down to a whole label (10.0.0.0/25 ->
// 0.0.10.in-addr.arpa), so it may hold addresses outside p too.
func ReverseZone(p netip.Prefix) string {
	return reverseLabels(p.Addr(), p.Bits())
}

// reverseLabels names the reverse subtree of the first bits of addr,
// rounded down to whole labels.
func reverseLabels(addr netip.Addr, bits int) string {
	var labels []string
	if addr.Is4() {
		a := addr.As4()
		for i := range bits / octetBits {
			labels = append(labels, strconv.Itoa(int(a[i])))
		}
		labels = append(labels, inAddrArpa)
	} else {
		a := addr.As16()
		for i := range bits / nibbleBits {
			b := a[i/2]
			if i%2 == 0 {
				b >>= 4
			}
			labels = append(labels, strconv.FormatUint(uint64(b&0xf), 16))
		}
		labels = append(labels, ip6Arpa)
	}
	slices.Reverse(labels[:len(labels)-1])
	return strings.Join(labels, ".")
}
