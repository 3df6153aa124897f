package contract

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// AnnotationFQDN on a LoadBalancer Service in a workload cluster asks a
// GatewayDNS with spec.names enabled to publish the Service's load-balancer
// addresses under a name: a single label (<label>.<ns>.names.<zone>, the
// namespace's default grant) or a full name inside one of the operator's
// grants to the GatewayDNS's namespace.
const AnnotationFQDN = "connectivity.tanzu.vmware.com/fqdn"

// ErrNameRefused is wrapped when a name is valid but lies outside every
// grant of the namespace that claims it.
var ErrNameRefused = errors.New("outside the names granted to the namespace")

// Grant is a subtree the operator granted a namespace besides its default
// <label>.<ns>.names.<zone>: the names exactly one label below Suffix.
type Grant struct {
	Namespace string
	// Suffix is canonical (lower case, no trailing dot), strictly inside
	// the zone.
	Suffix string
}

// Grants are the operator's grants (--name-grants), checked once at start
// by ParseGrants: no suffix equal to or below another, none inside or
// above a reserved subtree. The zero value grants nothing beyond the
// default subtrees.
type Grants struct {
	list []Grant // sorted by suffix
}

// ParseGrants reads --name-grants, "<ns>=<suffix>[;<ns>=<suffix>...]"
// (empty: none), for zone. It refuses, naming the grant:
//
//   - a namespace that is not a label, or is "any";
//   - a suffix that is not a DNS name, is not strictly inside the zone,
//     has a label "any", or would hold a name longer than a DNS name may be;
//   - a suffix inside (or equal to) a reserved subtree (ReservedSubtree):
//     clusters., gateways., names. or services. of the zone hold the names
//     of every namespace already, dns. and ns. are the DNS server's own;
//   - a suffix equal to or below another grant's suffix, of any namespace
//     (the same one too): a granted name is one label below its suffix, so
//     the other suffix would be a name, or lie below one, and the etcd
//     plugin's prefix read of that name would add the other grant's
//     records to its answers.
//
// Ancestors of a suffix (between it and the zone) are empty
// non-terminals: the DNS server must answer them NODATA (the workload
// chart adds that to its Corefile per grant).
func ParseGrants(flag, zone string) (Grants, error) {
	zone = skydnsrecord.CanonicalName(zone)
	var g Grants
	for _, item := range strings.Split(flag, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		ns, suffix, found := strings.Cut(item, "=")
		if !found {
			return Grants{}, fmt.Errorf("name grant %q: want <namespace>=<suffix>", item)
		}
		ns, suffix = strings.TrimSpace(ns), skydnsrecord.CanonicalName(strings.TrimSpace(suffix))
		if err := ValidateLabel(ns); err != nil {
			return Grants{}, fmt.Errorf("name grant %q: namespace: %w", item, err)
		}
		if err := skydnsrecord.ValidateName(suffix); err != nil {
			return Grants{}, fmt.Errorf("name grant %q: suffix: %w", item, err)
		}
		if suffix == zone || !skydnsrecord.IsSubdomain(suffix, zone) {
			return Grants{}, fmt.Errorf("name grant %q: suffix %q is not strictly inside the zone %q", item, suffix, zone)
		}
		labels := strings.Split(strings.TrimSuffix(suffix, "."+zone), ".")
		if slices.Contains(labels, wildcardLabel) {
			return Grants{}, fmt.Errorf("name grant %q: suffix %q has the DNS server's wildcard label %q", item, suffix, wildcardLabel)
		}
		if top, reserved := ReservedSubtree(suffix, zone); reserved {
			return Grants{}, fmt.Errorf("name grant %q: suffix %q lies in the reserved subtree %s.%s", item, suffix, top, zone)
		}
		// The longest label (63) and its dot must still fit in a name.
		if len(suffix)+64 > skydnsrecord.MaxNameLength {
			return Grants{}, fmt.Errorf("name grant %q: suffix %q is too long to hold a name of 63-character label", item, suffix)
		}
		for _, other := range g.list {
			if other.Suffix == suffix && other.Namespace == ns {
				continue
			}
			if skydnsrecord.IsSubdomain(suffix, other.Suffix) || skydnsrecord.IsSubdomain(other.Suffix, suffix) {
				return Grants{}, fmt.Errorf("name grant %q: suffix %q overlaps %q granted to namespace %q: no grant may be equal to or below another", item, suffix, other.Suffix, other.Namespace)
			}
		}
		if !slices.Contains(g.list, Grant{Namespace: ns, Suffix: suffix}) {
			g.list = append(g.list, Grant{Namespace: ns, Suffix: suffix})
		}
	}
	sort.Slice(g.list, func(i, j int) bool { return g.list[i].Suffix < g.list[j].Suffix })
	return g, nil
}

// List returns the grants, sorted by suffix.
func (g Grants) List() []Grant { return slices.Clone(g.list) }

// String is the flag form of g.
func (g Grants) String() string {
	parts := make([]string, 0, len(g.list))
	for _, gr := range g.list {
		parts = append(parts, gr.Namespace+"="+gr.Suffix)
	}
	return strings.Join(parts, ";")
}

// Of returns the suffixes granted to namespace, besides its default.
func (g Grants) Of(namespace string) []string {
	var out []string
	for _, gr := range g.list {
		if gr.Namespace == namespace {
			out = append(out, gr.Suffix)
		}
	}
	return out
}

// ReservedSubtree reports whether name (canonical, inside zone) is the
// zone's apex or lies in a subtree no grant may cover, and which: a
// structured subtree (StructuredSubtrees), whose names the grammar lists,
// or one the DNS server keeps for itself (ReservedLabels).
func ReservedSubtree(name, zone string) (top string, reserved bool) {
	zone = skydnsrecord.CanonicalName(zone)
	if name == zone {
		return "", true
	}
	labels := strings.Split(strings.TrimSuffix(name, "."+zone), ".")
	top = labels[len(labels)-1]
	return top, reservedTop(top)
}

// reservedTop reports whether top, the label right below the zone, roots
// a subtree no grant may cover.
func reservedTop(top string) bool {
	return slices.Contains(StructuredSubtrees, top) || slices.Contains(ReservedLabels, top)
}

// owner returns the grant whose suffix is name's parent: name is exactly
// one label below it.
func (g Grants) owner(name string) (Grant, bool) {
	_, parent, found := strings.Cut(name, ".")
	if !found {
		return Grant{}, false
	}
	for _, gr := range g.list {
		if gr.Suffix == parent {
			return gr, true
		}
	}
	return Grant{}, false
}

// NameHostname turns the value of a Service's fqdn annotation, claimed
// for namespace (the GatewayDNS's), into the name it publishes: a single
// label is <label>.<namespace>.names.<domain>; a full name must be exactly
// one label below a suffix granted to namespace (or be a name of its
// default subtree). A wildcard, a name that is not a DNS name, a label
// "any", or a name of another namespace or outside every grant is
// refused; ErrNameRefused is wrapped when only the grant is missing.
func NameHostname(value, namespace, zone string, grants Grants) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", fmt.Errorf("%w: empty name", skydnsrecord.ErrInvalidName)
	}
	if strings.Contains(v, "*") {
		return "", fmt.Errorf("%w: %q: a wildcard cannot be claimed", skydnsrecord.ErrInvalidName, value)
	}
	if !strings.Contains(strings.TrimSuffix(v, "."), ".") {
		label := skydnsrecord.CanonicalName(v)
		if err := ValidateLabel(label); err != nil {
			return "", fmt.Errorf("%q: %w", value, err)
		}
		if err := ValidateLabel(namespace); err != nil {
			return "", fmt.Errorf("namespace %q: %w", namespace, err)
		}
		return DefaultNameHostname(label, namespace, zone), nil
	}
	h, err := ParseNameHostname(v, namespace, zone, grants)
	if err != nil {
		return "", err
	}
	return h.Name, nil
}

// ParseNameHostname checks that hostname is a name namespace may claim
// with the fqdn annotation (KindName): <label>.<namespace>.names.<domain>
// or exactly one label below a suffix the operator granted namespace.
func ParseNameHostname(hostname, namespace, zone string, grants Grants) (Hostname, error) {
	h, err := parseHostname(hostname, zone)
	if err != nil {
		return Hostname{}, err
	}
	return h.claimedName(namespace, zone, grants)
}

// claimedName reads h as a name namespace may claim (ParseNameHostname).
func (h parsedHostname) claimedName(namespace, zone string, grants Grants) (Hostname, error) {
	if h.wildcard {
		return Hostname{}, fmt.Errorf("%w: %q: a wildcard cannot be claimed", skydnsrecord.ErrInvalidName, h.hostname)
	}
	label := h.labels[0]
	if err := ValidateLabel(label); err != nil {
		return Hostname{}, fmt.Errorf("hostname %q: %w", h.hostname, err)
	}
	if top := h.labels[len(h.labels)-1]; reservedTop(top) && top != namesLabel {
		return Hostname{}, fmt.Errorf("hostname %q: %w: it lies in the reserved subtree %s.%s", h.hostname, ErrNameRefused, top, skydnsrecord.CanonicalName(zone))
	}
	if gr, ok := grants.owner(h.name); ok {
		if gr.Namespace != namespace {
			return Hostname{}, fmt.Errorf("hostname %q: %w %q: %s is granted to namespace %q", h.hostname, ErrNameRefused, namespace, gr.Suffix, gr.Namespace)
		}
		return Hostname{Name: h.name, Kind: KindName, Namespace: namespace}, nil
	}
	if err := ValidateLabel(namespace); err == nil && h.name == DefaultNameHostname(label, namespace, zone) {
		return Hostname{Name: h.name, Kind: KindName, Namespace: namespace}, nil
	}
	allowed := []string{"<label>." + namespace + "." + namesLabel + "." + skydnsrecord.CanonicalName(zone)}
	for _, s := range grants.Of(namespace) {
		allowed = append(allowed, "<label>."+s)
	}
	return Hostname{}, fmt.Errorf("hostname %q: %w %q: want %s", h.hostname, ErrNameRefused, namespace, strings.Join(allowed, " or "))
}
