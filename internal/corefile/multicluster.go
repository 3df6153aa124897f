package corefile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
)

// The servers of the clusterset zone Options.ClusterSetServer names.
const (
	// ClusterSetServe forwards the clusterset zone to the xcc-dns server
	// with the zone (the managed block's keys carry it). The default.
	ClusterSetServe = "serve"
	// ClusterSetCoreDNS has the cluster DNS answer the clusterset zone
	// itself: its kubernetes plugin's `multicluster` option reads the
	// ServiceImports and imported EndpointSlices (CoreDNS 1.12.2 and
	// later).
	ClusterSetCoreDNS = "coredns"
)

const (
	// KubernetesBeginMarker opens the lines that replace the user's
	// `kubernetes` line with ClusterSetCoreDNS. Not a prefix of
	// BeginMarker's line, so the two spans are told apart.
	KubernetesBeginMarker = "# xcc-dns kubernetes begin"
	// KubernetesEndMarker closes them.
	KubernetesEndMarker = "# xcc-dns kubernetes end"
	// savedPrefix starts the line, at column 0, that holds the user's
	// `kubernetes` line as it was, byte for byte: --remove puts it back.
	savedPrefix = "#|"

	kubernetesBeginComment = KubernetesBeginMarker + ": managed by xcc-syncer patch-corefile; edits inside are overwritten; the line after this one is put back on removal"
	kubernetesDirective    = "kubernetes"
	multiclusterOption     = "multicluster"
)

// CheckClusterSetServer refuses a server other than the two known ones
// (empty is ClusterSetServe).
func CheckClusterSetServer(server string) error {
	switch server {
	case "", ClusterSetServe, ClusterSetCoreDNS:
		return nil
	}
	return fmt.Errorf("clusterset server %q: want %q or %q", server, ClusterSetServe, ClusterSetCoreDNS)
}

// byCoreDNS reports whether o has the cluster DNS's kubernetes plugin
// answer the clusterset zone.
func (o Options) byCoreDNS() bool {
	return o.ClusterSetServer == ClusterSetCoreDNS && o.ClusterSetZone != ""
}

// patchKubernetes puts back the user's `kubernetes` line when the managed
// lines replaced it, then, when o wants the cluster DNS to answer the
// clusterset zone, replaces that line again for o's zone. Going through the
// original each time makes a changed zone, or a switch back to serve, exact.
func patchKubernetes(text string, o Options) (string, error) {
	base, err := restoreKubernetes(text)
	if err != nil {
		return "", err
	}
	if o.Remove || !o.byCoreDNS() {
		return base, nil
	}
	return replaceKubernetes(base, o.ClusterSetZone)
}

// restoreKubernetes replaces the managed kubernetes lines by the line they
// saved; text without them is returned as it is.
func restoreKubernetes(text string) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	begin, end := -1, -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, KubernetesBeginMarker):
			if begin >= 0 {
				return "", fmt.Errorf("line %d: a second %q marker; leave one", i+1, KubernetesBeginMarker)
			}
			begin = i
		case t == KubernetesEndMarker:
			if begin < 0 || end >= 0 {
				return "", fmt.Errorf("line %d: %q without one %q before it", i+1, KubernetesEndMarker, KubernetesBeginMarker)
			}
			end = i
		}
	}
	switch {
	case begin < 0:
		return text, nil
	case end < 0:
		return "", fmt.Errorf("%q without %q after it", KubernetesBeginMarker, KubernetesEndMarker)
	case begin+1 >= end || !strings.HasPrefix(lines[begin+1], savedPrefix):
		return "", fmt.Errorf("line %d: the line after %q must be the saved kubernetes line (%q at its start); put the kubernetes line back by hand and remove the markers", begin+2, KubernetesBeginMarker, savedPrefix)
	}
	saved := strings.TrimSuffix(strings.TrimPrefix(lines[begin+1], savedPrefix), "\n") + "\n"
	return strings.Join(lines[:begin], "") + saved + strings.Join(lines[end+1:], ""), nil
}

// replaceKubernetes adds zone, and `multicluster zone`, to the kubernetes
// plugin of the server block that gets zone's queries, between markers
// that keep the line as it was.
func replaceKubernetes(text, zone string) (string, error) {
	cs, err := normalizeZone(zone)
	if err != nil {
		return "", err
	}
	line, err := kubernetesLine(text, cs)
	if err != nil {
		return "", err
	}
	lines := strings.SplitAfter(text, "\n")
	orig := strings.TrimSuffix(lines[line-1], "\n")
	words, opens, err := kubernetesWords(orig)
	if err != nil {
		return "", fmt.Errorf("line %d: %w", line, err)
	}
	if !opens && nextOpensBlock(text, line) {
		return "", fmt.Errorf("line %d: the kubernetes plugin's { is on a later line; put it at the end of the kubernetes line, then patch again", line)
	}
	ind := orig[:len(orig)-len(strings.TrimLeft(orig, " \t"))]
	var b strings.Builder
	b.WriteString(ind + kubernetesBeginComment + "\n")
	b.WriteString(savedPrefix + orig + "\n")
	fmt.Fprintf(&b, "%s%s %s {\n", ind, strings.Join(words, " "), cs)
	fmt.Fprintf(&b, "%s%s%s %s\n", ind, indent, multiclusterOption, cs)
	if !opens {
		b.WriteString(ind + "}\n")
	}
	b.WriteString(ind + KubernetesEndMarker + "\n")
	return strings.Join(lines[:line-1], "") + b.String() + strings.Join(lines[line:], ""), nil
}

// kubernetesLine finds the line of the one kubernetes directive of the
// port-53 server block that CoreDNS gives queries for zone (the block of
// the closest zone, "." included), and refuses one that already answers
// zone or has a multicluster option.
func kubernetesLine(text, zone string) (int, error) {
	blocks, err := caddyfile.Parse(fileName, strings.NewReader(text), nil)
	if err != nil {
		return 0, fmt.Errorf("the current Corefile does not parse: %w", err)
	}
	want := plugin.Name(zone).Normalize()
	found, bestKey, _, err := queryBlock(blocks, want)
	if err != nil {
		return 0, fmt.Errorf("the current Corefile has a bad %w", err)
	}
	if found == nil {
		return 0, fmt.Errorf("no server block on port %s gets %s queries; add the kubernetes plugin's zones by hand", DNSPort, zone)
	}
	return directiveLine(found.Tokens[kubernetesDirective], bestKey, want)
}

// directiveLine checks the kubernetes plugin's tokens of the block keyed
// key hold one directive, from this Corefile's own text, not yet answering
// zone, and returns the directive's line.
func directiveLine(tokens []caddyfile.Token, key, zone string) (int, error) {
	var starts []caddyfile.Token
	depth := 0
	for _, t := range tokens {
		switch {
		case t.Text == "{":
			depth++
		case t.Text == "}":
			depth--
		case depth == 0 && t.Text == kubernetesDirective:
			starts = append(starts, t)
		case t.Text == multiclusterOption:
			return 0, fmt.Errorf("line %d: the kubernetes plugin of the server block %q already has a %s option; remove it, then patch again", t.Line, key, multiclusterOption)
		case depth == 0 && plugin.Name(strings.ToLower(t.Text)).Normalize() == zone:
			return 0, fmt.Errorf("line %d: the kubernetes plugin of the server block %q already answers %s; remove that zone, then patch again", t.Line, key, strings.TrimSuffix(zone, "."))
		}
	}
	switch {
	case len(starts) == 0:
		return 0, fmt.Errorf("the server block %q, which gets %s queries, has no kubernetes plugin to answer them", key, strings.TrimSuffix(zone, "."))
	case len(starts) > 1:
		return 0, fmt.Errorf("the server block %q has %d kubernetes plugins (lines %d and %d); leave one", key, len(starts), starts[0].Line, starts[1].Line)
	case starts[0].File != "" && starts[0].File != fileName:
		return 0, fmt.Errorf("the kubernetes plugin of the server block %q comes from the import %q; add %s and `%s %s` to it by hand", key, starts[0].File, strings.TrimSuffix(zone, "."), multiclusterOption, strings.TrimSuffix(zone, "."))
	}
	return starts[0].Line, nil
}

// kubernetesWords splits the kubernetes line into the directive and its
// zones, and says whether it ends by opening the plugin's block. Anything
// else on the line (quotes, a closing brace, a second directive) is
// refused rather than rewritten.
func kubernetesWords(line string) (words []string, opens bool, err error) {
	code, _, _ := strings.Cut(line, "#")
	if strings.ContainsAny(code, "\"\\}") {
		return nil, false, errors.New("the kubernetes line holds a quote, a backslash or a }; write it as `kubernetes ZONES... {` on a line of its own, then patch again")
	}
	words = strings.Fields(code)
	if len(words) > 0 && words[len(words)-1] == "{" {
		words, opens = words[:len(words)-1], true
	}
	if len(words) == 0 || words[0] != kubernetesDirective {
		return nil, false, errors.New("the kubernetes directive does not start its line; write it as `kubernetes ZONES... {` on a line of its own, then patch again")
	}
	if len(words) == 1 {
		return nil, false, errors.New("the kubernetes plugin names no zones (it takes its server block's); name them, then patch again, as adding one would drop the others")
	}
	for _, w := range words[1:] {
		if strings.Contains(w, "{") {
			return nil, false, fmt.Errorf("the kubernetes line has a { inside it (%q); write it as `kubernetes ZONES... {`", w)
		}
	}
	return words, opens, nil
}

// nextOpensBlock reports whether the first token after line is "{", which
// the parser would take as the kubernetes plugin's block.
func nextOpensBlock(text string, line int) bool {
	d := caddyfile.NewDispenser(fileName, strings.NewReader(text))
	for d.Next() {
		if d.Line() > line {
			return d.Val() == "{"
		}
	}
	return false
}
