package lab

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The Multi-Cluster Services API on the node lab: real pods behind the
// exported Services, kube-proxy serving the derived Services.

// Labels the controller puts on the objects it writes into a member
// (internal/mcs/objects), repeated here: the e2e module does not import
// the main module.
const (
	labelMCSServiceName   = "multicluster.kubernetes.io/service-name"
	labelMCSSourceCluster = "multicluster.kubernetes.io/source-cluster"
	labelManagedBy        = "app.kubernetes.io/managed-by"
	controllerManagedBy   = "xcc-dns-controller"
)

// CreateMCSService creates, in namespace ns of c (created if missing), a
// Deployment name of one probe pod serving HTTP on 8080 (its answer names
// the pod) and a ClusterIP Service name with one TCP port, "http",
// port -> 8080; it waits until the pod is ready.
func CreateMCSService(ctx context.Context, c *NodeCluster, ns, name string, port int32) error {
	if err := ensureNamespace(ctx, c.Cluster, ns); err != nil {
		return err
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: probeWorkload(name, 8080)},
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Deployment %s/%s on %s: %w", ns, name, c.Name, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s on %s: %w", ns, name, c.Name, err)
	}
	return waitDeployment(ctx, c.Cluster, ns, name, chartReadyWait)
}

// SetMCSServicePort changes the port of the Service ns/name of c (made by
// CreateMCSService) to port, its name and target kept.
func SetMCSServicePort(ctx context.Context, c *NodeCluster, ns, name string, port int32) error {
	svc, err := c.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get Service %s/%s on %s: %w", ns, name, c.Name, err)
	}
	svc.Spec.Ports[0].Port = port
	if _, err := c.Client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Service %s/%s on %s: %w", ns, name, c.Name, err)
	}
	return nil
}

// CreateMCSHeadless creates, in namespace ns of c (created if missing), a
// headless Service name with one TCP port "pg" 5432 and a StatefulSet
// name of replicas probe pods serving HTTP on 5432 (so each has the
// hostname <name>-<i> in the Service's EndpointSlices); it waits until
// they are ready.
func CreateMCSHeadless(ctx context.Context, c *NodeCluster, ns, name string, replicas int32) error {
	if err := ensureNamespace(ctx, c.Cluster, ns); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)}}},
	}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s on %s: %w", ns, name, c.Name, err)
	}
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(replicas), ServiceName: name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:            probeWorkload(name, 5432)},
	}
	if _, err := c.Client.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create StatefulSet %s/%s on %s: %w", ns, name, c.Name, err)
	}
	return waitStatefulSet(ctx, c.Cluster, ns, name, chartReadyWait)
}

// PodsOf returns name -> address of the pods of c in ns labelled
// app=app.
func (c *NodeCluster) PodsOf(ctx context.Context, ns, app string) (map[string]string, error) {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, fmt.Errorf("list pods app=%s in %s of %s: %w", app, ns, c.Name, err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = p.Status.PodIP
	}
	return out, nil
}

// DeleteNamespace deletes namespace ns of c, if it is there, and waits
// until it is gone (its pods stopped).
func (c *NodeCluster) DeleteNamespace(ctx context.Context, ns string, timeout time.Duration) error {
	err := c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s of %s: %w", ns, c.Name, err)
	}
	return waitFor(ctx, nil, timeout, "namespace "+ns+" of "+c.Name+" gone", func(ctx context.Context) error {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there")
	})
}

// Derived is what a member holds for a ClusterSetIP import: the derived
// Service the controller wrote and its EndpointSlices' addresses by
// source cluster.
type Derived struct {
	Name       string
	ClusterIPs []string
	// Ports are the Service's "<name>/<protocol>/<port>".
	Ports []string
	// Sources are the ready addresses of the slices, by the slices'
	// source-cluster label, sorted.
	Sources map[string][]string
	// SliceLabels are the labels of the first slice, for messages.
	SliceLabels map[string]string
}

// GetDerived reads the derived Service of the import ns/svc in c (the
// controller's Service labelled with the import's name) and the
// EndpointSlices kube-proxy selects for it; nil when there is no such
// Service.
func GetDerived(ctx context.Context, c *Cluster, ns, svc string) (*Derived, error) {
	sel := labelMCSServiceName + "=" + svc + "," + labelManagedBy + "=" + controllerManagedBy
	svcs, err := c.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list derived Services of %s/%s on %s: %w", ns, svc, c.Name, err)
	}
	switch len(svcs.Items) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%d derived Services of %s/%s on %s, want one", len(svcs.Items), ns, svc, c.Name)
	}
	s := svcs.Items[0]
	d := &Derived{Name: s.Name, ClusterIPs: s.Spec.ClusterIPs, Sources: map[string][]string{}}
	if s.Spec.Selector != nil {
		return nil, fmt.Errorf("derived Service %s/%s on %s has a selector %v", ns, s.Name, c.Name, s.Spec.Selector)
	}
	for _, p := range s.Spec.Ports {
		d.Ports = append(d.Ports, fmt.Sprintf("%s/%s/%d", p.Name, p.Protocol, p.Port))
	}
	slices2, err := c.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + s.Name})
	if err != nil {
		return nil, fmt.Errorf("list EndpointSlices of %s/%s on %s: %w", ns, s.Name, c.Name, err)
	}
	for _, sl := range slices2.Items {
		if d.SliceLabels == nil {
			d.SliceLabels = sl.Labels
		}
		src := sl.Labels[labelMCSSourceCluster]
		for _, e := range sl.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			d.Sources[src] = append(d.Sources[src], e.Addresses...)
		}
	}
	for _, a := range d.Sources {
		slices.Sort(a)
	}
	return d, nil
}

// ClusterSetMembers reads status.members of the ClusterSet ns/name.
func ClusterSetMembers(ctx context.Context, mgmt *Cluster, ns, name string) (int64, error) {
	u, err := mgmt.Dynamic.Resource(ClusterSetGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("get ClusterSet %s/%s: %w", ns, name, err)
	}
	n, _, _ := unstructured.NestedInt64(u.Object, "status", "members")
	return n, nil
}

// WaitPodDone waits until pod default/name of c has ended and returns its
// log; a pod that failed returns its log and an error.
func (c *NodeCluster) WaitPodDone(ctx context.Context, name string, timeout time.Duration) (string, error) {
	pods := c.Client.CoreV1().Pods("default")
	var phase corev1.PodPhase
	err := waitFor(ctx, nil, timeout, "pod "+name+" of "+c.Name+" done", func(ctx context.Context) error {
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
	out, lerr := c.PodLogs(ctx, name)
	if err != nil {
		return out, fmt.Errorf("%w; log so far:\n%s", err, out)
	}
	if lerr != nil {
		return "", lerr
	}
	if phase == corev1.PodFailed {
		return out, fmt.Errorf("pod %s on %s failed: %s", name, c.Name, strings.TrimSpace(out))
	}
	return out, nil
}

// DeletePod deletes pod default/name of c at once, if it is there.
func (c *NodeCluster) DeletePod(ctx context.Context, name string) error {
	err := c.Client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s of %s: %w", name, c.Name, err)
	}
	return nil
}
