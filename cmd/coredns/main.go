// Command coredns is stock CoreDNS built with the plugin list of
// internal/coredns. See README.md in this directory for the Corefile.
package main

import (
	"github.com/coredns/coredns/coremain"

	"github.com/xcc-dns/xcc-dns/internal/coredns"
)

func main() {
	coredns.Use()
	coremain.Run()
}
