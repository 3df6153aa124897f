package contract

import (
	"fmt"
	"strings"

	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// The name grammar of the zone: every shape of name xcc-dns publishes,
// written once. serve and the controller build names by the functions of
// this package; the DNS server's guard (internal/guard) is generated from
// Shapes, so that only names of these shapes reach the etcd plugin, which
// would otherwise turn any query name into a read of any part of the tree.
//
// Below the zone there are three kinds of subtree:
//
//   - structured: clusters., gateways., names., services. and the
//     operator's grants. Only the shapes listed in Shapes exist there.
//   - reserved for the DNS server: the apex, dns. and ns. (the etcd plugin
//     keeps the zone's own NS records at ns.dns.<zone>). No grant may
//     cover them.
//   - everything else: names an operator puts into etcd by hand
//     (`etcdctl put`), answered as the etcd plugin answers them.
//
// Everywhere, a name whose labels hold anything but letters, digits, '-'
// and '_', or whose label is "any" (the etcd plugin's wildcard), is
// refused.

// LabelClass is what one label of a shape may be.
type LabelClass int

const (
	// LabelLiteral is the label Label.Text itself.
	LabelLiteral LabelClass = iota
	// LabelName is a label of letters, digits and '-' other than "any": a
	// cluster, a namespace, a GatewayDNS, a Service's name or a pod. (What
	// is published is stricter, RFC 1123; the guard only has to keep the
	// etcd plugin's reads to the shapes.)
	LabelName
	// LabelPort is '_' and a port name of an SRV name (_<port>).
	LabelPort
	// LabelProto is the protocol label of an SRV name: _tcp, _udp, _sctp.
	LabelProto
)

// Label is one label of a Shape.
type Label struct {
	Class LabelClass
	// Text is the label of a LabelLiteral; for the other classes, how
	// docs write it (<cluster>, <ns>, ...).
	Text string
}

// Shape is one shape of name in a structured subtree.
type Shape struct {
	// Kind names the shape in docs and generated comments.
	Kind string
	// Labels are the name's labels below the zone, leftmost first.
	Labels []Label
	// Empty: an empty non-terminal, NODATA for every type without reading
	// etcd (the etcd plugin would answer it with every record below it).
	// Otherwise the name answers the records stored at it.
	Empty bool
	// Wildcard: every name below the shape answers the shape's records
	// under the name asked (*.gateway.<cluster>...). The etcd plugin
	// cannot serve a stored wildcard, so the DNS server rewrites.
	Wildcard bool
	// StoredAt is the label below the name where its records are stored
	// ("_all" for a headless name across clusters: the etcd plugin would
	// answer the name itself with every record below it).
	StoredAt string
	// SRV: the name answers SRV and nothing else; no other name answers
	// SRV (its answer would name the record keys below the asked name),
	// except one with SRVAt.
	SRV bool
	// SRVAt: SRV of the name is answered from the records stored at this
	// label below it (serve keeps there each distinct target and port of
	// the name's SRV names: an RRset holds no record twice, and a port of
	// one number in TCP and UDP is two SRV names with one target). CoreDNS's
	// kubernetes plugin answers SRV at a service's name, and the MCS
	// conformance suite asks it there. Other types read StoredAt.
	SRVAt string
	// TXT: the name answers TXT and nothing else (dns-version of the
	// clusterset zone).
	TXT bool
	// Stored: a name where the records of another shape's name are
	// stored (its StoredAt or SRVAt). The DNS server's rewrites read its
	// key; asked itself it is no name of the zone and NXDOMAIN, else it
	// would answer X's records under a name no specification has.
	Stored bool
	// Targets: an SRV name whose records hold its targets' addresses,
	// stored below it (SRVTargetStoredName), so that the one read of the
	// SRV name answers every target with its addresses. The DNS server
	// names them back after the targets.
	Targets *StoredTargets
	// Root: a subtree that holds only names of Shapes (a structured
	// subtree or a grant's suffix); any other name below it is refused.
	// A Root shape without labels closes the whole zone (the clusterset
	// zone): no name is put there by hand.
	Root bool
}

// StoredTargets says where an SRV shape keeps its targets' addresses.
// The etcd plugin makes an SRV record whose host is an address a target
// named after the record's own key (less its leaf), and adds the address
// to the additional section with no further read; a target stored by
// name costs a read of its own per target. So a target of the SRV name
// _<port>._<proto>.X, a name below X, is stored at its labels below X
// followed by the SRV name (<pod>.<cluster>._<port>._<proto>.X), which
// the DNS server maps back onto the target (<pod>.<cluster>.X) in the
// answer. The stored names are no names of the zone: refused when asked.
type StoredTargets struct {
	// Labels are a target's labels below X.
	Labels []Label
	// Up is the number of the SRV name's first labels that lie below X.
	Up int
}

// StructuredSubtrees are the top labels below the zone whose names are all
// listed in Shapes.
var StructuredSubtrees = []string{clustersLabel, gatewaysLabel, namesLabel, servicesLabel}

// ReservedLabels are the top labels below the zone that belong to the DNS
// server itself: the etcd plugin reads the zone's NS records at
// ns.dns.<zone> and its apex records at apex.dns.<zone>; ns.<zone> is the
// conventional name server name. No grant or claimed name may lie there.
var ReservedLabels = []string{"dns", "ns"}

// Text classes of the labels a query name may hold. They are written both
// as Go (isNameLabel, ...) and as regular expressions (internal/guard);
// a fuzz test holds the two equal.
const (
	// queryBytes are the bytes any label of an accepted name may hold.
	queryBytes = "abcdefghijklmnopqrstuvwxyz0123456789-_"
	// wildcardBytes are the bytes of a label below a wildcard name.
	wildcardBytes = "abcdefghijklmnopqrstuvwxyz0123456789-"
)

var protoLabels = []string{"_tcp", "_udp", "_sctp"}

func lit(s string) Label        { return Label{Class: LabelLiteral, Text: s} }
func variable(doc string) Label { return Label{Class: LabelName, Text: doc} }
func labels(l ...Label) []Label { return l }

// Shapes returns every shape of the structured subtrees of zone for the
// operator's grants (which ParseGrants read for the same zone).
func Shapes(zone string, grants Grants) []Shape {
	zone = skydnsrecord.CanonicalName(zone)
	c, ns, gd := variable("<cluster>"), variable("<ns>"), variable("<gatewaydns>")
	clusters, gateways, names, services := lit(clustersLabel), lit(gatewaysLabel), lit(namesLabel), lit(servicesLabel)
	out := []Shape{
		{Kind: "clusters", Labels: labels(clusters), Empty: true, Root: true},
		{Kind: "namespace of clusters", Labels: labels(ns, clusters), Empty: true},
		{Kind: "cluster", Labels: labels(c, ns, clusters), Empty: true},
		{Kind: string(KindGateway), Labels: labels(lit(string(KindGateway)), c, ns, clusters), Wildcard: true},
		{Kind: string(KindAPI), Labels: labels(lit(string(KindAPI)), c, ns, clusters)},
		{Kind: "gateways", Labels: labels(gateways), Empty: true, Root: true},
		{Kind: "namespace of gateways", Labels: labels(ns, gateways), Empty: true},
		{Kind: string(KindGateways), Labels: labels(gd, ns, gateways), Wildcard: true},
		{Kind: "names", Labels: labels(names), Empty: true, Root: true},
		{Kind: "namespace of names", Labels: labels(ns, names), Empty: true},
		{Kind: string(KindName), Labels: labels(variable("<name>"), ns, names)},
		{Kind: "services", Labels: labels(services), Empty: true, Root: true},
		{Kind: "namespace of services", Labels: labels(ns, services), Empty: true},
		{Kind: string(KindHeadless), Labels: labels(gd, ns, services), StoredAt: headlessAllLabel},
		{Kind: "headless, stored", Labels: labels(lit(headlessAllLabel), gd, ns, services), Stored: true},
		{Kind: "headless cluster", Labels: labels(c, gd, ns, services)},
		{Kind: "headless pod", Labels: labels(variable("<pod>"), c, gd, ns, services)},
		{Kind: "headless protocol", Labels: labels(Label{Class: LabelProto, Text: "_<proto>"}, gd, ns, services), Empty: true},
		{Kind: "headless SRV", Labels: labels(Label{Class: LabelPort, Text: "_<port>"}, Label{Class: LabelProto, Text: "_<proto>"}, gd, ns, services), SRV: true,
			Targets: &StoredTargets{Labels: labels(variable("<pod>"), c), Up: 2}},
	}
	// A grant's suffix and the names between it and the zone are empty
	// non-terminals; the names one label below the suffix are the grant's.
	seen := map[string]bool{}
	for _, g := range grants.list {
		parts := strings.Split(strings.TrimSuffix(g.Suffix, "."+zone), ".")
		for i := range parts {
			if ancestor := strings.Join(parts[i:], "."); !seen[ancestor] {
				seen[ancestor] = true
				out = append(out, Shape{Kind: "granted suffix", Labels: literals(parts[i:]), Empty: true, Root: i == 0})
			}
		}
		out = append(out, Shape{Kind: "granted name of " + g.Namespace, Labels: append(labels(variable("<name>")), literals(parts)...)})
	}
	return out
}

// literals turns zone-relative labels into literal Labels.
func literals(parts []string) []Label {
	out := make([]Label, len(parts))
	for i, p := range parts {
		out[i] = lit(p)
	}
	return out
}

// Verdict is what the DNS server does with a query name.
type Verdict struct {
	// Refused: NXDOMAIN without reading etcd. Why says which rule refused
	// it, in words (for `xcc-syncer explain`); empty unless Refused.
	Refused bool
	Why     string
	// Empty: an empty non-terminal (NODATA). Stored is the name whose key
	// the etcd plugin reads (the name after the wildcard and headless
	// rewrites).
	Empty  bool
	Stored string
	// Shape is the matched shape; nil for the apex and for names put by
	// hand.
	Shape *Shape
}

// ClassifyQuery says what the DNS server answers for a query name (lower case,
// presentation format as miekg/dns prints it, with or without the final
// dot) in zone, whose shapes are Shapes(zone, ...): the structural
// reading of the grammar, which the generated guard must agree with.
func ClassifyQuery(query, zone string, shapes []Shape) Verdict {
	zone = skydnsrecord.CanonicalName(zone)
	q := strings.TrimSuffix(query, ".")
	if q == zone {
		return Verdict{Empty: true, Stored: zone}
	}
	if bad := strings.Trim(q, queryBytes+"."); bad != "" {
		i := strings.IndexFunc(q, func(r rune) bool { return !strings.ContainsRune(queryBytes+".", r) })
		return refused(fmt.Sprintf("byte %q: a label holds only letters, digits, '-' and '_'", q[i]))
	}
	if !strings.HasSuffix(q, "."+zone) {
		return refused("not in the zone " + zone)
	}
	rel := strings.Split(strings.TrimSuffix(q, "."+zone), ".")
	// Wildcard names first: the labels below one are never stored, so
	// "any" there is just a label.
	for i := range shapes {
		s := &shapes[i]
		if !s.Wildcard || len(rel) <= len(s.Labels) {
			continue
		}
		prefix, rest := rel[:len(rel)-len(s.Labels)], rel[len(rel)-len(s.Labels):]
		if allLabelsOf(prefix, wildcardBytes) && s.matches(rest) {
			return Verdict{Empty: s.Empty, Stored: strings.Join(rest, ".") + "." + zone, Shape: s}
		}
	}
	for _, l := range rel {
		if l == "" {
			return refused("an empty label")
		}
		if l == wildcardLabel {
			return refused(`a label "any": the etcd plugin's wildcard, which would read the whole subtree`)
		}
	}
	for i := range shapes {
		s := &shapes[i]
		if len(rel) == len(s.Labels) && s.matches(rel) {
			if s.Stored {
				return refused("where the records of another name are stored (" + s.Kind + "), no name itself")
			}
			stored := q
			if s.StoredAt != "" {
				stored = s.StoredAt + "." + q
			}
			return Verdict{Empty: s.Empty, Stored: stored, Shape: s}
		}
	}
	// Inside a structured subtree or a grant, only the shapes exist.
	for i := range shapes {
		s := &shapes[i]
		if s.Root && len(rel) > len(s.Labels) && s.matches(rel[len(rel)-len(s.Labels):]) {
			below := strings.Join(append(rel[len(rel)-len(s.Labels):], zone), ".")
			return refused("no name of this shape below " + below + ": only the shapes the zone publishes exist there")
		}
	}
	return Verdict{Stored: q}
}

func refused(why string) Verdict { return Verdict{Refused: true, Why: why} }

// matches reports whether labels rel (as many as s has) are of s's shape.
func (s *Shape) matches(rel []string) bool {
	for i, l := range s.Labels {
		if !l.matches(rel[i]) {
			return false
		}
	}
	return true
}

func (l Label) matches(text string) bool {
	switch l.Class {
	case LabelLiteral:
		return text == l.Text
	case LabelName:
		return isNameLabel(text)
	case LabelPort:
		// "_any" is no wildcard to the etcd plugin: only "any" is.
		return strings.HasPrefix(text, "_") && allOf(text[1:], wildcardBytes)
	case LabelProto:
		for _, p := range protoLabels {
			if text == p {
				return true
			}
		}
	}
	return false
}

// isNameLabel: letters, digits and '-', not "any".
func isNameLabel(s string) bool { return s != wildcardLabel && allOf(s, wildcardBytes) }

func allOf(s, set string) bool { return s != "" && strings.Trim(s, set) == "" }

func allLabelsOf(labels []string, set string) bool {
	for _, l := range labels {
		if !allOf(l, set) {
			return false
		}
	}
	return true
}

// ReadsEtcd reports whether a query of type qtype for a name of verdict v
// goes on to the etcd plugin: accepted, not an empty non-terminal, and SRV
// exactly where SRV lives (names put by hand answer every type).
func (v Verdict) ReadsEtcd(qtype string) bool {
	if v.Refused || v.Empty {
		return false
	}
	if v.Shape == nil {
		return true
	}
	if v.Shape.TXT {
		return qtype == "TXT"
	}
	if v.Shape.SRVAt != "" && qtype == "SRV" {
		return true
	}
	return v.Shape.SRV == (qtype == "SRV")
}

// StoredFor is the name whose key the etcd plugin reads for a query of
// type qtype of verdict v: Stored, except SRV of a name with SRVAt.
func (v Verdict) StoredFor(qtype string) string {
	if v.Shape == nil || v.Shape.SRVAt == "" || qtype != "SRV" {
		return v.Stored
	}
	name := v.Stored
	if v.Shape.StoredAt != "" {
		name = strings.TrimPrefix(name, v.Shape.StoredAt+".")
	}
	return v.Shape.SRVAt + "." + name
}
