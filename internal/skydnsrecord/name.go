package skydnsrecord

import (
	"errors"
	"fmt"
	"strings"
)

const (
	// Prefix is the etcd key prefix the CoreDNS etcd plugin reads by default
	// (its `path` setting).
	Prefix = "/skydns"
	// DefaultDomain is the zone the records live in.
	DefaultDomain = "xcc.test"

	// MaxLabelLength is the longest DNS label, in octets (RFC 1035 2.3.4).
	MaxLabelLength = 63
	// MaxNameLength is the longest name in its text form without the
	// trailing dot (RFC 1035 2.3.4 allows 255 octets on the wire).
	MaxNameLength = 253

	wildcardLabel = "*"
)

// ErrInvalidName is wrapped by every name validation error.
var ErrInvalidName = errors.New("invalid DNS name")

// CanonicalName lowercases name and drops one trailing dot.
func CanonicalName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// ValidateLabel reports whether label is an RFC 1123 label: 1 to 63 octets
// of a-z, 0-9 and '-', not starting or ending with '-'. Upper case is
// refused too: callers canonicalise first, so a label that reaches here in
// upper case is a mistake, not something to fold silently.
func ValidateLabel(label string) error {
	if label == "" {
		return fmt.Errorf("%w: empty label", ErrInvalidName)
	}
	if len(label) > MaxLabelLength {
		return fmt.Errorf("%w: label %q is %d octets, more than %d", ErrInvalidName, label, len(label), MaxLabelLength)
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i != 0 && i != len(label)-1:
		default:
			return fmt.Errorf("%w: label %q: character %q at %d is not allowed (RFC 1123: a-z, 0-9, '-' inside)", ErrInvalidName, label, c, i)
		}
	}
	return nil
}

// ValidateName reports whether name (canonical, no trailing dot) is at most
// 253 octets of valid labels.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidName)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: %q is %d octets, more than %d", ErrInvalidName, name, len(name), MaxNameLength)
	}
	for _, label := range strings.Split(name, ".") {
		if err := ValidateLabel(label); err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
	return nil
}

// IsSubdomain reports whether name is domain or below it. Both canonical.
func IsSubdomain(name, domain string) bool {
	return name == domain || strings.HasSuffix(name, "."+domain)
}

// ParseHostname reads a published hostname, such as the value of the
// dns-hostname annotation, into the name the records are stored at.
//
// A hostname "*.X" publishes every name below X; its records are stored at
// X, and the DNS server maps names below X onto X (the CoreDNS etcd plugin
// cannot serve a stored wildcard). Only a leading "*" label is allowed.
// The name must lie strictly below zone: nothing published may take over
// the zone apex or leave the zone.
func ParseHostname(hostname, zone string) (name string, wildcard bool, err error) {
	h, wildcard := StoredName(hostname)
	zone = CanonicalName(zone)
	if err := ValidateName(h); err != nil {
		return "", false, fmt.Errorf("hostname %q: %w", hostname, err)
	}
	if h == zone || !IsSubdomain(h, zone) {
		return "", false, fmt.Errorf("hostname %q: %w: not below the zone %q", hostname, ErrInvalidName, zone)
	}
	return h, wildcard, nil
}

// StoredName is the name the records of a published hostname are stored
// at, canonical and without its leading wildcard label, and whether it
// had one. It checks nothing else: ParseHostname does.
func StoredName(hostname string) (name string, wildcard bool) {
	h := CanonicalName(hostname)
	if rest, ok := strings.CutPrefix(h, wildcardLabel+"."); ok {
		return rest, true
	}
	return h, false
}

// Key returns the etcd key directory of name: Prefix and the labels in
// reverse order, e.g. "a.b.xcc.test" -> "/skydns/test/xcc/b/a". name must
// be valid (see ValidateName); Key does not check it again, so it can sit on
// the hot path.
func Key(name string) string {
	name = CanonicalName(name)
	var b strings.Builder
	b.Grow(len(Prefix) + 1 + len(name))
	b.WriteString(Prefix)
	end := len(name)
	for i := len(name) - 1; i >= -1; i-- {
		if i == -1 || name[i] == '.' {
			b.WriteByte('/')
			b.WriteString(name[i+1 : end])
			end = i
		}
	}
	return b.String()
}

// Name is the inverse of Key for a key directory, and for a record key it
// returns the name with the leaf as its first label. It fails for keys
// outside Prefix or with empty path elements.
func Name(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, Prefix+"/")
	if !ok || rest == "" {
		return "", fmt.Errorf("key %q: not below %s/", key, Prefix)
	}
	parts := strings.Split(rest, "/")
	var b strings.Builder
	b.Grow(len(rest))
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] == "" {
			return "", fmt.Errorf("key %q: empty path element", key)
		}
		b.WriteString(parts[i])
		if i > 0 {
			b.WriteByte('.')
		}
	}
	return b.String(), nil
}

// ParentKey returns the key directory a record key lives in: the key
// without its leaf.
func ParentKey(recordKey string) string {
	i := strings.LastIndexByte(recordKey, '/')
	if i < 0 {
		return recordKey
	}
	return recordKey[:i]
}
