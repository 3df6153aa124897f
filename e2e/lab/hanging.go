package lab

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
)

// HangingAPIServer is a workload API server that never answers: it
// accepts TCP connections on 127.0.0.1 and holds them open without
// reading or writing a byte, so a client's TLS handshake waits until its
// own timeout. It stands for a cluster behind a black-holing firewall or
// an API server stuck under load.
type HangingAPIServer struct {
	// Addr is host:port.
	Addr string

	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

// StartHangingAPIServer listens on a free port of 127.0.0.1.
func StartHangingAPIServer() (*HangingAPIServer, error) {
	ln, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return nil, fmt.Errorf("hanging API server: listen: %w", err)
	}
	h := &HangingAPIServer{Addr: ln.Addr().String(), ln: ln, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	return h, nil
}

// URL is the https URL a kubeconfig names.
func (h *HangingAPIServer) URL() string { return "https://" + h.Addr }

// Accepted is how many connections it has accepted so far.
func (h *HangingAPIServer) Accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// Kubeconfig is a kubeconfig for the hanging server that the controller
// accepts (inline CA and token): the CA of caFrom, which the server never
// gets to prove anything against.
func (h *HangingAPIServer) Kubeconfig(name string, caFrom *Cluster) ([]byte, error) {
	data, err := clientcmd.Write(*KubeconfigFor(name, h.URL(), caFrom.pki.CAPEM, "never-checked"))
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig of %s: %w", name, err)
	}
	return data, nil
}

// Close stops listening and closes every connection it holds.
func (h *HangingAPIServer) Close() {
	h.ln.Close()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
	h.conns = nil
}

// Freeze stops the API server's process with SIGSTOP: the kernel still
// accepts connections and requests on open ones, and nothing answers
// them, as with a node that hangs. Thaw (SIGCONT) resumes it.
func (c *Cluster) Freeze() error {
	if c.proc == nil {
		return fmt.Errorf("kube-apiserver of %s is not running", c.Name)
	}
	c.proc.signal(syscall.SIGSTOP)
	return nil
}

// Thaw resumes an API server stopped by Freeze.
func (c *Cluster) Thaw() {
	if c.proc != nil {
		c.proc.signal(syscall.SIGCONT)
	}
}
