package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// NodeReverseCIDRs is the workload chart's reverseCIDRs in the node
	// lab: the load-balancer pools of the clusters.
	NodeReverseCIDRs = "198.18.200.0/21"
	// GatewayLBHost is the last byte of every cluster's gateway address
	// in its load-balancer pool.
	GatewayLBHost  = 10
	chartReadyWait = 240 * time.Second
)

// GatewayAddress is the load-balancer address the node lab gives
// cluster's gateway Service (projectcontour/envoy, in front of Traefik).
func (c *NodeCluster) GatewayAddress() string { return c.Net.LBAddress(GatewayLBHost) }

// helm runs bin/helm-<version> with args, its output in the lab's log
// helm-<cluster>.
func (l *NodeLab) helm(ctx context.Context, c *NodeCluster, args ...string) error {
	logPath := filepath.Join(l.LogDir, "helm-"+c.Name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	bin := filepath.Join(l.RepoRoot, "bin", "helm-"+HelmVersion)
	fmt.Fprintf(f, "==> helm %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("helm %s on %s: %w; last lines of %s:\n%s", args[0], c.Name, err, logPath, tailFile(logPath, tailLines))
	}
	return nil
}

// HelmInstall installs chart (a path in the repository) into c as the
// README tells a user: release xcc-dns, namespace xcc-dns, the one value
// image.registry; set adds --set values.
func (l *NodeLab) HelmInstall(ctx context.Context, c *NodeCluster, chart string, set ...string) error {
	args := []string{"--kubeconfig", c.Kubeconfig, "install", ReleaseName, filepath.Join(l.RepoRoot, chart),
		"--namespace", SliceNamespace, "--create-namespace", "--set", "image.registry=" + ImageRegistry}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return l.helm(ctx, c, args...)
}

// xccImages writes the image archives of the cluster DNS's CoreDNS, of
// Traefik and of the layouts make images wrote, and imports them into
// every node.
func (l *NodeLab) xccImages(ctx context.Context) error {
	dir := filepath.Join(NodeLabDir, "images")
	coredns := filepath.Join(l.RepoRoot, "bin", "coredns-upstream-"+KubeadmCoreDNSVersion)
	b, err := os.ReadFile(coredns)
	if err != nil {
		return fmt.Errorf("the node lab needs %s: make node-components builds it", coredns)
	}
	exe := filepath.Join(dir, "coredns")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		return err
	}
	type archive struct{ path, base string }
	archives := []archive{{filepath.Join(dir, "coredns-upstream.tar"), ""}}
	if err := WriteBinaryImage(exe, KubeadmCoreDNSImage, "65532:65532", nil, true, archives[0].path); err != nil {
		return err
	}
	for _, name := range []string{"xcc-syncer", "coredns"} {
		layout := filepath.Join(l.RepoRoot, "bin", "images", name)
		if _, err := os.Stat(filepath.Join(layout, "index.json")); err != nil {
			return fmt.Errorf("the node lab needs the image layout %s: make images builds it", layout)
		}
		a := archive{filepath.Join(dir, name+".tar"), ImageRegistry + "/" + name}
		if err := TarLayout(layout, a.path); err != nil {
			return err
		}
		archives = append(archives, a)
	}
	traefik, err := l.traefikImage(dir)
	if err != nil {
		return err
	}
	archives = append(archives, archive{traefik, ""})
	for _, c := range l.Clusters {
		for _, a := range archives {
			if err := c.ImportImage(ctx, a.path, a.base); err != nil {
				return err
			}
		}
	}
	l.progress("imported %s, %s and make images' xcc-syncer and coredns into every node", KubeadmCoreDNSImage, TraefikImage)
	return nil
}

// setupXCC deploys kubeadm's CoreDNS in every cluster and xcc-dns as the
// README says: the management chart on the first cluster with the Cluster
// API Cluster CRD and a Cluster per other cluster, the workload chart on
// every other, Traefik as the Gateway behind a LoadBalancer Service in
// each, kuard and its HTTPRoute in the first, and the walkthrough's
// GatewayDNS.
func (l *NodeLab) setupXCC(ctx context.Context) error {
	start := time.Now()
	if err := l.xccImages(ctx); err != nil {
		return err
	}
	manifests, err := kubeadmDNSManifests(ctx, filepath.Join(l.RepoRoot, "e2e"))
	if err != nil {
		return err
	}
	for _, c := range l.Clusters {
		if err := l.deployKubeadmCoreDNS(ctx, c, manifests); err != nil {
			return err
		}
	}
	for _, c := range l.Clusters {
		if err := waitDeployment(ctx, c.Cluster, "kube-system", "coredns", coreDNSReadyWait); err != nil {
			return err
		}
	}
	l.progress("kubeadm's CoreDNS %s running in every cluster (%s)", KubeadmCoreDNSVersion, time.Since(start).Round(100*time.Millisecond))

	mgmt, workloads := l.Clusters[0], l.Clusters[1:]
	capiCRD, err := ClusterCRD(ctx)
	if err != nil {
		return err
	}
	if err := installCRDFile(ctx, mgmt.Cluster, capiCRD); err != nil {
		return err
	}
	if err := l.HelmInstall(ctx, mgmt, ManagementChart); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, mgmt.Cluster, ClusterNamespace); err != nil {
		return err
	}
	for _, w := range workloads {
		if err := createCAPICluster(ctx, mgmt.Cluster, w.Cluster, HostAddress); err != nil {
			return err
		}
		if err := createLocalVolumes(ctx, w, SliceNamespace, "etcd-data-"+ReleaseName, 2, "1Gi"); err != nil {
			return err
		}
		if err := l.HelmInstall(ctx, w, WorkloadChart, "reverseCIDRs={"+NodeReverseCIDRs+"}"); err != nil {
			return err
		}
		if err := l.startGateway(ctx, w); err != nil {
			return err
		}
	}
	if err := l.startKuard(ctx, workloads[0]); err != nil {
		return err
	}
	if err := waitDeployment(ctx, mgmt.Cluster, SliceNamespace, ReleaseName+"-controller", chartReadyWait); err != nil {
		return err
	}
	for _, w := range workloads {
		if err := waitStatefulSet(ctx, w.Cluster, SliceNamespace, ReleaseName, chartReadyWait); err != nil {
			return err
		}
		if err := waitDeployment(ctx, w.Cluster, GatewayNamespace, TraefikName, chartReadyWait); err != nil {
			return err
		}
	}
	if err := waitDeployment(ctx, workloads[0].Cluster, KuardNamespace, KuardName, chartReadyWait); err != nil {
		return err
	}
	if err := waitRouteAccepted(ctx, workloads[0].Cluster, KuardNamespace, KuardName); err != nil {
		return err
	}
	l.progress("Traefik %s is the Gateway %s/%s of %s; it accepted HTTPRoute %s/%s of %s", TraefikVersion, GatewayNamespace,
		GatewayObjectName, strings.Join(clusterNames(workloads), ", "), KuardNamespace, KuardName, workloads[0].Name)
	l.progress("charts installed and running: %s on %s, %s on %s (%s)", ManagementChart, mgmt.Name, WorkloadChart,
		strings.Join(clusterNames(workloads), ", "), time.Since(start).Round(100*time.Millisecond))
	for _, w := range workloads {
		if err := LabelCluster(ctx, mgmt.Cluster, w.Name, SelectorLabel, SelectorValue); err != nil {
			return err
		}
	}
	if _, err := ApplyYAML(ctx, mgmt.Cluster, GatewayDNSGVR, GatewayDNSYAML); err != nil {
		return err
	}
	l.progress("walkthrough applied: GatewayDNS %s/%s selects %s", ClusterNamespace, GatewayDNSName, strings.Join(clusterNames(workloads), ", "))
	return nil
}

func clusterNames(cs []*NodeCluster) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// waitStatefulSet waits until every replica of the StatefulSet runs its
// current template (after an install or an upgrade alike) and is ready.
func waitStatefulSet(ctx context.Context, c *Cluster, ns, name string, timeout time.Duration) error {
	return waitFor(ctx, nil, timeout, fmt.Sprintf("StatefulSet %s/%s of %s rolled out", ns, name, c.Name), func(ctx context.Context) error {
		s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := int32(1)
		if s.Spec.Replicas != nil {
			want = *s.Spec.Replicas
		}
		if s.Status.ObservedGeneration < s.Generation || s.Status.UpdateRevision != s.Status.CurrentRevision ||
			s.Status.UpdatedReplicas != want || s.Status.ReadyReplicas != want {
			return fmt.Errorf("revision %s of %s, %d updated, %d ready of %d", s.Status.CurrentRevision, s.Status.UpdateRevision,
				s.Status.UpdatedReplicas, s.Status.ReadyReplicas, want)
		}
		return nil
	})
}

// RunProbe runs the probe image in a pod of c with args (restartPolicy
// Never), waits until it ends and returns its output.
func (l *NodeLab) RunProbe(ctx context.Context, c *NodeCluster, name string, args ...string) (string, error) {
	pods := c.Client.CoreV1().Pods("default")
	_ = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	_ = waitFor(ctx, nil, 30*time.Second, "old pod "+name+" gone", func(ctx context.Context) error {
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: ProbeImage, ImagePullPolicy: corev1.PullNever, Args: args,
			}},
		},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create pod %s on %s: %w", name, c.Name, err)
	}
	var phase corev1.PodPhase
	err := waitFor(ctx, nil, 60*time.Second, "pod "+name+" of "+c.Name+" done", func(ctx context.Context) error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		phase = p.Status.Phase
		if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			return nil
		}
		return fmt.Errorf("phase %s", phase)
	})
	if err != nil {
		return "", err
	}
	out, err := pods.GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of pod %s on %s: %w", name, c.Name, err)
	}
	if phase == corev1.PodFailed {
		return string(out), fmt.Errorf("pod %s on %s failed: %s", name, c.Name, out)
	}
	return string(out), nil
}

// NodeNamesAddressHost is the last byte of cluster-a's shop/web address
// in its load-balancer pool.
const NodeNamesAddressHost = 20

// HeadlessGatewayDNSYAML exports databases/postgres of the Clusters
// labelled postgres=true.
const HeadlessGatewayDNSYAML = `---
apiVersion: connectivity.tanzu.vmware.com/v1alpha1
kind: GatewayDNS
metadata:
  name: db
  namespace: dev-team
spec:
  clusterSelector:
    matchLabels:
      postgres: "true"
  service: databases/postgres
  resolutionType: headless
`

// probeWorkload is a workload of the probe image serving TCP on port.
func probeWorkload(app string, port int32) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: app, Image: ProbeImage, ImagePullPolicy: corev1.PullNever,
			Args:           []string{"listen", fmt.Sprintf(":%d", port)},
			Ports:          []corev1.ContainerPort{{ContainerPort: port}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}, PeriodSeconds: 2},
		}}},
	}
}

// SetupServices adds, in cluster c, the two other kinds of names with
// real pods behind them: shop/web, a LoadBalancer Service annotated
// fqdn=web (address 198.18.(200+i).20) with the GatewayDNS's names turned
// on, and the headless Service databases/postgres of a StatefulSet db
// (two pods) exported by the GatewayDNS db.
func (l *NodeLab) SetupServices(ctx context.Context, c *NodeCluster) error {
	mgmt := l.Clusters[0]
	if err := ensureNamespace(ctx, c.Cluster, "shop"); err != nil {
		return err
	}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: probeWorkload("web", 8080)},
	}
	if _, err := c.Client.AppsV1().Deployments("shop").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create shop/web on %s: %w", c.Name, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{AnnotationFQDN: "web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	svc, err := c.Client.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Service shop/web on %s: %w", c.Name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: c.Net.LBAddress(NodeNamesAddressHost), IPMode: ptr(corev1.LoadBalancerIPModeVIP)}}
	if _, err := c.Client.CoreV1().Services("shop").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of Service shop/web on %s: %w", c.Name, err)
	}
	if _, err := ApplyYAML(ctx, mgmt.Cluster, GatewayDNSGVR, strings.Replace(GatewayDNSYAML, "resolutionType: loadBalancer", "resolutionType: loadBalancer\n  names:\n    enabled: true", 1)); err != nil {
		return err
	}

	if err := CreateHeadlessService(ctx, c.Cluster); err != nil {
		return err
	}
	db := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: HeadlessNamespace},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(2)), ServiceName: HeadlessService,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "postgres"}},
			Template:            probeWorkload("postgres", 5432)},
	}
	if _, err := c.Client.AppsV1().StatefulSets(HeadlessNamespace).Create(ctx, db, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create StatefulSet db on %s: %w", c.Name, err)
	}
	if err := LabelCluster(ctx, mgmt.Cluster, c.Name, "postgres", "true"); err != nil {
		return err
	}
	if _, err := ApplyYAML(ctx, mgmt.Cluster, GatewayDNSGVR, HeadlessGatewayDNSYAML); err != nil {
		return err
	}
	if err := waitStatefulSet(ctx, c.Cluster, HeadlessNamespace, "db", chartReadyWait); err != nil {
		return err
	}
	return waitDeployment(ctx, c.Cluster, "shop", "web", chartReadyWait)
}

// PodIP is the address of pod ns/name in c.
func (c *NodeCluster) PodIP(ctx context.Context, ns, name string) (string, error) {
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return p.Status.PodIP, nil
}
