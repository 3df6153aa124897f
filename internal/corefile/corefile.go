// Package corefile adds, replaces and removes the xcc-dns forward block in a
// cluster's CoreDNS Corefile (kube-system/coredns), and refuses to produce a
// Corefile that CoreDNS's own parser rejects.
//
// The block lives between two marker comments so that it can be found again
// without guessing: everything outside the markers belongs to the user and is
// kept byte for byte. Patching twice gives the same text, so a second run
// writes nothing.
package corefile

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/parse"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
)

const (
	// BeginMarker starts the managed block. A line whose text (without
	// indentation) starts with it opens the block; the rest of the line is
	// free text for the human reader.
	BeginMarker = "# xcc-dns begin"
	// EndMarker is the line that closes the managed block.
	EndMarker = "# xcc-dns end"

	// DefaultZone is the zone forwarded to the xcc-dns server.
	DefaultZone = "xcc.test"
	// DefaultClusterSetZone is the MCS DNS specification's zone, forwarded
	// beside it unless the flag is empty (contract.DefaultClusterSetZone).
	DefaultClusterSetZone = "clusterset.local"
	// DNSPort is the port cluster DNS serves on; the block listens there
	// like the kubeadm default `.:53` block does.
	DNSPort = "53"
	// CacheSeconds caps how long cluster DNS keeps an answer from us. It is
	// the main cache in front of the xcc-dns server (which mostly sees
	// misses); record TTLs (30 s) and the zone's negative TTL (5 s) are
	// shorter or equal, so it never extends what we publish.
	CacheSeconds = 30

	// beginComment is the full first line of the block.
	beginComment = BeginMarker + ": managed by xcc-syncer patch-corefile; edits inside are overwritten"
	// indent matches the kubeadm default Corefile.
	indent = "    "
	// fileName names the Corefile in parser errors.
	fileName = "Corefile"
)

// Options says what Patch does.
type Options struct {
	// Zone is the zone forwarded; DefaultZone when empty.
	Zone string
	// ClusterSetZone is forwarded too, when set: the zone of the MCS DNS
	// specification (clusterset.local) that the xcc-dns server also serves.
	ClusterSetZone string
	// ClusterSetServer says who answers ClusterSetZone: ClusterSetServe
	// (or empty), the xcc-dns server, through the managed block; or
	// ClusterSetCoreDNS, the cluster DNS's own kubernetes plugin, whose
	// line gets the zone and the multicluster option instead.
	ClusterSetServer string
	// ForwardTo is the xcc-dns Service address, ip or ip:port (IPv6 with a
	// port as [ip]:port). Required unless Remove.
	ForwardTo string
	// Remove takes the block out instead of adding it.
	Remove bool
	// Service is the namespace/name of the Service the block forwards to,
	// written into the block's first line (`; service <ns>/<name>`), so
	// whoever finds the block later knows what it depends on (see Keep).
	// Empty: the block names none.
	Service string
	// ReverseCIDRs are forwarded too: the block's keys include them, and
	// CoreDNS turns each into its reverse zones. Names in them then reach
	// the xcc-dns server instead of this Corefile's other blocks (such as
	// the kubernetes plugin's in-addr.arpa), so they are load-balancer
	// ranges, never pod or Service ranges.
	ReverseCIDRs cidr.List
}

// Action says what Patch did to the text.
type Action string

// The actions Patch reports.
const (
	Unchanged Action = "unchanged"
	Added     Action = "added"
	Replaced  Action = "replaced"
	Removed   Action = "removed"
)

// Block returns the managed block for zone forwarding to forwardTo, marker
// lines included, ending in a newline. Only what a forward needs is there:
// `errors` so a broken forward shows in cluster DNS's log, `cache` (see
// CacheSeconds) and `forward`. The `.` block's `reload` already reloads the
// whole Corefile, so the block does not need its own.
func Block(zone, forwardTo string, reverse ...netip.Prefix) (string, error) {
	return block(Options{Zone: zone, ForwardTo: forwardTo, ReverseCIDRs: reverse})
}

// serviceTag introduces the Service a block forwards to, on its first line.
const serviceTag = "; service "

func block(o Options) (string, error) {
	zone, forwardTo, reverse := o.Zone, o.ForwardTo, o.ReverseCIDRs
	z, err := normalizeZone(zone)
	if err != nil {
		return "", err
	}
	target, err := normalizeForwardTo(forwardTo)
	if err != nil {
		return "", err
	}
	keys := []string{z + ":" + DNSPort}
	if o.ClusterSetZone != "" && !o.byCoreDNS() {
		cs, err := normalizeZone(o.ClusterSetZone)
		if err != nil {
			return "", err
		}
		keys = append(keys, cs+":"+DNSPort)
	}
	for _, p := range reverse {
		keys = append(keys, p.String()+":"+DNSPort)
	}
	var b strings.Builder
	b.WriteString(beginComment)
	if o.Service != "" {
		if _, _, err := SplitRef(o.Service); err != nil {
			return "", err
		}
		b.WriteString(serviceTag + o.Service)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%s {\n", strings.Join(keys, " "))
	b.WriteString(indent + "errors\n")
	fmt.Fprintf(&b, "%scache %d\n", indent, CacheSeconds)
	fmt.Fprintf(&b, "%sforward . %s\n", indent, target)
	b.WriteString("}\n")
	b.WriteString(EndMarker + "\n")
	return b.String(), nil
}

// Patch returns old with the managed block added (or replaced, or removed
// when o.Remove), and what it did. Text outside the markers is kept byte for
// byte, but for the kubernetes line that ClusterSetCoreDNS replaces between
// markers of its own (see patchKubernetes). It returns an error, and no
// text, when the Corefile reads environment variables or files of this
// machine (readsThisMachine), when the markers are unbalanced, when the
// Corefile already serves the zone outside the markers, or when CoreDNS's
// Corefile parser would reject the result.
func Patch(old string, o Options) (string, Action, error) {
	if err := readsThisMachine(old); err != nil {
		return "", "", err
	}
	if err := CheckClusterSetServer(o.ClusterSetServer); err != nil {
		return "", "", err
	}
	mid, action, err := patchForward(old, o)
	if err != nil {
		return "", "", err
	}
	next, err := patchKubernetes(mid, o)
	if err != nil {
		return "", "", err
	}
	switch {
	case next == old:
		return old, Unchanged, nil
	case action == Unchanged && o.Remove:
		action = Removed
	case action == Unchanged:
		action = Replaced
	}
	if err := Validate(next, old); err != nil {
		return "", "", fmt.Errorf("refusing to write the %s Corefile: %w", action, err)
	}
	return next, action, nil
}

// patchForward adds, replaces or removes the managed forward block.
func patchForward(old string, o Options) (string, Action, error) {
	blk, err := findBlock(old)
	if err != nil {
		return "", "", err
	}
	switch {
	case o.Remove && blk == nil:
		return old, Unchanged, nil
	case o.Remove:
		start := blk.start
		// Adding put one blank line before the block: take it out again so
		// add then remove gives the original back.
		if start >= 2 && old[start-1] == '\n' && old[start-2] == '\n' {
			start--
		}
		return old[:start] + old[blk.end:], Removed, nil
	}
	want, err := block(o)
	if err != nil {
		return "", "", err
	}
	if blk == nil {
		if err := checkZonesFree(old, o); err != nil {
			return "", "", err
		}
		return appendBlock(old, want), Added, nil
	}
	if old[blk.start:blk.end] == want {
		return old, Unchanged, nil
	}
	// New reverse CIDRs may meet a block of the user's.
	if err := checkZonesFree(old[:blk.start]+old[blk.end:], o); err != nil {
		return "", "", err
	}
	return old[:blk.start] + want + old[blk.end:], Replaced, nil
}

// BlockService returns the Service the managed block of corefile names
// (namespace/name), "" when it names none, and whether there is a block.
func BlockService(corefile string) (service string, found bool, err error) {
	blk, err := findBlock(corefile)
	if err != nil || blk == nil {
		return "", false, err
	}
	first, _, _ := strings.Cut(corefile[blk.start:blk.end], "\n")
	if _, svc, ok := strings.Cut(first, serviceTag); ok {
		return strings.TrimSpace(svc), true, nil
	}
	return "", true, nil
}

// SplitRef splits a namespace/name reference.
func SplitRef(ref string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok || namespace == "" || name == "" || strings.ContainsAny(name, "/ \t#") || strings.ContainsAny(namespace, " \t#") {
		return "", "", fmt.Errorf("%q is not namespace/name", ref)
	}
	return namespace, name, nil
}

// appendBlock puts the block at the end, after one blank line.
func appendBlock(old, block string) string {
	switch {
	case old == "":
		return block
	case strings.HasSuffix(old, "\n"):
		return old + "\n" + block
	default:
		return old + "\n\n" + block
	}
}

// span is the byte range of the managed block: from the start of the begin
// marker line to just after the end marker line (its newline included).
type span struct{ start, end int }

// findBlock locates the managed block; nil when there is none.
func findBlock(s string) (*span, error) {
	var found *span
	open := -1
	for pos, lineNo := 0, 1; pos < len(s); lineNo++ {
		next := strings.IndexByte(s[pos:], '\n')
		lineEnd := len(s)
		if next >= 0 {
			lineEnd = pos + next + 1
		}
		text := strings.TrimSpace(s[pos:lineEnd])
		switch {
		case strings.HasPrefix(text, BeginMarker):
			if open >= 0 || found != nil {
				return nil, fmt.Errorf("line %d: a second %q marker; leave one managed block", lineNo, BeginMarker)
			}
			open = pos
		case text == EndMarker:
			if open < 0 {
				return nil, fmt.Errorf("line %d: %q without %q before it", lineNo, EndMarker, BeginMarker)
			}
			found, open = &span{start: open, end: lineEnd}, -1
		}
		pos = lineEnd
	}
	if open >= 0 {
		return nil, fmt.Errorf("%q without %q after it", BeginMarker, EndMarker)
	}
	return found, nil
}

// checkZonesFree refuses to add a second server block on port 53 for the
// zone, the clusterset zone or a reverse zone of o (another MCS
// implementation may serve clusterset.local already): CoreDNS would not start with two (for
// example a block added by hand as the original walkthrough did). The user
// removes theirs, then patches.
func checkZonesFree(corefile string, o Options) error {
	z, err := normalizeZone(o.Zone)
	if err != nil {
		return err
	}
	want := map[string]bool{plugin.Name(z).Normalize(): true}
	if o.ClusterSetZone != "" {
		cs, err := normalizeZone(o.ClusterSetZone)
		if err != nil {
			return err
		}
		want[plugin.Name(cs).Normalize()] = true
	}
	for _, p := range o.ReverseCIDRs {
		hosts, _, err := plugin.SplitHostPort(p.String())
		if err != nil {
			return fmt.Errorf("reverse CIDR %s: %w", p, err)
		}
		for _, h := range hosts {
			want[plugin.Name(h).Normalize()] = true
		}
	}
	blocks, err := caddyfile.Parse(fileName, strings.NewReader(corefile), nil)
	if err != nil {
		return fmt.Errorf("the current Corefile does not parse: %w", err)
	}
	for _, b := range blocks {
		for _, key := range b.Keys {
			hosts, port, err := dnsZones(key)
			if err != nil {
				return fmt.Errorf("the current Corefile has a bad server block key %q: %w", key, err)
			}
			for _, h := range hosts {
				if n := plugin.Name(h).Normalize(); port == DNSPort && want[n] {
					return fmt.Errorf("the Corefile already has a server block for %s (key %q) outside the %q markers; remove it, then patch again", strings.TrimSuffix(n, "."), key, BeginMarker)
				}
			}
		}
	}
	return nil
}

// Validate parses corefile the way CoreDNS does when it loads it: braces,
// server block keys, and directive names. Directive names must be CoreDNS
// plugins, or ones that previous (the Corefile running now) already uses, so
// a cluster DNS built with extra plugins can still be patched. Either
// reading environment variables or importing files of this machine is
// an error (readsThisMachine).
func Validate(corefile, previous string) error {
	for _, text := range []string{corefile, previous} {
		if err := readsThisMachine(text); err != nil {
			return err
		}
	}
	known := append([]string(nil), dnsserver.Directives...)
	if prev, err := caddyfile.Parse(fileName, strings.NewReader(previous), nil); err == nil {
		for _, b := range prev {
			for d := range b.Tokens {
				known = append(known, d)
			}
		}
	}
	blocks, err := caddyfile.Parse(fileName, strings.NewReader(corefile), known)
	if err != nil {
		return fmt.Errorf("CoreDNS's Corefile parser: %w", err)
	}
	if len(blocks) == 0 && strings.TrimSpace(stripComments(corefile)) != "" {
		return errors.New("CoreDNS's Corefile parser found no server block")
	}
	for _, b := range blocks {
		for _, key := range b.Keys {
			_, addr := parse.Transport(key)
			if _, _, err := plugin.SplitHostPort(addr); err != nil {
				return fmt.Errorf("server block key %q: %w", key, err)
			}
		}
	}
	return nil
}

// stripComments drops # comments, so a Corefile of comments only counts as
// empty.
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
	}
	return b.String()
}

// normalizeZone checks zone is a domain name and returns it without a final
// dot, as Corefile keys are usually written.
func normalizeZone(zone string) (string, error) {
	if zone == "" {
		zone = DefaultZone
	}
	z := strings.TrimSuffix(strings.ToLower(zone), ".")
	hosts, port, err := plugin.SplitHostPort(z)
	if err != nil || port != "" || len(hosts) != 1 || hosts[0] != z || z == "" || strings.ContainsAny(z, " {}#\"") {
		return "", fmt.Errorf("zone %q is not a domain name", zone)
	}
	return z, nil
}

// normalizeForwardTo checks forwardTo is an IP address with an optional
// port and returns it in canonical form.
func normalizeForwardTo(forwardTo string) (string, error) {
	if forwardTo == "" {
		return "", errors.New("no address to forward to")
	}
	if ap, err := netip.ParseAddrPort(forwardTo); err == nil {
		if ap.Port() == 0 {
			return "", fmt.Errorf("forward address %q: port 0", forwardTo)
		}
		return ap.String(), nil
	}
	a, err := netip.ParseAddr(forwardTo)
	if err != nil {
		return "", fmt.Errorf("forward address %q is not ip or ip:port (IPv6 with a port as [ip]:port)", forwardTo)
	}
	if a.Zone() != "" {
		return "", fmt.Errorf("forward address %q: no zone index allowed", forwardTo)
	}
	return a.String(), nil
}
