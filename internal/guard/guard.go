// Package guard writes the part of the DNS server's Corefile that stands
// between a query and the etcd plugin: the rewrites of the wildcard names
// and the templates that answer empty non-terminals and refuse every name
// that is not of a shape the zone publishes. It is generated from the
// name grammar (contract.Shapes), never kept by hand beside it.
//
// The stock etcd plugin turns a query name into a key path by reversing
// its labels; a label may hold '/' or be the plugin's wildcard "any", so
// without the guard one query can read any part of the tree, the whole
// zone included. With it, the plugin only ever reads the key of a name
// the grammar accepts.
package guard

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// Snippet is the name of the snippet the generated file defines for the
// zone's server block: `import xcc-zone` in the top-level Corefile.
const Snippet = "xcc-zone"

// Negative answers carry the zone's SOA with this TTL: how long a
// resolver may cache that a name does not exist.
const negativeTTL = 5

// Rewrite is one rule of the rewrite plugin: a name matching Regex is
// answered from Replacement, under the name that was asked. The answer's
// names below Replacement are mapped back below the name asked (the
// plugin's "answer auto"), unless Answers says how to map them.
type Rewrite struct {
	Comment     string
	Regex       string
	Replacement string
	Answers     []Answer
}

// Answer is one answer rule of a Rewrite: every record's owner name
// ("name") or target ("value") matching Regex becomes Replacement.
type Answer struct {
	Field       string
	Regex       string
	Replacement string
}

// Template is one block of the template plugin. A query of Type ("ANY":
// every type) whose name matches one of Match and for which Expr (if any)
// is true is answered with Rcode and Answer; any other goes on.
type Template struct {
	Comment string
	Type    string
	Match   []string
	Expr    string
	Rcode   string
	Answer  string
}

// View is a server block of its own for the queries of the zone for
// which Expr is true (the view plugin), before the zone's block: those
// queries skip its rewrites and templates, take the view's Rewrites and
// go on to the etcd plugin, so Expr must accept only names whose key,
// rewritten, may be read.
type View struct {
	Comment  string
	Name     string
	Expr     string
	Rewrites []Rewrite
}

// Zone is the guard of one zone: views, then rewrites, then templates in
// order.
type Zone struct {
	// Name is the zone, canonical; empty for the reverse zones, whose
	// templates take the zones of their server block.
	Name      string
	Views     []View
	Rewrites  []Rewrite
	Templates []Template
}

// Forward is the guard of the forward zone for the grammar's shapes.
func Forward(zone string, shapes []contract.Shape) Zone {
	zone = skydnsrecord.CanonicalName(zone)
	z := Zone{Name: zone}
	soa := fmt.Sprintf("%s. %%d IN SOA ns.dns.%[1]s. hostmaster.%[1]s. 1 7200 1800 86400 %d", zone, negativeTTL)
	negative := fmt.Sprintf(soa, negativeTTL)
	apex := "^" + dots(zone) + `\.$`
	suffix := `\.` + dots(zone) + `\.$`

	var empty, records, roots, notSRV, txt, srvAt, srvAtDocs []string
	var srvRewrites, refusals []Rewrite
	closed := false
	for _, s := range shapes {
		if len(s.Labels) == 0 {
			// A root without labels closes the zone: every name below it
			// is of a shape or refused.
			closed = closed || s.Root
			continue
		}
		re := shapeRegex(s.Labels, `\.`)
		if s.Stored {
			// The templates see the name after the rewrites, so they
			// cannot tell a stored name asked from one rewritten onto:
			// a rewrite ahead of the others moves the asked one below
			// the label the templates refuse.
			refusals = append(refusals, Rewrite{
				Comment:     doc(s.Labels, zone) + " (" + s.Kind + ") holds the records of another name and is none itself: asked, it is moved below the label \"" + refusedLabel + "\", NXDOMAIN.",
				Regex:       "^(" + re + `\.` + dots(zone) + `)\.$`,
				Replacement: refusedLabel + ".{1}.",
			})
		}
		if s.TXT {
			txt = append(txt, re)
		}
		switch {
		case s.Empty:
			empty = append(empty, re)
		case !s.SRV:
			notSRV = append(notSRV, re)
		}
		if !s.Empty {
			records = append(records, shapeRegex(s.Labels, "[.]"))
		}
		if s.Root {
			roots = append(roots, re)
		}
		if s.SRVAt != "" && !s.Empty {
			srvAt = append(srvAt, shapeRegex(s.Labels, "[.]"))
			srvAtDocs = append(srvAtDocs, doc(s.Labels, zone))
			srvRewrites = append(srvRewrites, Rewrite{
				Comment:     "SRV of " + doc(s.Labels, zone) + " is stored at " + s.SRVAt + " below it.",
				Regex:       "^(" + re + `\.` + dots(zone) + `)\.$`,
				Replacement: s.SRVAt + ".{1}.",
			})
		}
		if s.Wildcard {
			z.Rewrites = append(z.Rewrites, Rewrite{
				Comment:     "Every name below " + doc(s.Labels, zone) + " (" + s.Kind + ") answers its records.",
				Regex:       `^(?:[a-z0-9-]+\.)+(` + re + `\.` + dots(zone) + `)\.$`,
				Replacement: "{1}.",
			})
		}
		if t := s.Targets; t != nil && s.SRV && !s.Stored {
			z.Rewrites = append(z.Rewrites, targetsRewrite(s, zone))
		}
		if s.StoredAt != "" {
			z.Rewrites = append(z.Rewrites, Rewrite{
				Comment:     doc(s.Labels, zone) + " (" + s.Kind + ") is stored at " + s.StoredAt + " below it: the etcd plugin would answer the name itself with every record below it.",
				Regex:       "^(" + re + `\.` + dots(zone) + `)\.$`,
				Replacement: s.StoredAt + ".{1}.",
			})
		}
	}
	z.Rewrites = append(refusals, z.Rewrites...)
	if len(srvAt) > 0 {
		z.Views = append(z.Views, View{
			Comment:  "SRV of " + strings.Join(srvAtDocs, ", ") + ": a block of its own, since a rewrite cannot tell types apart. The name is of the shape, without the label \"any\".",
			Name:     "srv-of-name",
			Expr:     "type() == 'SRV' && name() matches '^(?:" + strings.Join(srvAt, "|") + ")[.]" + exprDots(zone) + "[.]$' && !(name() matches '(?:^|[.])any[.]')",
			Rewrites: srvRewrites,
		})
	}
	rootMatch := []string{"(?:^|\\.)(?:" + strings.Join(roots, "|") + ")" + suffix}
	if closed {
		rootMatch = []string{suffix}
	}
	z.Templates = []Template{
		{Comment: "The zone apex answers SOA and NS itself.", Type: "SOA", Match: []string{apex}, Rcode: "NOERROR", Answer: fmt.Sprintf(soa, 30)},
		{Type: "NS", Match: []string{apex}, Rcode: "NOERROR", Answer: fmt.Sprintf("%s. 30 IN NS ns.dns.%[1]s.", zone)},
		{
			Comment: "A byte other than a letter, digit, '-', '_' or '.', or a label \"any\" (the etcd plugin's wildcard, which reads the whole subtree above it): NXDOMAIN. Names are lower case here.",
			Type:    "ANY", Match: []string{`[^-a-z0-9_.]`, `^any\.`, `\.any\.`}, Rcode: "NXDOMAIN", Answer: negative,
		},
		{
			Comment: "Empty non-terminals: NODATA, never the records below them.",
			Type:    "ANY", Match: []string{apex, "^(?:" + strings.Join(empty, "|") + ")" + suffix}, Rcode: "NOERROR", Answer: negative,
		},
		{
			Comment: "Inside " + strings.Join(rootNames(shapes, zone), ", ") + " only the names of the grammar exist: NXDOMAIN for any other.",
			Type:    "ANY", Match: rootMatch,
			Expr:  "!(name() matches '^(?:" + strings.Join(records, "|") + ")[.]" + exprDots(zone) + "[.]$')",
			Rcode: "NXDOMAIN", Answer: negative,
		},
		{
			Comment: "SRV names answer SRV only (for other types the etcd plugin would answer a CNAME per target).",
			Type:    "ANY", Match: []string{"^(?:" + strings.Join(shapeRegexes(shapes, true), "|") + ")" + suffix},
			Expr: "type() != 'SRV'", Rcode: "NOERROR", Answer: negative,
		},
		{
			Comment: "No other name of the grammar answers SRV: the answer would name the record keys below it.",
			Type:    "SRV", Match: []string{"^(?:" + strings.Join(notSRV, "|") + ")" + suffix}, Rcode: "NOERROR", Answer: negative,
		},
	}
	if len(txt) > 0 {
		z.Templates = append(z.Templates, Template{
			Comment: "TXT names answer TXT only (for other types the etcd plugin would answer a CNAME to nothing).",
			Type:    "ANY", Match: []string{"^(?:" + strings.Join(txt, "|") + ")" + suffix},
			Expr: "type() != 'TXT'", Rcode: "NOERROR", Answer: negative,
		})
	}
	return z
}

// targetsRewrite reads the SRV name of shape s (whose Targets are stored
// below it) as it is and maps the names of the answer's targets and of
// their address records from where they are stored back onto the targets:
// <pod>.<cluster>._<port>._<proto>.X becomes <pod>.<cluster>.X. The SRV
// records' own name, the question's, is left alone.
func targetsRewrite(s contract.Shape, zone string) Rewrite {
	t := s.Targets
	stored := "^(" + shapeRegex(t.Labels, `\.`) + `)\.` + shapeRegex(s.Labels[:t.Up], `\.`) + `\.(` + shapeRegex(s.Labels[t.Up:], `\.`) + `\.` + dots(zone) + `)\.$`
	return Rewrite{
		Comment:     "SRV of " + doc(s.Labels, zone) + " (" + s.Kind + "): each target's addresses are stored below it, at " + doc(append(slices.Clone(t.Labels), s.Labels...), zone) + ", read with it; the answer names them after the targets, " + doc(append(slices.Clone(t.Labels), s.Labels[t.Up:]...), zone) + ".",
		Regex:       "^(" + shapeRegex(s.Labels, `\.`) + `\.` + dots(zone) + `)\.$`,
		Replacement: "{1}.",
		Answers: []Answer{
			{Field: "name", Regex: stored, Replacement: "{1}.{2}."},
			{Field: "value", Regex: stored, Replacement: "{1}.{2}."},
		},
	}
}

// Reverse is the guard of the reverse zones of the operator's CIDRs: only
// the reverse name of one address reaches etcd, and only for PTR (the etcd
// plugin reads that one key); the names above it are empty non-terminals.
func Reverse() Zone {
	const (
		octet  = `(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
		nibble = `[0-9a-f]`
	)
	negative := fmt.Sprintf("{{ .Zone }} %d IN SOA ns.dns.{{ .Zone }} hostmaster.{{ .Zone }} 1 7200 1800 86400 %d", negativeTTL, negativeTTL)
	full4 := `^(?:` + octet + `[.]){4}in-addr[.]arpa[.]$`
	full6 := `^(?:` + nibble + `[.]){32}ip6[.]arpa[.]$`
	return Zone{Templates: []Template{
		{
			Comment: "Names above an address: empty non-terminals, NODATA.",
			Type:    "ANY", Match: []string{`^(?:` + octet + `\.){0,3}in-addr\.arpa\.$`, `^(?:` + nibble + `\.){0,31}ip6\.arpa\.$`}, Rcode: "NOERROR", Answer: negative,
		},
		{
			Comment: "Any name that is not the reverse name of one address: NXDOMAIN.",
			Type:    "ANY", Match: []string{"."}, Expr: "!(name() matches '" + full4 + "' || name() matches '" + full6 + "')", Rcode: "NXDOMAIN", Answer: negative,
		},
		{
			Comment: "PTR only: for other types the etcd plugin would answer a CNAME to the PTR target.",
			Type:    "ANY", Match: []string{"."}, Expr: "type() != 'PTR'", Rcode: "NOERROR", Answer: negative,
		},
	}}
}

// shapeRegex is the regular expression of a shape's labels, joined by sep
// (`\.` in match lines; `[.]` inside expressions, where no backslash
// survives both the Corefile's and the expression's quoting).
func shapeRegex(labels []contract.Label, sep string) string {
	parts := make([]string, len(labels))
	for i, l := range labels {
		switch l.Class {
		case contract.LabelLiteral:
			parts[i] = l.Text
		case contract.LabelName:
			parts[i] = nameLabel
		case contract.LabelPort:
			parts[i] = "_" + nameLabel
		case contract.LabelProto:
			parts[i] = "_(?:tcp|udp|sctp)"
		}
	}
	return strings.Join(parts, sep)
}

// refusedLabel is the etcd plugin's wildcard label, which the first
// template answers NXDOMAIN: a stored name asked is rewritten below it.
// Were it ever to reach the plugin, it would read only the subtree of
// the stored name, the one name's records.
const refusedLabel = "any"

// nameLabel is contract.LabelName as a regular expression; "any" is
// refused by an earlier template.
const nameLabel = "[a-z0-9-]+"

func shapeRegexes(shapes []contract.Shape, srv bool) []string {
	var out []string
	for _, s := range shapes {
		if s.SRV == srv && !s.Empty {
			out = append(out, shapeRegex(s.Labels, `\.`))
		}
	}
	return out
}

// dots writes a name for a match line; names of the grammar hold only
// letters, digits, '-' and '_', so a dot is the one character to escape.
func dots(name string) string { return strings.ReplaceAll(name, ".", `\.`) }

// exprDots writes a name for a regular expression inside an expression.
func exprDots(name string) string { return strings.ReplaceAll(name, ".", "[.]") }

// doc writes a shape as docs do: *.gateway.<cluster>.<ns>.clusters.<zone>.
func doc(labels []contract.Label, zone string) string {
	parts := make([]string, 0, len(labels)+1)
	for _, l := range labels {
		parts = append(parts, l.Text)
	}
	return strings.Join(append(parts, zone), ".")
}

func rootNames(shapes []contract.Shape, zone string) []string {
	var out []string
	for _, s := range shapes {
		if s.Root && len(s.Labels) == 0 {
			return []string{"the zone " + zone}
		}
		if s.Root {
			out = append(out, doc(s.Labels, zone))
		}
	}
	return out
}

// Config is what the generated file depends on: the serve flags of the
// same names.
type Config struct {
	Zone         string
	Grants       contract.Grants
	ReverseCIDRs cidr.List
	// ClusterSetZone is the zone of the MCS DNS specification
	// (--clusterset-zone); empty: none.
	ClusterSetZone string
}

// Write writes the file the top-level Corefile imports: the snippet
// xcc-zone for the zone's server block, a server block for the reverse
// zones of cfg.ReverseCIDRs (none without them) and one for the
// clusterset zone (none without it).
func Write(w io.Writer, cfg Config) error {
	if err := skydnsrecord.ValidateName(skydnsrecord.CanonicalName(cfg.Zone)); err != nil {
		return fmt.Errorf("zone %q: %w", cfg.Zone, err)
	}
	if err := contract.CheckClusterSetZone(cfg.Zone, cfg.ClusterSetZone); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "\n# The %s zone, imported into its server block.\n(%s) {\n", skydnsrecord.CanonicalName(cfg.Zone), Snippet)
	fz := Forward(cfg.Zone, contract.Shapes(cfg.Zone, cfg.Grants))
	if len(fz.Views) > 0 {
		// A snippet is imported into one block; a view needs one of its own.
		return fmt.Errorf("zone %q: a view in the imported snippet", cfg.Zone)
	}
	fz.write(&b, "    ")
	b.WriteString("}\n")
	if len(cfg.ReverseCIDRs) > 0 {
		keys := make([]string, len(cfg.ReverseCIDRs))
		for i, p := range cfg.ReverseCIDRs {
			keys[i] = p.String() + ":{$DNS_PORT}"
		}
		fmt.Fprintf(&b, "\n# Reverse zones of the operator's reverse CIDRs: PTR records of the\n# gateway and API addresses inside them.\n%s {\n%s", strings.Join(keys, " "), blockHead)
		Reverse().write(&b, "    ")
		b.WriteString(blockTail + "}\n")
	}
	if cfg.ClusterSetZone != "" {
		zone := skydnsrecord.CanonicalName(cfg.ClusterSetZone)
		cz := Forward(zone, contract.ClusterSetShapes())
		for _, v := range cz.Views {
			b.WriteString("\n")
			comment(&b, "", v.Comment)
			fmt.Fprintf(&b, "%s:{$DNS_PORT} {\n    view %s {\n        expr \"%s\"\n    }\n%s", zone, v.Name, v.Expr, blockHead)
			Zone{Rewrites: v.Rewrites}.write(&b, "    ")
			b.WriteString(blockTail + "}\n")
		}
		fmt.Fprintf(&b, "\n# The %s zone of the Multi-Cluster Services DNS specification\n# (schema %s): only its names exist here, no name put by hand.\n%s:{$DNS_PORT} {\n%s",
			zone, contract.DNSVersion, zone, blockHead)
		cz.write(&b, "    ")
		b.WriteString(blockTail + "}\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const header = `# Generated by xcc-syncer corefile from the name grammar of xcc-dns
# (internal/contract, internal/guard). Do not edit: the DNS pod writes it
# anew at every start from serve's flags (--domain, --name-grants,
# --reverse-cidrs, --clusterset-zone).
#
# Only names of a shape the zone publishes reach the etcd plugin, which
# reads the key path of the name asked: a label "any" or a '/' would make
# it read any part of the tree. Names are lower case here; in expressions
# a dot is written [.], since no backslash survives both quotings.
`

// blockHead and blockTail open and close the server blocks the file adds
// (reverse zones, clusterset zone) around their guard, as the top-level
// Corefile's zone block does.
const (
	blockHead = `    errors
    prometheus :{$METRICS_PORT}
    cache {
        success 65536
        denial 9984 5
        serve_stale 1h verify 200ms 5s 5s
    }
`
	blockTail = `    etcd {
        path /skydns
        endpoint {$ETCD_ENDPOINT}
    }
`
)

// write writes z's rewrites and templates, each line indented by indent.
func (z Zone) write(b *strings.Builder, indent string) {
	for _, r := range z.Rewrites {
		comment(b, indent, r.Comment)
		fmt.Fprintf(b, "%srewrite stop {\n%s    name regex %s %s\n", indent, indent, r.Regex, r.Replacement)
		if len(r.Answers) == 0 {
			fmt.Fprintf(b, "%s    answer auto\n", indent)
		}
		for _, a := range r.Answers {
			fmt.Fprintf(b, "%s    answer %s %s %s\n", indent, a.Field, a.Regex, a.Replacement)
		}
		fmt.Fprintf(b, "%s}\n", indent)
	}
	for _, t := range z.Templates {
		comment(b, indent, t.Comment)
		fmt.Fprintf(b, "%stemplate IN %s%s {\n", indent, t.Type, strings.TrimRight(" "+z.Name, " "))
		fmt.Fprintf(b, "%s    match %s\n", indent, strings.Join(t.Match, " "))
		// Expressions and records hold no '"' or '\\': quoted as they are.
		if t.Expr != "" {
			fmt.Fprintf(b, "%s    expr \"%s\"\n", indent, t.Expr)
		}
		fmt.Fprintf(b, "%s    rcode %s\n", indent, t.Rcode)
		section := "authority"
		if t.Type == "SOA" || t.Type == "NS" {
			section = "answer"
		}
		fmt.Fprintf(b, "%s    %s \"%s\"\n", indent, section, t.Answer)
		fmt.Fprintf(b, "%s    fallthrough\n%s}\n", indent, indent)
	}
}

// comment writes text as comment lines of at most about 72 characters.
func comment(b *strings.Builder, indent, text string) {
	if text == "" {
		return
	}
	line := indent + "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 76 && line != indent+"#" {
			b.WriteString(line + "\n")
			line = indent + "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}
