// Command coredns is stock CoreDNS built with the plugin list of
// internal/coredns, and one flag of ours, -drain (internal/coredns,
// AddDrainFlag). See README.md in this directory for the Corefile.
package main

import (
	"flag"

	"github.com/coredns/coredns/coremain"

	"github.com/xcc-dns/xcc-dns/internal/coredns"
)

func main() {
	coredns.Use()
	coredns.AddDrainFlag(flag.CommandLine)
	coremain.Run()
}
