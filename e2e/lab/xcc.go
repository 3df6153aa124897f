package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// WorkloadDNS is the xcc-dns side of one workload cluster.
type WorkloadDNS struct {
	Cluster *Cluster
	// Serve is `xcc-syncer serve`; ServeHTTP its --http-address,
	// EtcdClientURL and EtcdDataDir its embedded etcd.
	Serve         *Process
	ServeHTTP     string
	EtcdClientURL string
	EtcdDataDir   string
	// XCCDNS is our CoreDNS (the chart's Corefile); XCCDNSAddr its DNS
	// address.
	XCCDNS     *Process
	XCCDNSAddr string
	// ClusterDNS is the cluster's own CoreDNS running kube-system/coredns's
	// Corefile after the patch; ClusterDNSAddr its DNS address. It is
	// what a pod in this cluster asks.
	ClusterDNS     *Process
	ClusterDNSAddr string
	// ClusterDNSCorefile is the Corefile it runs.
	ClusterDNSCorefile string
	// ServeKubeconfig is serve's kubeconfig: a token of the workload
	// chart's ServiceAccount, so serve has the chart's RBAC only.
	ServeKubeconfig string
	// PatchedByBinary is true when `xcc-syncer patch-corefile` patched
	// kube-system/coredns (false: the lab patched it by hand).
	PatchedByBinary bool

	serveArgs []string
	// xccEnv and xccConf start our CoreDNS (see replicas.go).
	xccEnv  []string
	xccConf string
	l       *Lab
}

func (l *Lab) startXCC(ctx context.Context) error {
	syncer, coredns := l.Bin("xcc-syncer"), l.CoreDNSBin()
	for _, b := range []string{syncer, coredns} {
		if _, err := os.Stat(b); err != nil {
			l.skip("%s not built (run make build): no xcc-dns processes", b)
			return nil
		}
	}
	for _, w := range l.Workloads {
		d := &WorkloadDNS{Cluster: w, l: l}
		l.DNS[w.Name] = d
		if err := d.start(ctx); err != nil {
			return err
		}
	}
	if !l.GatewayDNSCRD {
		return nil
	}
	return l.startController(ctx)
}

// startController starts the single controller with the lab's flags,
// then extra ones (a test's limits or allowed CIDRs).
func (l *Lab) startController(ctx context.Context, extra ...string) error {
	kc, err := chartKubeconfig(ctx, l.Management, ReleaseName)
	if err != nil {
		return err
	}
	l.ControllerKubeconfig = kc
	return l.startRetrying(ctx, "xcc-syncer-controller", 1, func(ports []int) (*Process, func(context.Context) error, error) {
		l.ControllerHTTP = fmt.Sprintf("%s:%d", loopback, ports[0])
		args := append([]string{"controller",
			"--kubeconfig", l.ControllerKubeconfig,
			"--http-address", l.ControllerHTTP,
			"--state-namespace", SliceNamespace,
			"--leader-elect=false", "--profiling"}, extra...)
		p, err := startProcess(l.LogDir, "xcc-syncer-controller", nil, l.Bin("xcc-syncer"), args...)
		l.Controller = p
		return p, httpOK("http://" + l.ControllerHTTP + "/readyz"), err
	})
}

// startRetrying starts a process on n fresh ports, and again on other ports
// when it fails because one was taken meanwhile.
func (l *Lab) startRetrying(ctx context.Context, what string, n int, run func(ports []int) (*Process, func(context.Context) error, error)) error {
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		ports, err := freePorts(n)
		if err != nil {
			return err
		}
		p, ready, err := run(ports)
		if err != nil {
			return err
		}
		l.procs.add(p)
		if lastErr = waitFor(ctx, p, processReadyTimeout, what+" ready", ready); lastErr == nil {
			l.progress("%s ready", what)
			return nil
		}
		p.Stop()
		if !strings.Contains(p.Tail(tailLines), "address already in use") {
			return lastErr
		}
	}
	return lastErr
}

func (d *WorkloadDNS) start(ctx context.Context) error {
	l, w := d.l, d.Cluster
	dir := filepath.Join(l.Dir, w.Name)
	d.EtcdDataDir = filepath.Join(dir, "xcc-etcd")
	var err error
	if d.ServeKubeconfig, err = chartKubeconfig(ctx, w, ReleaseName); err != nil {
		return err
	}
	err = l.startRetrying(ctx, "xcc-syncer-serve-"+w.Name, 3, func(ports []int) (*Process, func(context.Context) error, error) {
		d.EtcdClientURL = fmt.Sprintf("http://%s:%d", loopback, ports[0])
		d.ServeHTTP = fmt.Sprintf("%s:%d", loopback, ports[2])
		d.serveArgs = []string{"serve",
			"--kubeconfig", d.ServeKubeconfig,
			"--namespace", SliceNamespace,
			"--etcd-data-dir", d.EtcdDataDir,
			"--etcd-client-url", d.EtcdClientURL,
			"--etcd-peer-url", fmt.Sprintf("http://%s:%d", loopback, ports[1]),
			"--http-address", d.ServeHTTP,
			"--reverse-cidrs", ReverseCIDRs,
			// As the chart: etcd outlives CoreDNS's drain.
			"--shutdown-delay", ServeShutdownDelay.String(),
		}
		p, err := startProcess(l.LogDir, "xcc-syncer-serve-"+w.Name, nil, l.Bin("xcc-syncer"), d.serveArgs...)
		d.Serve = p
		return p, httpOK("http://" + d.ServeHTTP + "/readyz"), err
	})
	if err != nil {
		return err
	}

	// Our DNS server runs the Corefile the workload chart rendered (the
	// repository's, with its reverse CIDRs), bound to 127.0.0.1.
	rendered, err := chartCorefile(ctx, w)
	if err != nil {
		return err
	}
	xccCorefile, err := localCorefile(rendered, corefileEdit{})
	if err != nil {
		return fmt.Errorf("the chart's Corefile: %w", err)
	}
	xccConf := filepath.Join(dir, "xcc-dns.Corefile")
	if err := os.WriteFile(xccConf, []byte(xccCorefile), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", xccConf, err)
	}
	guard, err := d.writeGuard(ctx, filepath.Join(dir, "xcc-dns.guard"))
	if err != nil {
		return err
	}
	err = l.startRetrying(ctx, "xcc-dns-coredns-"+w.Name, 4, func(ports []int) (*Process, func(context.Context) error, error) {
		d.XCCDNSAddr = fmt.Sprintf("%s:%d", loopback, ports[0])
		env := []string{
			"DNS_PORT=" + strconv.Itoa(ports[0]),
			"ETCD_ENDPOINT=" + d.EtcdClientURL,
			"HEALTH_PORT=" + strconv.Itoa(ports[1]),
			"READY_PORT=" + strconv.Itoa(ports[2]),
			"METRICS_PORT=" + strconv.Itoa(ports[3]),
			"UPSTREAM=" + l.Upstream,
			"XCC_ZONE=" + Zone,
			"XCC_GUARD=" + guard,
		}
		d.xccEnv, d.xccConf = env, xccConf
		p, err := startProcess(l.LogDir, "xcc-dns-coredns-"+w.Name, env, l.CoreDNSBin(), xccDNSArgs(xccConf)...)
		d.XCCDNS = p
		return p, httpOK(fmt.Sprintf("http://%s:%d/ready", loopback, ports[2])), err
	})
	if err != nil {
		return err
	}

	// The walkthrough's patch step, done by the binary.
	err = l.run(ctx, "patch-corefile-"+w.Name, l.Bin("xcc-syncer"), "patch-corefile",
		"--kubeconfig", w.Kubeconfig, "--forward-to", d.XCCDNSAddr, "--reverse-cidrs", ReverseCIDRs)
	switch {
	case errors.Is(err, errUnknownSubcommand):
		// An xcc-syncer without patch-corefile: do the walkthrough's
		// manual patch instead, so the rest of the lab still runs.
		l.skip("xcc-syncer has no patch-corefile subcommand yet: kube-system/coredns of %s patched by hand as the walkthrough does", w.Name)
		if err := setCoreDNSCorefile(ctx, w, walkthroughPatchedCorefile(d.XCCDNSAddr)); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		d.PatchedByBinary = true
	}
	patched, err := ClusterCorefile(ctx, w)
	if err != nil {
		return err
	}
	return l.startRetrying(ctx, "cluster-dns-"+w.Name, 4, func(ports []int) (*Process, func(context.Context) error, error) {
		d.ClusterDNSAddr = fmt.Sprintf("%s:%d", loopback, ports[0])
		conf, err := localCorefile(patched, corefileEdit{
			DNSPort: ports[0], HealthPort: ports[1], ReadyPort: ports[2], MetricsPort: ports[3],
			Upstream: l.Upstream, Kubeconfig: w.Kubeconfig,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("patched kube-system/coredns of %s: %w", w.Name, err)
		}
		d.ClusterDNSCorefile = filepath.Join(dir, "cluster-dns.Corefile")
		if err := os.WriteFile(d.ClusterDNSCorefile, []byte(conf), 0o644); err != nil {
			return nil, nil, fmt.Errorf("write %s: %w", d.ClusterDNSCorefile, err)
		}
		p, err := startProcess(l.LogDir, "cluster-dns-"+w.Name, nil, l.CoreDNSBin(), "-conf", d.ClusterDNSCorefile)
		d.ClusterDNS = p
		return p, httpOK(fmt.Sprintf("http://%s:%d/ready", loopback, ports[2])), err
	})
}

// CoreDNSEnv names a CoreDNS binary to run instead of bin/coredns (for
// example the upstream CoreDNS release, which has the same plugins).
const CoreDNSEnv = "XCC_LAB_COREDNS"

// CoreDNSBin is the CoreDNS binary the lab runs.
func (l *Lab) CoreDNSBin() string {
	if b := os.Getenv(CoreDNSEnv); b != "" {
		return b
	}
	return l.Bin("coredns")
}

// requireBind checks that the CoreDNS binary has the bind plugin: the lab
// binds every DNS server to 127.0.0.1, never to every address.
func requireBind(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, bin, "-plugins").Output()
	if err != nil {
		return fmt.Errorf("%s -plugins: %w", bin, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if f == "bind" || f == "dns.bind" {
			return nil
		}
	}
	return fmt.Errorf("%s has no bind plugin: the lab listens on 127.0.0.1 only and cannot run it "+
		"(add github.com/coredns/coredns/plugin/bind to the CoreDNS plugin list, or set %s to a CoreDNS binary that has it)", bin, CoreDNSEnv)
}

// KillServe kills `xcc-syncer serve` with SIGKILL, as a node failure would.
func (d *WorkloadDNS) KillServe() { d.Primary().StopServe(true) }

// RestartServe starts `xcc-syncer serve` again with the same flags (same
// etcd data dir and ports) and waits until it is ready.
func (d *WorkloadDNS) RestartServe(ctx context.Context) error {
	return d.Primary().StartServe(ctx, true)
}

// RestartServeNoWait starts `xcc-syncer serve` again without waiting for
// /readyz (which may need the API server).
func (d *WorkloadDNS) RestartServeNoWait() error {
	return d.Primary().StartServe(context.Background(), false)
}

// writeGuard writes the guard file the Corefile imports, as the chart's
// init container does: `xcc-syncer corefile` with serve's zone flags, its
// server blocks then bound to the lab's loopback like the Corefile's.
func (d *WorkloadDNS) writeGuard(ctx context.Context, path string) (string, error) {
	l := d.l
	if err := l.run(ctx, "xcc-syncer-corefile-"+d.Cluster.Name, l.Bin("xcc-syncer"), "corefile", "--out", path, "--reverse-cidrs", ReverseCIDRs); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the guard file: %w", err)
	}
	local, err := localCorefile(string(b), corefileEdit{})
	if err != nil {
		return "", fmt.Errorf("the guard file: %w", err)
	}
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// errUnknownSubcommand marks an xcc-syncer that printed its usage.
var errUnknownSubcommand = errors.New("xcc-syncer does not know this subcommand")

// run runs a command to its end, its output going to its log.
func (l *Lab) run(ctx context.Context, name, bin string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	logPath := filepath.Join(l.LogDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log of %s: %w", name, err)
	}
	defer f.Close()
	fmt.Fprintf(f, "==> %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		tail := tailFile(logPath, tailLines)
		if strings.Contains(tail, "usage: xcc-syncer <") {
			err = fmt.Errorf("%w: %w", errUnknownSubcommand, err)
		}
		return fmt.Errorf("%s: %w; last lines of %s:\n%s", name, err, logPath, tail)
	}
	l.progress("%s done", name)
	return nil
}

// httpOK is a readiness check: GET url answers 200.
func httpOK(url string) func(context.Context) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("request %s: %w", url, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}
