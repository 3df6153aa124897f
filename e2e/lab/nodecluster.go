package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// PauseImage is the sandbox image containerd runs for every pod,
	// built here from e2e/cmd/pause under kubeadm's name for it.
	PauseImage      = "registry.k8s.io/pause:3.10.2"
	nodeReadyWait   = 180 * time.Second
	containerdWait  = 60 * time.Second
	nodeClusterName = "cluster.local"
)

// NodeCluster is one cluster of the node lab: an API server on the host
// (HostAddress, its own port), kube-controller-manager and kube-scheduler
// beside it, and one node in the network namespace xcc-lab-<name>:
// containerd, kubelet and kube-proxy.
type NodeCluster struct {
	*Cluster
	Net nodeNet
	// Dir holds the cluster's files; containerd's socket is Socket.
	Dir    string
	Socket string

	nodeToken string
	procs     []*Process
}

// Netns is the path of the cluster's network namespace.
func (c *NodeCluster) Netns() string { return netnsPath(c.Name) }

func (l *NodeLab) bin(name string) string {
	return filepath.Join(l.RepoRoot, "bin", name+"-"+KubernetesVersion)
}

// startProc starts a process of the lab (in the cluster's network
// namespace when netns is set) and records its pid for a later teardown.
func (l *NodeLab) startProc(c *NodeCluster, name string, netns bool, bin string, args ...string) (*Process, error) {
	if netns {
		args = append([]string{"--net=" + c.Netns(), "--", bin}, args...)
		bin = "nsenter"
	}
	p, err := startProcess(l.LogDir, name, nil, bin, args...)
	if err != nil {
		return nil, err
	}
	if err := writePidFile(name, p.Pid()); err != nil {
		p.Kill()
		return nil, fmt.Errorf("pid file of %s: %w", name, err)
	}
	l.procs.add(p)
	if c != nil {
		c.procs = append(c.procs, p)
	}
	return p, nil
}

// startNodeCluster starts every part of cluster number index and waits
// until its node is Ready.
func (l *NodeLab) startNodeCluster(ctx context.Context, name string, index int, images []string) (*NodeCluster, error) {
	n := nodeNet{Index: index}
	dir := filepath.Join(NodeLabDir, name)
	base, err := newCluster(name, dir, l.bin("kube-apiserver"), l.EtcdURL, l.LogDir, HostAddress,
		net.ParseIP(HostAddress), net.ParseIP(n.KubernetesIP()))
	if err != nil {
		return nil, err
	}
	base.Host = HostAddress
	c := &NodeCluster{Cluster: base, Net: n, Dir: dir, Socket: filepath.Join(nodeRunDir, name, "containerd.sock")}
	c.nodeToken = base.token + "n"
	// The kubelet's identity, for the Node authorizer.
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,system:node:%s,node-%s,\"system:nodes\"\n",
		base.token, adminUser, adminUser, c.nodeToken, name, name)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, fmt.Errorf("write token file of %s: %w", name, err)
	}

	l.progress("%s: network namespace %s, node %s, pods %s, Services %s", name, netnsName(name), n.NodeIP(), n.PodCIDR(), n.ServiceCIDR())
	if err := setupNodeNet(ctx, name, n); err != nil {
		return nil, err
	}
	if err := l.startControlPlane(ctx, c); err != nil {
		return nil, err
	}
	if err := l.startContainerd(ctx, c); err != nil {
		return nil, err
	}
	for _, img := range images {
		if err := c.ImportImage(ctx, img, ""); err != nil {
			return nil, err
		}
	}
	if err := l.startKubelet(ctx, c); err != nil {
		return nil, err
	}
	if err := l.startKubeProxy(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (l *NodeLab) startControlPlane(ctx context.Context, c *NodeCluster) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.Port = port
	args := apiServerFlags(apiServer{etcdURL: l.EtcdURL, name: c.Name, address: HostAddress, port: port, dir: c.dir,
		pki: c.pki, issuer: nodeClusterName, serviceCIDR: c.Net.ServiceCIDR()},
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true")
	c.proc, err = l.startProc(c, "kube-apiserver-"+c.Name, false, l.bin("kube-apiserver"), args...)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, c.proc, apiserverReadyTimeout, "kube-apiserver of "+c.Name+" /readyz", c.readyz); err != nil {
		return err
	}
	if err := c.clients(); err != nil {
		return err
	}
	l.progress("%s: kube-apiserver ready at %s", c.Name, c.URL())
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	if _, err := l.startProc(c, "kube-controller-manager-"+c.Name, false, l.bin("kube-controller-manager"),
		"--kubeconfig="+c.Kubeconfig,
		"--service-account-private-key-file="+c.pki.SAKeyFile,
		"--root-ca-file="+c.pki.CAFile,
		"--cluster-name="+c.Name,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--use-service-account-credentials=false",
		"--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle-controller,-node-route-controller",
		"--profiling=false",
		"--v=1",
	); err != nil {
		return err
	}
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	_, err = l.startProc(c, "kube-scheduler-"+c.Name, false, l.bin("kube-scheduler"),
		"--kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
		"--profiling=false",
		"--v=1",
	)
	return err
}

func (l *NodeLab) startContainerd(ctx context.Context, c *NodeCluster) error {
	root := filepath.Join(c.Dir, "containerd")
	state := filepath.Join(nodeRunDir, c.Name, "containerd")
	cniConf := filepath.Join(c.Dir, "cni")
	for _, d := range []string{root, state, cniConf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "xcc-lab-%s",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": %q
    }
  }]
}
`, c.Name, c.Net.PodCIDR(), c.Net.PodGateway(), filepath.Join(c.Dir, "cni-ipam"))
	if err := os.WriteFile(filepath.Join(cniConf, "10-bridge.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, root, state, c.Socket, c.Socket+".ttrpc", filepath.Join(c.Dir, "opt"), PauseImage,
		filepath.Join(nodeRunDir, c.Name, "runc"), cniConf)
	path := filepath.Join(c.Dir, "containerd.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := l.startProc(c, "containerd-"+c.Name, true, "containerd", "--config", path)
	if err != nil {
		return err
	}
	return waitFor(ctx, p, containerdWait, "containerd of "+c.Name, func(ctx context.Context) error {
		return run(ctx, "ctr", "--address", c.Socket, "version")
	})
}

// ImportImage imports an OCI or Docker image archive into the node's
// containerd (namespace k8s.io, where the kubelet's images are). baseName,
// when set, names the images whose archive gives only a tag (as the
// layouts of make images do).
func (c *NodeCluster) ImportImage(ctx context.Context, archive, baseName string) error {
	args := []string{"--address", c.Socket, "-n", "k8s.io", "images", "import"}
	if baseName != "" {
		args = append(args, "--base-name", baseName)
	}
	return run(ctx, "ctr", append(args, archive)...)
}

// Images lists the image names the node's containerd holds.
func (c *NodeCluster) Images(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.Socket, "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil {
		return nil, fmt.Errorf("ctr images ls of %s: %w", c.Name, err)
	}
	return strings.Fields(string(out)), nil
}

func (l *NodeLab) startKubelet(ctx context.Context, c *NodeCluster) error {
	if err := makeCgroups(c.Name); err != nil {
		return err
	}
	kdir := filepath.Join(c.Dir, "kubelet")
	for _, d := range []string{kdir, filepath.Join(c.Dir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	kc := KubeconfigFor(c.Name, c.URL(), c.pki.CAPEM, c.nodeToken)
	kcData, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	kcPath := filepath.Join(c.Dir, "kubelet.kubeconfig")
	if err := os.WriteFile(kcPath, kcData, 0o600); err != nil {
		return err
	}
	// Pods with dnsPolicy Default (CoreDNS) get this resolv.conf: an
	// address inside the lab's range where nothing answers, so nothing
	// the lab's pods ask ever leaves the machine.
	resolv := filepath.Join(c.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+HostAddress+"\n"), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s/%s
containerRuntimeEndpoint: unix://%s
address: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
clusterDNS: [%s]
clusterDomain: %s
resolvConf: %s
podLogsDir: %s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
failSwapOn: false
serializeImagePulls: false
localStorageCapacityIsolation: false
rotateCertificates: false
`, nodeCgroup, c.Name, c.Socket, c.Net.NodeIP(), c.Net.DNSIP(), nodeClusterName, resolv,
		filepath.Join(c.Dir, "pod-logs"))
	cfgPath := filepath.Join(c.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := l.startProc(c, "kubelet-"+c.Name, true, l.bin("kubelet"),
		"--config="+cfgPath,
		"--kubeconfig="+kcPath,
		"--root-dir="+kdir,
		"--cert-dir="+filepath.Join(kdir, "pki"),
		"--hostname-override="+c.Name,
		"--node-ip="+c.Net.NodeIP(),
		"--v=1",
	)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, p, nodeReadyWait, "node "+c.Name+" Ready", func(ctx context.Context) error {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("condition Ready is %s: %s", cond.Status, cond.Message)
			}
		}
		return fmt.Errorf("no Ready condition")
	}); err != nil {
		return err
	}
	l.progress("%s: node Ready", c.Name)
	return nil
}

func (l *NodeLab) startKubeProxy(c *NodeCluster) error {
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
clusterCIDR: %s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.Kubeconfig, c.Name, c.Net.PodCIDR())
	path := filepath.Join(c.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return err
	}
	_, err := l.startProc(c, "kube-proxy-"+c.Name, true, l.bin("kube-proxy"), "--config="+path, "--v=1")
	return err
}
