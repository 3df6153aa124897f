package skydnsrecord

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

const (
	// DefaultTTL is the record TTL in seconds when the source sets none.
	// It is always written: the etcd plugin's own default is 300 s.
	DefaultTTL uint32 = 30

	// leafPrefix starts every leaf the syncer writes. '_' is in no label a
	// published name may have (ValidateLabel), so no hostname's key can
	// equal a leaf key: a name one label below another is never stored over
	// that name's records.
	leafPrefix = "_"
	// leafHashBytes is how much of the SHA-256 goes into a leaf: 8 bytes,
	// 16 hex digits, make a collision between two records of one name
	// practically impossible.
	leafHashBytes = 8
)

// Record is the value of one etcd key: the CoreDNS etcd plugin's JSON
// (see its msg.Service), plus Owner.
//
// Owner names the source that wrote the record (for example
// "EndpointSlice xcc-dns/gw-a-ipv4"). The etcd plugin ignores the field; the
// syncer uses it to tell its own records from ones an operator put by hand,
// which it never changes. A record without Owner is not ours.
type Record struct {
	Host        string `json:"host,omitempty"`
	Port        int    `json:"port,omitempty"`
	Priority    int    `json:"priority,omitempty"`
	Weight      int    `json:"weight,omitempty"`
	Text        string `json:"text,omitempty"`
	TTL         uint32 `json:"ttl"`
	TargetStrip int    `json:"targetstrip,omitempty"`
	Group       string `json:"group,omitempty"`
	Owner       string `json:"owner,omitempty"`
}

// Marshal returns the JSON value stored in etcd.
func (r Record) Marshal() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode record for %q: %w", r.Host, err)
	}
	return b, nil
}

// Unmarshal parses a value read from etcd.
func Unmarshal(value []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(value, &r); err != nil {
		return Record{}, fmt.Errorf("decode record: %w", err)
	}
	return r, nil
}

// Owned reports whether the syncer wrote the record.
func (r Record) Owned() bool { return r.Owner != "" }

// Leaf returns the deterministic last key element for a record of owner
// that points at host.
func Leaf(owner, host string) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + host))
	return leafPrefix + hex.EncodeToString(sum[:leafHashBytes])
}

// RecordKey returns the etcd key of the record of owner at name pointing at
// host.
func RecordKey(name, owner, host string) string {
	return Key(name) + "/" + Leaf(owner, host)
}

// thisNetwork and ipv4Compatible are ranges no packet may be sent to:
// "this network" (RFC 1122, Linux takes 0.0.0.0 itself as the local host)
// and the deprecated IPv4-compatible IPv6 addresses (RFC 4291), which
// would only spell an IPv4 address past its own checks.
var (
	thisNetwork    = netip.MustParsePrefix("0.0.0.0/8")
	ipv4Compatible = netip.MustParsePrefix("::/96")
)

// ErrInvalidAddress is wrapped by every address validation error.
var ErrInvalidAddress = errors.New("invalid address")

// ParseAddress parses an IPv4 or IPv6 address a load balancer reports and
// refuses the ones that can never be a gateway another cluster reaches:
// unspecified (and the rest of 0.0.0.0/8), loopback, link-local,
// multicast, broadcast, IPv4-compatible IPv6, and the cloud metadata
// addresses (MetadataAddresses). IPv4-mapped IPv6 addresses are
// unmapped, so ::ffff:127.0.0.1 is refused as loopback.
func ParseAddress(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w %q: %w", ErrInvalidAddress, s, err)
	}
	if ip.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%w %q: has a zone", ErrInvalidAddress, s)
	}
	ip = ip.Unmap()
	var why string
	switch {
	case IsMetadataAddress(ip):
		why = "cloud metadata"
	case ip.IsUnspecified():
		why = "unspecified"
	case ip.IsLoopback():
		why = "loopback"
	case ip.IsLinkLocalUnicast():
		why = "link-local"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		why = "multicast"
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		why = "broadcast"
	case thisNetwork.Contains(ip):
		why = "\"this network\" (0.0.0.0/8)"
	case ipv4Compatible.Contains(ip):
		why = "IPv4-compatible IPv6 (::/96)"
	}
	if why != "" {
		return netip.Addr{}, fmt.Errorf("%w %q: %s addresses are refused", ErrInvalidAddress, s, why)
	}
	return ip, nil
}

// ParseTarget reads a load balancer hostname, the target of a CNAME. It
// refuses names that cannot be a gateway another cluster reaches: a
// loopback name (localhost and below it), a single label (the API server
// refuses it in an FQDN EndpointSlice, and a resolver would complete it with
// the asking pod's search path), and anything that is an address.
func ParseTarget(s string) (string, error) {
	name := CanonicalName(s)
	if err := ValidateName(name); err != nil {
		return "", fmt.Errorf("target %q: %w", s, err)
	}
	if _, err := netip.ParseAddr(name); err == nil || strings.Trim(name, "0123456789.") == "" {
		return "", fmt.Errorf("target %q: %w: an address, not a hostname", s, ErrInvalidName)
	}
	switch {
	case name == "localhost" || strings.HasSuffix(name, ".localhost"):
		return "", fmt.Errorf("target %q: %w: loopback name", s, ErrInvalidName)
	case !strings.Contains(name, "."):
		return "", fmt.Errorf("target %q: %w: a single label, not a fully qualified name", s, ErrInvalidName)
	}
	return name, nil
}
