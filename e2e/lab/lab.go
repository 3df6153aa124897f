// Package lab starts a local multi-cluster Cluster API world on real
// kube-apiservers, with no containers: one management and several workload
// API servers on one embedded etcd, the real Cluster API Cluster CRD, the
// objects Cluster API and a load balancer would create, and the xcc-dns
// binaries (controller, serve, our CoreDNS, patch-corefile and a "cluster
// DNS" CoreDNS per workload cluster) as processes. Everything listens on
// 127.0.0.1 only, on free ports.
package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

const (
	// KubernetesVersion is the kube-apiserver the Makefile builds.
	KubernetesVersion = "v1.36.3"
	// ClusterAPIVersion is the Cluster API module whose Cluster CRD the
	// lab installs.
	ClusterAPIVersion = "v1.11.3"
	clusterAPIModule  = "sigs.k8s.io/cluster-api"
	clusterCRDPath    = "config/crd/bases/cluster.x-k8s.io_clusters.yaml"
	// GatewayDNSCRDPath is the GatewayDNS CRD in the repository.
	GatewayDNSCRDPath = "charts/xcc-dns-management/crds/connectivity.tanzu.vmware.com_gatewaydns.yaml"
	// CorefileConfigMap is the workload chart's ConfigMap holding the
	// Corefile of our DNS server (files/Corefile as the chart renders
	// it; the reverse CIDRs' block is in the guard file it imports).
	CorefileConfigMap = ReleaseName + "-corefile"
	// ReverseCIDRs are the operator's reverse CIDRs in every workload
	// cluster (the chart's reverseCIDRs, serve's and patch-corefile's
	// --reverse-cidrs): cluster-a's gateway addresses and cluster-b's IPv6
	// one lie inside, cluster-b's IPv4 one outside.
	ReverseCIDRs = "192.0.2.0/24,2001:db8::/32"

	// DefaultControlPlaneHost is Options.ControlPlaneHost's default.
	DefaultControlPlaneHost = "{cluster}." + labDomain

	processReadyTimeout = 60 * time.Second
	commandTimeout      = 60 * time.Second
)

// Options of a lab. Zero values take the defaults.
type Options struct {
	// Dir holds every file of the lab (certificates, kubeconfigs, etcd
	// data, logs in Dir/logs).
	Dir string
	// RepoRoot is the repository (found from the working directory when
	// empty).
	RepoRoot string
	// WorkloadNames are the workload clusters (default cluster-a, cluster-b,
	// cluster-c).
	WorkloadNames []string
	// Gateways are the load-balancer statuses (default DefaultGateways).
	Gateways map[string]Gateway
	// ControlPlaneHost is the Clusters' spec.controlPlaneEndpoint.host,
	// {cluster} replaced by the cluster's name. The default,
	// {cluster}.lab.example.net, is a name the lab's stand-in upstream
	// resolves to the API server's address, 127.0.0.1, and is in its
	// serving certificate. (The controller never publishes a loopback
	// address or a localhost name, so the address itself cannot be used.)
	ControlPlaneHost string
	// ClustersOnly starts the API servers and their objects but none of
	// the xcc-dns binaries.
	ClustersOnly bool
	// Progress receives one line per step (default io.Discard).
	Progress io.Writer
}

// Lab is a running lab. Stop it with Stop.
type Lab struct {
	Options
	LogDir     string
	EtcdURL    string
	Upstream   string
	Management *Cluster
	Workloads  []*Cluster
	// DNS holds each workload cluster's xcc-dns processes.
	DNS map[string]*WorkloadDNS
	// Controller is `xcc-syncer controller` (nil when not started).
	Controller *Process
	// ControllerKubeconfig is the controller's kubeconfig: a token of the
	// management chart's ServiceAccount, so the controller has the chart's
	// RBAC only.
	ControllerKubeconfig string
	// ControllerHTTP is the controller's --http-address.
	ControllerHTTP string
	// GatewayDNSCRD tells whether the GatewayDNS CRD was found and installed.
	GatewayDNSCRD bool
	// Skipped says why parts of the lab did not start (empty when all did).
	Skipped []string

	etcd     *embed.Etcd
	upstream *upstream
	procs    group
	stopOnce sync.Once
}

// Start starts a lab. On error everything started so far is stopped and
// the error carries the tails of the logs.
func Start(ctx context.Context, o Options) (l *Lab, err error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if len(o.WorkloadNames) == 0 {
		o.WorkloadNames = []string{ClusterA, ClusterB, ClusterC}
	}
	if o.Gateways == nil {
		o.Gateways = DefaultGateways()
	}
	if o.ControlPlaneHost == "" {
		o.ControlPlaneHost = DefaultControlPlaneHost
	}
	if o.RepoRoot == "" {
		if o.RepoRoot, err = FindRepoRoot(); err != nil {
			return nil, err
		}
	}
	if o.Dir == "" {
		return nil, errors.New("lab: Options.Dir is required")
	}
	l = &Lab{Options: o, LogDir: filepath.Join(o.Dir, "logs"), DNS: map[string]*WorkloadDNS{}}
	if err := os.MkdirAll(l.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	defer func() {
		if err != nil {
			var b bytes.Buffer
			copyTails(&b, l.procs.all())
			err = fmt.Errorf("%w\nlogs in %s:\n%s", err, l.LogDir, b.String())
			l.Stop()
			l = nil
		}
	}()
	if !o.ClustersOnly {
		// Fail before the slow part when the CoreDNS binary cannot be run.
		if _, err := os.Stat(l.CoreDNSBin()); err == nil {
			if err := requireBind(ctx, l.CoreDNSBin()); err != nil {
				return l, err
			}
		}
	}
	if err := l.startClusters(ctx); err != nil {
		return l, err
	}
	if o.ClustersOnly {
		return l, nil
	}
	return l, l.startXCC(ctx)
}

func (l *Lab) progress(format string, args ...any) {
	fmt.Fprintf(l.Progress, "lab: "+format+"\n", args...)
}

// ControlPlaneHostOf is the spec.controlPlaneEndpoint.host of cluster.
func (l *Lab) ControlPlaneHostOf(cluster string) string {
	return strings.ReplaceAll(l.ControlPlaneHost, "{cluster}", cluster)
}

// Bin is the path of a binary in the repository's bin/.
func (l *Lab) Bin(name string) string { return filepath.Join(l.RepoRoot, "bin", name) }

// Workload returns the workload cluster name.
func (l *Lab) Workload(name string) *Cluster {
	for _, w := range l.Workloads {
		if w.Name == name {
			return w
		}
	}
	return nil
}

func (l *Lab) startClusters(ctx context.Context) error {
	start := time.Now()
	kas := l.Bin("kube-apiserver-" + KubernetesVersion)
	if _, err := os.Stat(kas); err != nil {
		return fmt.Errorf("kube-apiserver %s not built (run make kube-apiserver): %w", KubernetesVersion, err)
	}
	capiCRD, err := ClusterCRD(ctx)
	if err != nil {
		return err
	}
	if l.upstream, err = startUpstream(UpstreamRecords()); err != nil {
		return err
	}
	l.Upstream = l.upstream.Addr
	l.progress("stand-in upstream DNS on %s", l.Upstream)
	if l.etcd, l.EtcdURL, err = startEtcd(l.Dir, l.LogDir); err != nil {
		return err
	}
	l.progress("embedded etcd on %s", l.EtcdURL)

	names := append([]string{Management}, l.WorkloadNames...)
	clusters := make([]*Cluster, len(names))
	for i, n := range names {
		if clusters[i], err = newCluster(n, filepath.Join(l.Dir, n), kas, l.EtcdURL, l.LogDir, l.ControlPlaneHostOf(n)); err != nil {
			return err
		}
	}
	l.progress("starting %d kube-apiservers %s (%s)", len(names), KubernetesVersion, strings.Join(names, ", "))
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(ctx)
		}()
	}
	wg.Wait()
	for _, c := range clusters {
		if c.proc != nil {
			l.procs.add(c.proc)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.Management, l.Workloads = clusters[0], clusters[1:]
	l.progress("kube-apiservers ready in %s", time.Since(start).Round(100*time.Millisecond))

	mgmt := l.Management
	if err := installCRDFile(ctx, mgmt, capiCRD); err != nil {
		return err
	}
	l.progress("installed Cluster API %s Cluster CRD", ClusterAPIVersion)
	gwdnsCRD := filepath.Join(l.RepoRoot, GatewayDNSCRDPath)
	if _, err := os.Stat(gwdnsCRD); err == nil {
		// The management chart installs the CRD (its crds/), the
		// controller's ServiceAccount and its RBAC.
		if err := l.helmInstall(ctx, mgmt, ManagementChart); err != nil {
			return err
		}
		if err := waitCRDEstablished(ctx, mgmt, gwdnsCRD); err != nil {
			return err
		}
		l.GatewayDNSCRD = true
		l.progress("installed %s (GatewayDNS CRD from %s)", ManagementChart, GatewayDNSCRDPath)
	} else {
		l.skip("GatewayDNS CRD %s not in the repository yet: no GatewayDNS, no controller", GatewayDNSCRDPath)
	}
	if err := ensureNamespace(ctx, mgmt, ClusterNamespace); err != nil {
		return err
	}
	for _, w := range l.Workloads {
		if err := createCAPICluster(ctx, mgmt, w, l.ControlPlaneHostOf(w.Name)); err != nil {
			return err
		}
		// The workload chart creates namespace xcc-dns, serve's
		// ServiceAccount and its Role.
		if err := l.helmInstall(ctx, w, WorkloadChart, "reverseCIDRs={"+ReverseCIDRs+"}"); err != nil {
			return err
		}
		if err := createGateway(ctx, w, l.Gateways[w.Name]); err != nil {
			return err
		}
		if err := createCoreDNSConfigMap(ctx, w, ClusterDNSCorefile); err != nil {
			return err
		}
	}
	l.progress("workload chart installed; Clusters, kubeconfig Secrets, envoy Services and kube-system/coredns created (%s)", time.Since(start).Round(100*time.Millisecond))
	return nil
}

func (l *Lab) skip(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Skipped = append(l.Skipped, msg)
	l.progress("SKIP: %s", msg)
}

// ClusterCRD returns the path of the Cluster CRD in the module cache,
// downloading the pinned Cluster API module when it is not there.
func ClusterCRD(ctx context.Context) (string, error) {
	dir, err := moduleDir(ctx, clusterAPIModule, ClusterAPIVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, clusterCRDPath), nil
}

// moduleDir returns the directory of module@version in the module cache,
// downloading it from the module proxy when it is not there.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s%s", err, ee.Stderr, out)
		}
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var dir string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, `"Dir":`) {
			dir = strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, `"Dir":`)), `",`)
		}
	}
	if dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no Dir in %s", module, version, out)
	}
	return dir, nil
}

// FindRepoRoot walks up from the working directory to the directory that
// holds cmd/xcc-syncer.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cmd", "xcc-syncer")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no repository (a directory with cmd/xcc-syncer) above %s", dir)
		}
	}
}

// Processes are every process the lab started, in start order.
func (l *Lab) Processes() []*Process { return l.procs.all() }

// Tails returns the last lines of every process's log.
func (l *Lab) Tails() string {
	var b bytes.Buffer
	copyTails(&b, l.procs.all())
	return b.String()
}

// Stop stops every process (SIGTERM, then SIGKILL), the stand-in upstream
// and etcd. It is safe to call more than once.
func (l *Lab) Stop() {
	l.stopOnce.Do(func() {
		l.procs.stopAll()
		if l.upstream != nil {
			l.upstream.stop()
		}
		if l.etcd != nil {
			l.etcd.Close()
		}
	})
}

// RestartCluster starts a stopped API server again (same port, data and
// certificates) and waits for /readyz.
func (l *Lab) RestartCluster(ctx context.Context, c *Cluster) error {
	err := c.Restart(ctx)
	l.procs.add(c.proc)
	return err
}
