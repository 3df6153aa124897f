package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The node lab's fixed names and places. They are fixed, not chosen per
// run, so that a teardown finds whatever a killed run left behind.
const (
	// NodeLabDir holds every file of the node lab (certificates,
	// kubeconfigs, containerd and kubelet roots, logs).
	NodeLabDir = "/var/lib/xcc-node-lab"
	// nodeRunDir holds containerd's state, runc's state and the sockets.
	nodeRunDir = "/run/xcc-node-lab"
	// nodeNetnsPrefix names the lab's network namespaces:
	// xcc-lab-router and xcc-lab-<cluster>.
	nodeNetnsPrefix = "xcc-lab-"
	routerNetns     = nodeNetnsPrefix + "router"
	// hostVeth is the host's end of the veth to the router namespace.
	hostVeth = "xcc-lab0"
	// nodeCgroup is the cgroup (in every v1 controller) under which each
	// cluster's kubelet puts its pods: /xcc-node-lab/<cluster>.
	nodeCgroup  = "xcc-node-lab"
	cgroupV1Dir = "/sys/fs/cgroup"
	// HostAddress is the host's address on the lab network: the API
	// servers listen there.
	HostAddress = "198.18.0.1"
	routerHost  = "198.18.0.2"
	// labCIDR is the one range the lab uses (the benchmarking range,
	// never routed): nothing outside it is changed on the host.
	labCIDR = "198.18.0.0/15"
)

// nodeNet is the addresses of cluster number i (1..): the node's link
// 198.18.i.0/24 (router .1, node .2), Services 198.18.(100+i).0/24,
// load balancers 198.18.(200+i).0/24 (routed to the node) and pods
// 198.19.i.0/24.
type nodeNet struct {
	Index int
}

func (n nodeNet) RouterIP() string     { return fmt.Sprintf("198.18.%d.1", n.Index) }
func (n nodeNet) NodeIP() string       { return fmt.Sprintf("198.18.%d.2", n.Index) }
func (n nodeNet) ServiceCIDR() string  { return fmt.Sprintf("198.18.%d.0/24", 100+n.Index) }
func (n nodeNet) KubernetesIP() string { return fmt.Sprintf("198.18.%d.1", 100+n.Index) }
func (n nodeNet) DNSIP() string        { return fmt.Sprintf("198.18.%d.10", 100+n.Index) }
func (n nodeNet) LBCIDR() string       { return fmt.Sprintf("198.18.%d.0/24", 200+n.Index) }
func (n nodeNet) PodCIDR() string      { return fmt.Sprintf("198.19.%d.0/24", n.Index) }
func (n nodeNet) PodGateway() string   { return fmt.Sprintf("198.19.%d.1", n.Index) }

// LBAddress is the j-th load-balancer address of the cluster.
func (n nodeNet) LBAddress(j int) string { return fmt.Sprintf("198.18.%d.%d", 200+n.Index, j) }

func netnsName(cluster string) string { return nodeNetnsPrefix + cluster }
func netnsPath(cluster string) string { return "/run/netns/" + netnsName(cluster) }

// run runs a command and returns an error carrying its output.
func run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// inNetns runs a command in the network namespace ns.
func inNetns(ctx context.Context, ns string, name string, args ...string) error {
	return run(ctx, "nsenter", append([]string{"--net=/run/netns/" + ns, "--", name}, args...)...)
}

// setupRouter creates the router namespace and the veth to the host:
// host 198.18.0.1/30, router 198.18.0.2/30, and on the host one route,
// 198.18.0.0/15 via the router. Forwarding is turned on in the router's
// namespace only.
func setupRouter(ctx context.Context) error {
	steps := [][]string{
		{"ip", "netns", "add", routerNetns},
		{"ip", "link", "add", hostVeth, "type", "veth", "peer", "name", "host", "netns", routerNetns},
		{"ip", "addr", "add", HostAddress + "/30", "dev", hostVeth},
		{"ip", "link", "set", hostVeth, "up"},
		{"ip", "-n", routerNetns, "addr", "add", routerHost + "/30", "dev", "host"},
		{"ip", "-n", routerNetns, "link", "set", "host", "up"},
		{"ip", "-n", routerNetns, "link", "set", "lo", "up"},
		{"ip", "route", "add", labCIDR, "via", routerHost, "dev", hostVeth},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return inNetns(ctx, routerNetns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
}

// setupNodeNet creates a cluster's namespace and its veth to the router,
// the routes of its pods and load balancers on the router, and the
// sysctls kube-proxy and the bridge need inside the namespace.
func setupNodeNet(ctx context.Context, cluster string, n nodeNet) error {
	ns := netnsName(cluster)
	rv := fmt.Sprintf("c%d", n.Index)
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "-n", routerNetns, "link", "add", rv, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"ip", "-n", routerNetns, "addr", "add", n.RouterIP() + "/24", "dev", rv},
		{"ip", "-n", routerNetns, "link", "set", rv, "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "addr", "add", n.NodeIP() + "/24", "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", ns, "route", "add", "default", "via", n.RouterIP()},
		{"ip", "-n", routerNetns, "route", "add", n.PodCIDR(), "via", n.NodeIP()},
		{"ip", "-n", routerNetns, "route", "add", n.LBCIDR(), "via", n.NodeIP()},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	for _, kv := range []string{
		"net.ipv4.ip_forward=1",
		"net.bridge.bridge-nf-call-iptables=1",
		"net.bridge.bridge-nf-call-ip6tables=1",
		"net.ipv4.conf.all.route_localnet=1",
	} {
		if err := inNetns(ctx, ns, "sysctl", "-q", "-w", kv); err != nil {
			return fmt.Errorf("%w (the node lab needs the br_netfilter module)", err)
		}
	}
	return nil
}

// NodeTeardown removes whatever an earlier node lab left, in an order that
// works after a killed run: its processes (by the pid files it wrote, by
// the lab's cgroups, and the containerd shims naming the lab's sockets),
// its mounts, its network namespaces (with their veths, routes and
// iptables rules), its cgroups and its files. It is idempotent.
func NodeTeardown(ctx context.Context) error {
	var errs []string
	killPidFiles()
	killCgroupProcs()
	killByCmdline(nodeRunDir + "/")
	killByCmdline(NodeLabDir + "/")
	if err := unmountUnder(NodeLabDir, nodeRunDir); err != nil {
		errs = append(errs, err.Error())
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && strings.HasPrefix(f[0], nodeNetnsPrefix) {
				if err := run(ctx, "ip", "netns", "del", f[0]); err != nil {
					errs = append(errs, err.Error())
				}
			}
		}
	}
	// The kernel frees a deleted namespace, and the veths of its pods,
	// a moment later.
	for i := 0; i < 5 && podNetnsLeft(); i++ {
		time.Sleep(time.Second)
		removeEmptyPodNetns(ctx)
	}
	// Deleting the router's namespace deletes the host's veth and its
	// route; this is for a run killed between the two.
	if _, err := os.Stat("/sys/class/net/" + hostVeth); err == nil {
		if err := run(ctx, "ip", "link", "del", hostVeth); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := removeCgroups(); err != nil {
		errs = append(errs, err.Error())
	}
	removeContainerLogLinks()
	for _, d := range []string{NodeLabDir, nodeRunDir} {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("node lab teardown: %s", strings.Join(errs, "; "))
	}
	return nil
}

// removeEmptyPodNetns removes the pod network namespaces containerd left
// (/run/netns/cni-*) that hold nothing but lo: a pod's veth goes with the
// cluster's namespace, so a killed node lab leaves them empty; a live pod
// elsewhere still has its eth0.
func removeEmptyPodNetns(ctx context.Context) {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cni-") {
			continue
		}
		out, err := exec.CommandContext(ctx, "ip", "-n", e.Name(), "-o", "link", "show").Output()
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) == 1 && strings.Contains(lines[0], ": lo:") {
			_ = run(ctx, "ip", "netns", "del", e.Name())
		}
	}
}

func podNetnsLeft() bool {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "cni-") {
			return true
		}
	}
	return false
}

// pidFile records a started process: its pid and start time (field 22 of
// /proc/<pid>/stat), so that a teardown never signals a reused pid.
func writePidFile(name string, pid int) error {
	dir := filepath.Join(nodeRunDir, "pids")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	st, err := procStartTime(pid)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("%d %s\n", pid, st)), 0o644)
}

func procStartTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	// The command name (field 2) may hold spaces; count from its ')'.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("short /proc/%d/stat", pid)
	}
	return f[19], nil
}

func killPidFiles() {
	entries, _ := os.ReadDir(filepath.Join(nodeRunDir, "pids"))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(nodeRunDir, "pids", e.Name()))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 1 || pid == os.Getpid() {
			continue
		}
		if st, err := procStartTime(pid); err == nil && st == f[1] {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// cgroupControllers lists the mounted cgroup v1 hierarchies.
func cgroupControllers() []string {
	entries, _ := os.ReadDir(cgroupV1Dir)
	var out []string
	for _, e := range entries {
		p := filepath.Join(cgroupV1Dir, e.Name())
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 {
			if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// killCgroupProcs kills every process in the lab's cgroups: the pods'
// containers.
func killCgroupProcs() {
	for round := 0; round < 50; round++ {
		found := false
		for _, c := range cgroupControllers() {
			_ = filepath.WalkDir(filepath.Join(c, nodeCgroup), func(p string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
				for _, s := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(s); err == nil && pid > 1 && pid != os.Getpid() {
						found = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killByCmdline kills the processes whose command line names a path
// under dir (the containerd shims: -address <dir>/<cluster>/containerd.sock).
func killByCmdline(dir string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(dir)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(200 * time.Millisecond)
}

// unmountUnder detaches every mount at or below the given directories,
// deepest first.
func unmountUnder(dirs ...string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		for _, d := range dirs {
			if mp == d || strings.HasPrefix(mp, d+"/") {
				mounts = append(mounts, mp)
			}
		}
	}
	var errs []string
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Sprintf("unmount %s: %v", mounts[i], err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// removeCgroups removes the lab's cgroups, deepest first.
func removeCgroups() error {
	var errs []string
	for _, c := range cgroupControllers() {
		root := filepath.Join(c, nodeCgroup)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && err != syscall.ENOENT {
				errs = append(errs, fmt.Sprintf("remove cgroup %s: %v", dirs[i], err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// removeContainerLogLinks removes the kubelet's links in
// /var/log/containers that point into the lab.
func removeContainerLogLinks() {
	entries, _ := os.ReadDir("/var/log/containers")
	for _, e := range entries {
		p := filepath.Join("/var/log/containers", e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, NodeLabDir+"/") {
			_ = os.Remove(p)
		}
	}
}

// makeCgroups creates /xcc-node-lab/<cluster> in every controller, with
// the cpuset of the root (a new cpuset cgroup starts empty).
func makeCgroups(cluster string) error {
	for _, c := range cgroupControllers() {
		for _, d := range []string{filepath.Join(c, nodeCgroup), filepath.Join(c, nodeCgroup, cluster)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("create cgroup %s: %w", d, err)
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if v, err := os.ReadFile(filepath.Join(c, f)); err == nil {
					if cur, _ := os.ReadFile(filepath.Join(d, f)); len(bytes.TrimSpace(cur)) == 0 {
						if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
							return fmt.Errorf("set %s of %s: %w", f, d, err)
						}
					}
				}
			}
		}
	}
	return nil
}
