package coredns

import (
	"flag"
	"time"

	"github.com/coredns/caddy"
	clog "github.com/coredns/coredns/plugin/pkg/log"
)

// DrainFlag is the name of the DNS server's flag that sets the drain.
const DrainFlag = "drain"

// drainHook names the shutdown hook with caddy.
const drainHook = "xcc-dns-drain"

// AddDrainFlag registers -drain on fs: after SIGTERM (or SIGINT), CoreDNS
// goes on answering for that long with every plugin still open, and only
// then shuts down.
//
// Why not health's lameduck: on a signal CoreDNS runs every plugin's
// OnShutdown before any OnFinalShutdown, and the etcd plugin closes its
// client in OnShutdown, health sleeps its lameduck in OnFinalShutdown. So
// through the lameduck every query of the zone fails with no reply. Behind
// a Service the stopping pod still gets queries for as long as it runs: a
// cluster DNS's forward reuses its UDP sockets, and their conntrack entries
// stay pinned to the pod they first reached. A caddy shutdown hook runs
// before every plugin callback, so the pod answers them all while it drains.
func AddDrainFlag(fs *flag.FlagSet) {
	drain := fs.Duration(DrainFlag, 0, "after SIGTERM or SIGINT, go on answering for this long with every plugin open, then shut down (0: at once, as stock CoreDNS)")
	caddy.RegisterEventHook(drainHook, func(event caddy.EventName, _ any) error {
		if event == caddy.ShutdownEvent && *drain > 0 {
			clog.Infof("draining for %s before shutting down", *drain)
			time.Sleep(*drain)
		}
		return nil
	})
}
