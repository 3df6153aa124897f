package coredns

import (
	"fmt"
	"sync"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
)

// startMu serialises starts: caddy keeps process-wide state while it loads
// a Corefile.
var startMu sync.Mutex

// Server is a CoreDNS instance started in this process.
type Server struct {
	instance *caddy.Instance
	// UDP and TCP are the addresses of the first server's listeners.
	UDP, TCP string
}

// Start loads corefile (after CoreDNS's own {$ENV} substitution) with the
// plugin list of this package and starts it. Use port 0 in the Corefile to
// get free ports; UDP and TCP then differ.
func Start(corefile string) (*Server, error) {
	return StartOrdered(Directives, corefile)
}

// StartOrdered is Start with the plugins run in the order of directives
// (Directives or Upstream), so a test can check that both orders answer
// alike. Every later Start uses its own order.
func StartOrdered(directives []string, corefile string) (*Server, error) {
	startMu.Lock()
	defer startMu.Unlock()
	dnsserver.Directives = directives
	caddy.Quiet = true
	inst, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(corefile), Filepath: "Corefile", ServerTypeName: "dns"})
	if err != nil {
		return nil, fmt.Errorf("start CoreDNS: %w", err)
	}
	srvs := inst.Servers()
	if len(srvs) == 0 || srvs[0].LocalAddr() == nil || srvs[0].Addr() == nil {
		_ = inst.Stop()
		return nil, fmt.Errorf("start CoreDNS: no DNS listener")
	}
	return &Server{instance: inst, UDP: srvs[0].LocalAddr().String(), TCP: srvs[0].Addr().String()}, nil
}

// Stop stops the instance.
func (s *Server) Stop() error { return s.instance.Stop() }
