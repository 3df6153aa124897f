package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ProbeImage is the node lab's client image (e2e/cmd/probe).
const ProbeImage = "lab.xcc.test/probe:latest"

// NodeOptions of a node lab.
type NodeOptions struct {
	// RepoRoot is the repository (found from the working directory when
	// empty); the binaries are read from its bin/.
	RepoRoot string
	// Clusters are the clusters, each one node (default management,
	// cluster-a, cluster-b).
	Clusters []string
	// Images are more image archives (OCI or Docker) imported into every
	// node, after the lab's own.
	Images []string
	// ClustersOnly starts the clusters and nothing in them: no CoreDNS,
	// no charts.
	ClustersOnly bool
	// Progress receives one line per step (default io.Discard).
	Progress io.Writer
}

// NodeLab is a running node lab. Stop it with Stop.
type NodeLab struct {
	NodeOptions
	LogDir   string
	EtcdURL  string
	Clusters []*NodeCluster
	// Kubeconfig is one file with a context per cluster.
	Kubeconfig string

	etcd     *embed.Etcd
	procs    group
	stopOnce sync.Once
}

func (l *NodeLab) progress(format string, args ...any) {
	fmt.Fprintf(l.Progress, ">> "+format+"\n", args...)
}

// Cluster returns the cluster named name, or nil.
func (l *NodeLab) Cluster(name string) *NodeCluster {
	for _, c := range l.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// NodeLabNeeds lists what the node lab needs from the machine and is
// missing: commands (with the Debian package holding them), the CNI
// plugins, root, cgroup v1 and br_netfilter.
func NodeLabNeeds() []string {
	var missing []string
	for _, c := range [][2]string{
		{"containerd", "containerd"}, {"ctr", "containerd"}, {"runc", "runc"},
		{"iptables", "iptables"}, {"conntrack", "conntrack"}, {"socat", "socat"},
		{"ip", "iproute2"}, {"nsenter", "util-linux"}, {"sysctl", "procps"},
	} {
		if _, err := exec.LookPath(c[0]); err != nil {
			missing = append(missing, fmt.Sprintf("command %s (Debian package %s)", c[0], c[1]))
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat("/usr/lib/cni/" + p); err != nil {
			missing = append(missing, "CNI plugin /usr/lib/cni/"+p+" (Debian package containernetworking-plugins)")
		}
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network namespaces, mounts, cgroups)")
	}
	if _, err := os.Stat(filepath.Join(cgroupV1Dir, "memory", "cgroup.procs")); err != nil {
		missing = append(missing, "cgroup v1 hierarchies under /sys/fs/cgroup (the node lab's kubelet runs the cgroupfs driver on v1)")
	}
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
		missing = append(missing, "the br_netfilter kernel module (/proc/sys/net/bridge)")
	}
	return missing
}

// StartNodeLab tears down what an earlier node lab left, then starts one.
// On error everything started so far is stopped and removed.
func StartNodeLab(ctx context.Context, o NodeOptions) (l *NodeLab, err error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if len(o.Clusters) == 0 {
		o.Clusters = []string{"management", "cluster-a", "cluster-b"}
	}
	if o.RepoRoot == "" {
		if o.RepoRoot, err = FindRepoRoot(); err != nil {
			return nil, err
		}
	}
	if missing := NodeLabNeeds(); len(missing) > 0 {
		return nil, fmt.Errorf("the node lab needs, and this machine lacks: %s (make node-packages installs the packages)", strings.Join(missing, "; "))
	}
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"} {
		p := filepath.Join(o.RepoRoot, "bin", b+"-"+KubernetesVersion)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("the node lab needs %s: make node-components kube-apiserver builds it", p)
		}
	}
	l = &NodeLab{NodeOptions: o, LogDir: filepath.Join(NodeLabDir, "logs")}
	l.progress("tearing down what an earlier node lab left")
	if err := NodeTeardown(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, l.Tails())
			l.Stop()
		}
	}()
	for _, d := range []string{l.LogDir, nodeRunDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return l, err
		}
	}
	if err := writePidFile("lab", os.Getpid()); err != nil {
		return l, err
	}
	images, err := l.buildLabImages(ctx)
	if err != nil {
		return l, err
	}
	images = append(images, o.Images...)
	if err := setupRouter(ctx); err != nil {
		return l, err
	}
	if l.etcd, l.EtcdURL, err = startEtcd(NodeLabDir, l.LogDir); err != nil {
		return l, err
	}
	for i, name := range o.Clusters {
		c, err := l.startNodeCluster(ctx, name, i+1, images)
		if c != nil {
			l.Clusters = append(l.Clusters, c)
		}
		if err != nil {
			return l, err
		}
	}
	if err := l.writeKubeconfig(); err != nil {
		return l, err
	}
	if !o.ClustersOnly && len(l.Clusters) > 1 {
		if err := l.setupXCC(ctx); err != nil {
			return l, err
		}
	}
	return l, nil
}

// buildLabImages builds the pause and probe binaries and writes their
// image archives.
func (l *NodeLab) buildLabImages(ctx context.Context) ([]string, error) {
	dir := filepath.Join(NodeLabDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e2e := filepath.Join(l.RepoRoot, "e2e")
	var out []string
	for _, img := range []struct{ pkg, ref, user string }{
		{"./cmd/pause", PauseImage, "65535:65535"},
		{"./cmd/probe", ProbeImage, "65532:65532"},
	} {
		exe := filepath.Join(dir, filepath.Base(img.pkg))
		if err := BuildStaticBinary(ctx, e2e, img.pkg, exe); err != nil {
			return nil, err
		}
		archive := exe + ".tar"
		if err := WriteBinaryImage(exe, img.ref, img.user, nil, false, archive); err != nil {
			return nil, fmt.Errorf("image %s: %w", img.ref, err)
		}
		out = append(out, archive)
	}
	l.progress("built images %s, %s", PauseImage, ProbeImage)
	return out, nil
}

// writeKubeconfig writes NodeLabDir/kubeconfig: a context per cluster,
// named after it.
func (l *NodeLab) writeKubeconfig() error {
	kc := clientcmdapi.NewConfig()
	for _, c := range l.Clusters {
		one := KubeconfigFor(c.Name, c.URL(), c.pki.CAPEM, c.token)
		kc.Clusters[c.Name] = one.Clusters[c.Name]
		kc.AuthInfos[c.Name] = one.AuthInfos[c.Name]
		kc.Contexts[c.Name] = one.Contexts[c.Name]
		if kc.CurrentContext == "" {
			kc.CurrentContext = c.Name
		}
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	l.Kubeconfig = filepath.Join(NodeLabDir, "kubeconfig")
	return os.WriteFile(l.Kubeconfig, data, 0o600)
}

// Tails returns the last lines of every process's log.
func (l *NodeLab) Tails() string {
	var b strings.Builder
	copyTails(&b, l.procs.all())
	return b.String()
}

// Stop stops every process of the lab and removes its namespaces, mounts,
// cgroups and files (NodeTeardown).
func (l *NodeLab) Stop() {
	l.stopOnce.Do(func() {
		l.procs.stopAll()
		if l.etcd != nil {
			l.etcd.Close()
		}
		if err := NodeTeardown(context.Background()); err != nil {
			fmt.Fprintln(l.Progress, err)
		}
	})
}
