package corefile

import (
	"fmt"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/pkg/transport"
)

// ZoneBlock is the server block of a Corefile that answers a zone.
type ZoneBlock struct {
	// Key is the block's key that holds the zone, e.g. "xcc.test:53".
	Key string `json:"key"`
	// Managed: the block is the one between the xcc-dns markers.
	Managed bool `json:"managed,omitempty"`
	// ForwardTo are the targets of the block's forward plugin.
	ForwardTo []string `json:"forwardTo,omitempty"`
	// Cache is what its cache plugin keeps; nil without one.
	Cache *Cache `json:"cache,omitempty"`
	// Kubernetes: the block's kubernetes plugin answers the zone itself,
	// its multicluster option naming it (ClusterSetCoreDNS); no block
	// of the zone's own is before it.
	Kubernetes bool `json:"kubernetes,omitempty"`
}

// FindZone returns the DNS server block on port 53 of corefile whose
// zone is zone or the closest parent of it, as CoreDNS picks the block
// of a query; nil when only the root block "." is, which sends the zone
// wherever it sends every other name, unless its kubernetes plugin
// answers the zone itself (Kubernetes). A Corefile that would read this
// machine's environment or files is an error (selfContained).
func FindZone(corefile, zone string) (*ZoneBlock, error) {
	want := plugin.Name(strings.TrimSuffix(strings.ToLower(zone), ".") + ".").Normalize()
	if err := selfContained(corefile); err != nil {
		return nil, err
	}
	blocks, err := caddyfile.Parse(fileName, strings.NewReader(corefile), nil)
	if err != nil {
		return nil, fmt.Errorf("the Corefile does not parse: %w", err)
	}
	managed, err := findBlock(corefile)
	if err != nil {
		return nil, err
	}
	b, key, zoneOf, err := queryBlock(blocks, want)
	if err != nil {
		return nil, err
	}
	switch {
	case b == nil:
		return nil, nil
	case zoneOf != ".":
		return &ZoneBlock{Key: key, Managed: managed != nil && inSpan(corefile, *managed, *b), ForwardTo: forwardTargets(*b), Cache: blockCache(*b)}, nil
	case kubernetesAnswers(b.Tokens[kubernetesDirective], want):
		return &ZoneBlock{Key: key, Kubernetes: true}, nil
	}
	return nil, nil
}

// queryBlock returns the port-53 server block of blocks that CoreDNS
// gives the queries of zone want (normalized): the block of the closest
// zone, the root block "." included, the key that names that zone and
// the zone; nil when none does.
func queryBlock(blocks []caddyfile.ServerBlock, want string) (*caddyfile.ServerBlock, string, string, error) {
	var found *caddyfile.ServerBlock
	best, bestKey := "", ""
	for i, b := range blocks {
		for _, key := range b.Keys {
			hosts, port, err := dnsZones(key)
			if err != nil {
				return nil, "", "", fmt.Errorf("server block key %q: %w", key, err)
			}
			if port != DNSPort {
				continue
			}
			for _, h := range hosts {
				n := plugin.Name(h).Normalize()
				if plugin.Name(n).Matches(want) && len(n) > len(best) {
					found, best, bestKey = &blocks[i], n, key
				}
			}
		}
	}
	return found, bestKey, best, nil
}

// kubernetesAnswers reports whether the kubernetes plugin of tokens
// answers zone want through its multicluster option: the plugin's zones
// and the option both hold want or a parent of it.
func kubernetesAnswers(tokens []caddyfile.Token, want string) bool {
	if len(tokens) == 0 || !coversZone(lineWords(tokens, 0), want) {
		return false
	}
	for i, t := range tokens {
		if t.Text == multiclusterOption && coversZone(lineWords(tokens, i), want) {
			return true
		}
	}
	return false
}

// lineWords are the words after tokens[i] on its line, up to a brace.
func lineWords(tokens []caddyfile.Token, i int) []string {
	var out []string
	for _, t := range tokens[i+1:] {
		if t.Line != tokens[i].Line || t.Text == "{" {
			break
		}
		out = append(out, t.Text)
	}
	return out
}

// coversZone reports whether one of zones is want or a parent of it.
func coversZone(zones []string, want string) bool {
	for _, z := range zones {
		n := plugin.Name(strings.TrimSuffix(strings.ToLower(z), ".") + ".").Normalize()
		if plugin.Name(n).Matches(want) {
			return true
		}
	}
	return false
}

// inSpan reports whether the block b's directives are on lines inside
// the managed span of corefile.
func inSpan(corefile string, s span, b caddyfile.ServerBlock) bool {
	first := strings.Count(corefile[:s.start], "\n") + 1
	last := strings.Count(corefile[:s.end], "\n")
	for _, tokens := range b.Tokens {
		for _, t := range tokens {
			if t.Line < first || t.Line > last {
				return false
			}
		}
	}
	return len(b.Tokens) > 0
}

// forwardTargets are the addresses of b's forward directives: the words
// after `forward FROM` on its line.
func forwardTargets(b caddyfile.ServerBlock) []string {
	var out []string
	tokens := b.Tokens["forward"]
	for i := 0; i < len(tokens); i++ {
		if tokens[i].Text != "forward" || i+1 >= len(tokens) {
			continue
		}
		line := tokens[i].Line
		for j := i + 2; j < len(tokens) && tokens[j].Line == line && tokens[j].Text != "{"; j++ {
			out = append(out, tokens[j].Text)
		}
	}
	return out
}

// dnsZones are the zones of a server block key and its port (DNSPort
// when it names none); port is "" for a key of another transport.
func dnsZones(key string) (zones []string, port string, err error) {
	trans, addr := parse.Transport(key)
	if trans != transport.DNS {
		return nil, "", nil
	}
	zones, port, err = plugin.SplitHostPort(addr)
	if port == "" {
		port = DNSPort
	}
	return zones, port, err
}
