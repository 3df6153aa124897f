package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CoreDNSDrain and ServeShutdownDelay are our CoreDNS's -drain and serve's
// --shutdown-delay, as the workload chart sets them: serve outlives the
// drain, so etcd answers while CoreDNS drains.
const (
	CoreDNSDrain       = 8 * time.Second
	ServeShutdownDelay = 10 * time.Second
)

// xccDNSArgs are the arguments of our CoreDNS running the Corefile conf.
func xccDNSArgs(conf string) []string {
	return []string{"-conf", conf, "-drain", CoreDNSDrain.String()}
}

// Replica is one DNS replica of a workload cluster, what one pod of the
// workload chart's StatefulSet runs: serve with its own embedded etcd and
// data directory, and our CoreDNS reading that etcd. Replica 0 is the
// lab's own pair (WorkloadDNS.Serve and XCCDNS); AddReplica starts more.
type Replica struct {
	Name          string
	ServeHTTP     string
	EtcdClientURL string
	XCCDNSAddr    string

	d         *WorkloadDNS
	index     int
	serve     *Process
	xcc       *Process
	serveArgs []string
	xccEnv    []string
	xccReady  string
}

// Primary is the lab's own serve and CoreDNS pair as a Replica.
func (d *WorkloadDNS) Primary() *Replica {
	return &Replica{
		Name: d.Cluster.Name, ServeHTTP: d.ServeHTTP, EtcdClientURL: d.EtcdClientURL, XCCDNSAddr: d.XCCDNSAddr,
		d: d, serveArgs: d.serveArgs, xccEnv: d.xccEnv, xccReady: readyURL(d.xccEnv),
	}
}

// AddReplica starts one more replica: serve on fresh ports with its own data
// directory, reading the same EndpointSlices, and our CoreDNS with the same
// Corefile reading that serve's etcd. It returns once both are ready.
// extraServeArgs are added to serve's flags.
func (d *WorkloadDNS) AddReplica(ctx context.Context, index int, extraServeArgs ...string) (*Replica, error) {
	l := d.l
	r := &Replica{Name: fmt.Sprintf("%s-%d", d.Cluster.Name, index), d: d, index: index}
	dataDir := filepath.Join(l.Dir, d.Cluster.Name, fmt.Sprintf("xcc-etcd-%d", index))
	err := l.startRetrying(ctx, "xcc-syncer-serve-"+r.Name, 3, func(ports []int) (*Process, func(context.Context) error, error) {
		r.EtcdClientURL = fmt.Sprintf("http://%s:%d", loopback, ports[0])
		r.ServeHTTP = fmt.Sprintf("%s:%d", loopback, ports[2])
		r.serveArgs = replaceArgs(d.serveArgs, map[string]string{
			"--etcd-data-dir":   dataDir,
			"--etcd-client-url": r.EtcdClientURL,
			"--etcd-peer-url":   fmt.Sprintf("http://%s:%d", loopback, ports[1]),
			"--http-address":    r.ServeHTTP,
		})
		r.serveArgs = append(r.serveArgs, extraServeArgs...)
		p, err := startProcess(l.LogDir, "xcc-syncer-serve-"+r.Name, nil, l.Bin("xcc-syncer"), r.serveArgs...)
		r.serve = p
		return p, httpOK("http://" + r.ServeHTTP + "/readyz"), err
	})
	if err != nil {
		return nil, err
	}
	err = l.startRetrying(ctx, "xcc-dns-coredns-"+r.Name, 4, func(ports []int) (*Process, func(context.Context) error, error) {
		r.XCCDNSAddr = fmt.Sprintf("%s:%d", loopback, ports[0])
		r.xccEnv = replaceEnv(d.xccEnv, map[string]string{
			"DNS_PORT":      strconv.Itoa(ports[0]),
			"ETCD_ENDPOINT": r.EtcdClientURL,
			"HEALTH_PORT":   strconv.Itoa(ports[1]),
			"READY_PORT":    strconv.Itoa(ports[2]),
			"METRICS_PORT":  strconv.Itoa(ports[3]),
		})
		r.xccReady = readyURL(r.xccEnv)
		p, err := startProcess(l.LogDir, "xcc-dns-coredns-"+r.Name, r.xccEnv, l.CoreDNSBin(), xccDNSArgs(d.xccConf)...)
		r.xcc = p
		return p, httpOK(r.xccReady), err
	})
	if err != nil {
		stopProcesses(false, r.serve)
		return nil, err
	}
	return r, nil
}

func (r *Replica) procs() (serve, xcc *Process) {
	if r.index == 0 {
		return r.d.Serve, r.d.XCCDNS
	}
	return r.serve, r.xcc
}

// Stop stops the replica as the kubelet stops a pod: SIGTERM to both
// processes at once, and waits for both to end (CoreDNS after its
// lameduck, serve after its shutdown delay). With kill, SIGKILL instead.
func (r *Replica) Stop(kill bool) {
	serve, xcc := r.procs()
	stopProcesses(kill, serve, xcc)
}

// StopServe stops the replica's serve alone, as Stop does both.
func (r *Replica) StopServe(kill bool) {
	serve, _ := r.procs()
	stopProcesses(kill, serve)
}

// stopProcesses is every way the lab stops a replica's processes: all at
// once, SIGTERM (then SIGKILL after stopGrace, Process.Stop) or, with
// kill, SIGKILL; it returns when every one has ended.
func stopProcesses(kill bool, procs ...*Process) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() {
			if kill {
				p.Kill()
			} else {
				p.Stop()
			}
		})
	}
	wg.Wait()
}

// Start starts a stopped replica again on the same ports and data
// directory: serve first, then CoreDNS once serve is ready. The lab has no
// readiness gate in front of CoreDNS (the cluster DNS forwards to it as
// soon as it listens), so the order stands in for the pod's readiness.
func (r *Replica) Start(ctx context.Context) error {
	l := r.d.l
	if err := r.StartServe(ctx, true); err != nil {
		return err
	}
	// The replica keeps its ports, which the lab took from the ephemeral
	// range: while it was down, a client's socket may have been given
	// one as its source port for a moment. Such a socket goes with its
	// query, so the start is tried again.
	var err error
	for attempt := 0; attempt < portAttempts; attempt++ {
		var xcc *Process
		if xcc, err = startProcess(l.LogDir, "xcc-dns-coredns-"+r.Name, r.xccEnv, l.CoreDNSBin(), xccDNSArgs(r.d.xccConf)...); err != nil {
			return err
		}
		l.procs.add(xcc)
		if r.index == 0 {
			r.d.XCCDNS = xcc
		} else {
			r.xcc = xcc
		}
		if err = waitFor(ctx, xcc, processReadyTimeout, "CoreDNS of "+r.Name, httpOK(r.xccReady)); err == nil {
			return nil
		}
		xcc.Stop()
		if !strings.Contains(xcc.Tail(tailLines), "address already in use") {
			return err
		}
		time.Sleep(time.Second)
	}
	return err
}

// StartServe starts the replica's serve again with the same flags (same
// etcd data directory and ports); with ready, it returns once /readyz
// says ready, else once the process runs (its /readyz may need the API
// server).
func (r *Replica) StartServe(ctx context.Context, ready bool) error {
	l := r.d.l
	serve, err := startProcess(l.LogDir, "xcc-syncer-serve-"+r.Name, nil, l.Bin("xcc-syncer"), r.serveArgs...)
	if err != nil {
		return err
	}
	l.procs.add(serve)
	if r.index == 0 {
		r.d.Serve = serve
	} else {
		r.serve = serve
	}
	if !ready {
		return nil
	}
	return waitFor(ctx, serve, processReadyTimeout, "serve of "+r.Name, httpOK("http://"+r.ServeHTTP+"/readyz"))
}

// ForwardClusterDNS makes the cluster DNS forward the zone to addrs: its
// Corefile's zone block is rewritten and CoreDNS reloads it (SIGUSR1, no
// restart, no gap), and it returns once the reload is done. This is the
// lab's stand-in for what a Service does in a real cluster, where the
// cluster DNS forwards to one ClusterIP and kube-proxy sends each query to
// a ready endpoint: there is no kube-proxy here, so a replica's address is
// added when it is ready and taken out when it is told to stop, as the
// EndpointSlice controller and kube-proxy would.
func (d *WorkloadDNS) ForwardClusterDNS(ctx context.Context, addrs ...string) error {
	b, err := os.ReadFile(d.ClusterDNSCorefile)
	if err != nil {
		return err
	}
	var out []string
	inZone := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && strings.HasPrefix(f[0], Zone+":"):
			inZone = true
		case inZone && len(f) > 2 && f[0] == "forward" && f[1] == ".":
			line = line[:strings.Index(line, "forward")] + "forward . " + strings.Join(addrs, " ")
		case inZone && len(f) > 0 && f[0] == "}":
			inZone = false
		}
		out = append(out, line)
	}
	text := strings.Join(out, "\n")
	if text == string(b) {
		return nil
	}
	if err := os.WriteFile(d.ClusterDNSCorefile, []byte(text), 0o644); err != nil {
		return err
	}
	p := d.ClusterDNS
	before := strings.Count(readFile(p.LogPath), reloadedLine)
	p.signal(syscall.SIGUSR1)
	return waitFor(ctx, p, 10*time.Second, "cluster DNS of "+d.Cluster.Name+" reloaded", func(context.Context) error {
		if strings.Count(readFile(p.LogPath), reloadedLine) > before {
			return nil
		}
		return errors.New("not reloaded yet")
	})
}

// reloadedLine is what CoreDNS logs once SIGUSR1 loaded the new Corefile.
const reloadedLine = "[INFO] Reloading complete"

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// replaceArgs returns args with the values of the given flags replaced.
func replaceArgs(args []string, with map[string]string) []string {
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if v, ok := with[out[i]]; ok {
			out[i+1] = v
		}
	}
	return out
}

// replaceEnv returns env with the given variables replaced.
func replaceEnv(env []string, with map[string]string) []string {
	out := append([]string(nil), env...)
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := with[k]; ok {
			out[i] = k + "=" + v
		}
	}
	return out
}

// readyURL is CoreDNS's ready endpoint for its environment.
func readyURL(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "READY_PORT="); ok {
			return fmt.Sprintf("http://%s:%s/ready", loopback, v)
		}
	}
	return ""
}
