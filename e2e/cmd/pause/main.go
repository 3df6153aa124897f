// Command pause is the node lab's pod sandbox image: it waits for SIGTERM
// or SIGINT and exits. No registry is reachable from the lab, so it stands
// in for registry.k8s.io/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
