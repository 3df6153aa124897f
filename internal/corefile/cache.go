package corefile

import (
	"strconv"

	"github.com/coredns/caddy/caddyfile"
)

// The cache plugin's defaults (plugin/cache): an answer is kept at most
// an hour, a denial half an hour, and at least 5 s either way.
const (
	cacheMaxSuccess = 3600
	cacheMaxDenial  = 1800
	cacheMinTTL     = 5
)

// Cache is what the cache plugin of a server block keeps, in seconds:
// an answer with records for its TTL bounded by [MinSuccess, Success],
// an NXDOMAIN or NODATA for its negative TTL bounded by [MinDenial,
// Denial]. ServeStale is serve_stale's duration, when set: how much
// longer an expired answer may be given while the upstream fails.
type Cache struct {
	Success    uint32 `json:"success"`
	MinSuccess uint32 `json:"minSuccess"`
	Denial     uint32 `json:"denial"`
	MinDenial  uint32 `json:"minDenial"`
	ServeStale string `json:"serveStale,omitempty"`
}

// Keep is how long the cache keeps an answer of TTL ttl (negative: an
// NXDOMAIN or NODATA of that negative TTL).
func (c Cache) Keep(ttl uint32, negative bool) uint32 {
	if negative {
		return min(max(ttl, c.MinDenial), c.Denial)
	}
	return min(max(ttl, c.MinSuccess), c.Success)
}

// blockCache reads the first cache directive of b; nil when it has none.
// Values that do not parse keep the default, as CoreDNS would refuse the
// Corefile anyway.
func blockCache(b caddyfile.ServerBlock) *Cache {
	tokens := b.Tokens["cache"]
	if len(tokens) == 0 {
		return nil
	}
	c := &Cache{Success: cacheMaxSuccess, MinSuccess: cacheMinTTL, Denial: cacheMaxDenial, MinDenial: cacheMinTTL}
	line := tokens[0].Line
	i := 1
	if i < len(tokens) && tokens[i].Line == line {
		if n, ok := seconds(tokens[i].Text); ok {
			c.Success, c.Denial = n, n
		}
	}
	for i < len(tokens) && tokens[i].Line == line && tokens[i].Text != "{" {
		i++
	}
	if i >= len(tokens) || tokens[i].Text != "{" {
		return c
	}
	for i++; i < len(tokens) && tokens[i].Text != "}"; {
		name, l := tokens[i].Text, tokens[i].Line
		var args []string
		for i++; i < len(tokens) && tokens[i].Line == l && tokens[i].Text != "}"; i++ {
			args = append(args, tokens[i].Text)
		}
		switch name {
		case "success":
			setTTLs(args, &c.Success, &c.MinSuccess)
		case "denial":
			setTTLs(args, &c.Denial, &c.MinDenial)
		case "serve_stale":
			c.ServeStale = "1h"
			if len(args) > 0 {
				c.ServeStale = args[0]
			}
		}
	}
	return c
}

// setTTLs sets the TTL and minimum TTL of `success|denial CAPACITY [TTL
// [MINTTL]]`.
func setTTLs(args []string, ttl, minTTL *uint32) {
	if len(args) > 1 {
		if n, ok := seconds(args[1]); ok {
			*ttl = n
		}
	}
	if len(args) > 2 {
		if n, err := strconv.ParseUint(args[2], 10, 32); err == nil {
			*minTTL = uint32(n)
		}
	}
}

// seconds parses a positive count of seconds.
func seconds(s string) (uint32, bool) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil && n > 0
}
