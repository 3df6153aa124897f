package coredns

import (
	"fmt"
	"sync"

	"github.com/coredns/caddy"
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
	Use()
	startMu.Lock()
	defer startMu.Unlock()
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
