// Package coredns selects the stock CoreDNS plugins that the xcc-dns DNS
// server is built with, and their order.
//
// CoreDNS runs a query through the plugins of a server block in the order of
// its directive list, not in the order of the Corefile. The list here is a
// subset of CoreDNS's own core/dnsserver/zdirectives.go in its relative
// order, with one exception (see Directives), and answers every query of the
// shipped Corefile exactly as the upstream CoreDNS image does (the Corefile
// tests run under both orders). No plugin of our own is added: the DNS
// engine is stock.
package coredns

import (
	"slices"

	"github.com/coredns/coredns/core/dnsserver"

	// Each import registers one stock plugin with CoreDNS. The list is
	// explicit (never core/plugin, which pulls in every plugin) so the
	// binary stays small and its behaviour reviewable.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/bufsize"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/etcd"
	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/pprof"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/view"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// Directives is the plugin order: a subset of CoreDNS v1.15's, except that
// cache runs before rewrite, where CoreDNS itself ran it up to v1.14.
//
// CoreDNS v1.15 moved rewrite ahead of acl (so an access rule sees the name
// that is answered), which put it ahead of cache too: every cache hit then
// pays the rewrite rule, a copy of the answer and the reverter that puts the
// asked name back (its cost: docs/benchmarks.md). This build has no acl. With cache first, a hit
// is answered under the name that was asked, and only a miss passes rewrite;
// the answers are the same, and the cache holds an entry per name asked
// instead of per gateway.
//
// Besides the xcc.test zone (rewrite, cache, template, etcd), view (the
// clusterset zone's SRV of a service name: internal/guard) and bind (to
// listen on chosen addresses only, as the local lab does) it holds what
// a cluster DNS Corefile uses (kubernetes, forward, loop, loadbalance), so the
// same binary can stand in for kube-system's CoreDNS in the local lab, and
// file and hosts for the benchmark's baseline.
var Directives = []string{
	"reload",
	"bufsize",
	"bind",
	"ready",
	"health",
	"pprof",
	"prometheus",
	"errors",
	"log",
	"loadbalance",
	"cache",
	"rewrite",
	"template",
	"hosts",
	"kubernetes",
	"file",
	"etcd",
	"loop",
	"forward",
	"whoami",
	"view",
}

// Upstream is CoreDNS's own plugin order, as compiled into the module
// (captured before Use replaces it): the order of the upstream CoreDNS image.
var Upstream = slices.Clone(dnsserver.Directives)

// Use installs Directives as the DNS server type's directive list. It must
// run before a Corefile is loaded.
func Use() {
	dnsserver.Directives = Directives
}
