package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The Multi-Cluster Services API as the lab uses it: a ClusterSet on the
// management cluster, ServiceExports and ServiceImports in the workload
// clusters (the workload chart installs their CRDs).
var (
	ClusterSetGVR    = schema.GroupVersionResource{Group: "xcc-dns.io", Version: "v1alpha1", Resource: "clustersets"}
	ServiceExportGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceexports"}
	ServiceImportGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1beta1", Resource: "serviceimports"}
)

// ClusterSetZone is the zone of the MCS DNS specification.
const ClusterSetZone = "clusterset.local"

// The servers of the clusterset zone the workload chart's mcs.dnsServer
// picks: xcc-dns's serve, or the cluster DNS's own kubernetes plugin.
const (
	ClusterSetServe   = "serve"
	ClusterSetCoreDNS = "coredns"
)

// ClusterSetHost is the name of the import namespace/name.
func ClusterSetHost(namespace, name string) string {
	return fmt.Sprintf("%s.%s.svc.%s", name, namespace, ClusterSetZone)
}

// ClusterSetYAML is a ClusterSet of ClusterNamespace selecting the
// walkthrough's labelled Clusters.
func ClusterSetYAML(name string) string {
	return ClusterSetSelecting(name, SelectorLabel, SelectorValue)
}

// ClusterSetSelecting is a ClusterSet of ClusterNamespace selecting the
// Clusters labelled key=value.
func ClusterSetSelecting(name, key, value string) string {
	return fmt.Sprintf(`apiVersion: xcc-dns.io/v1alpha1
kind: ClusterSet
metadata:
  name: %s
  namespace: %s
spec:
  clusterSelector:
    matchLabels:
      %s: "%s"
`, name, ClusterNamespace, key, value)
}

// ExportedService is a Service the lab exports: its ports, and the
// endpoints written as the endpoint slice controller would (nothing else
// writes them in the lab).
type ExportedService struct {
	Namespace, Name string
	Headless        bool
	Ports           []corev1.ServicePort
	// Pods are the ready endpoints, hostname (may be empty) and address.
	Pods []HeadlessPod
}

// CreateExportedService creates, in w, the namespace, the Service, its
// EndpointSlice and the ServiceExport of s.
func CreateExportedService(ctx context.Context, w *Cluster, s ExportedService) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}
	if _, err := w.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s on %s: %w", s.Namespace, w.Name, err)
	}
	svc, slice := s.Objects()
	if _, err := w.Client.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s on %s: %w", s.Namespace, s.Name, w.Name, err)
	}
	if _, err := w.Client.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EndpointSlice of %s/%s on %s: %w", s.Namespace, s.Name, w.Name, err)
	}
	return Export(ctx, w, s.Namespace, s.Name)
}

// Objects are the Service of s and its EndpointSlice, as the endpoint
// slice controller would write it.
func (s ExportedService) Objects() (*corev1.Service, *discoveryv1.EndpointSlice) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": s.Name}, Ports: s.Ports},
	}
	if s.Headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	slice := HeadlessEndpointSlice(s.Name+"-lab", s.Pods)
	slice.Namespace = s.Namespace
	slice.Labels[discoveryv1.LabelServiceName] = s.Name
	if !s.Headless {
		delete(slice.Labels, corev1.IsHeadlessService)
	}
	for i := range slice.Endpoints {
		slice.Endpoints[i].TargetRef.Namespace = s.Namespace
		if *slice.Endpoints[i].Hostname == "" {
			slice.Endpoints[i].Hostname = nil
		}
	}
	slice.Ports = nil
	for _, p := range s.Ports {
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr(p.Name), Protocol: ptr(p.Protocol), Port: ptr(p.TargetPort.IntVal)})
	}
	return svc, slice
}

// Export creates the ServiceExport namespace/name in w.
func Export(ctx context.Context, w *Cluster, namespace, name string) error {
	if _, err := w.Dynamic.Resource(ServiceExportGVR).Namespace(namespace).Create(ctx, ServiceExport(namespace, name), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ServiceExport %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// SetExportedLabels sets spec.exportedLabels of the ServiceExport
// namespace/name in w.
func SetExportedLabels(ctx context.Context, w *Cluster, namespace, name string, labels map[string]string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"exportedLabels": labels}})
	if err != nil {
		return err
	}
	if _, err := w.Dynamic.Resource(ServiceExportGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("set exportedLabels of ServiceExport %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// ServiceExport is the ServiceExport namespace/name.
func ServiceExport(namespace, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport",
		"metadata": map[string]any{"name": name, "namespace": namespace},
	}}
}

// AddMember starts one more workload API server, name, in the running
// lab, with the workload chart (the MCS CRDs, namespace xcc-dns) and a
// Cluster API Cluster with its kubeconfig Secret, labelled key=value. No
// serve or DNS runs for it: it is a member whose objects the controller
// writes. The lab's Stop stops it; RemoveMember takes it out earlier.
func (l *Lab) AddMember(ctx context.Context, name, key, value string) (*Cluster, error) {
	c, err := newCluster(name, filepath.Join(l.Dir, name), l.Bin("kube-apiserver-"+KubernetesVersion), l.EtcdURL, l.LogDir, l.ControlPlaneHostOf(name))
	if err != nil {
		return nil, err
	}
	err = c.start(ctx)
	if c.proc != nil {
		l.procs.add(c.proc)
	}
	if err != nil {
		return nil, err
	}
	if err := l.helmInstall(ctx, c, WorkloadChart); err != nil {
		return c, err
	}
	if err := createCAPICluster(ctx, l.Management, c, l.ControlPlaneHostOf(name)); err != nil {
		return c, err
	}
	return c, LabelCluster(ctx, l.Management, name, key, value)
}

// RemoveMember deletes the Cluster and kubeconfig Secret of a member
// AddMember started, then stops its API server.
func (l *Lab) RemoveMember(ctx context.Context, c *Cluster) error {
	defer c.Stop()
	err := l.Management.Dynamic.Resource(ClusterGVR).Namespace(ClusterNamespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Cluster %s/%s: %w", ClusterNamespace, c.Name, err)
	}
	err = l.Management.Client.CoreV1().Secrets(ClusterNamespace).Delete(ctx, c.Name+"-kubeconfig", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s/%s-kubeconfig: %w", ClusterNamespace, c.Name, err)
	}
	return nil
}

// Unexport deletes the ServiceExport namespace/name in w, if it is there.
func Unexport(ctx context.Context, w *Cluster, namespace, name string) error {
	err := w.Dynamic.Resource(ServiceExportGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ServiceExport %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// DeleteExportedService deletes the ServiceExport, the Service and its
// lab EndpointSlice, if they are there.
func DeleteExportedService(ctx context.Context, w *Cluster, namespace, name string) error {
	if err := Unexport(ctx, w, namespace, name); err != nil {
		return err
	}
	err := w.Client.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	err = w.Client.DiscoveryV1().EndpointSlices(namespace).Delete(ctx, name+"-lab", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete EndpointSlice of %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	return nil
}

// Import is what the lab reads of a ServiceImport.
type Import struct {
	Type     string
	IPs      []string
	Ports    []string // "<name>/<protocol>/<port>"
	Clusters []string
	Labels   map[string]string
}

// GetImport reads the ServiceImport namespace/name of w; nil when there
// is none.
func GetImport(ctx context.Context, w *Cluster, namespace, name string) (*Import, error) {
	u, err := w.Dynamic.Resource(ServiceImportGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ServiceImport %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	imp := &Import{Labels: u.GetLabels()}
	imp.Type, _, _ = unstructured.NestedString(u.Object, "spec", "type")
	imp.IPs, _, _ = unstructured.NestedStringSlice(u.Object, "spec", "ips")
	ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
	for _, p := range ports {
		m, _ := p.(map[string]any)
		imp.Ports = append(imp.Ports, fmt.Sprintf("%v/%v/%v", m["name"], m["protocol"], m["port"]))
	}
	clusters, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
	for _, c := range clusters {
		m, _ := c.(map[string]any)
		imp.Clusters = append(imp.Clusters, fmt.Sprint(m["cluster"]))
	}
	return imp, nil
}

// ExportConditions reads the conditions of the ServiceExport
// namespace/name of w: type -> "<status>/<reason>".
func ExportConditions(ctx context.Context, w *Cluster, namespace, name string) (map[string]string, error) {
	u, err := w.Dynamic.Resource(ServiceExportGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get ServiceExport %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := map[string]string{}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out[fmt.Sprint(m["type"])] = fmt.Sprintf("%v/%v", m["status"], m["reason"])
	}
	return out, nil
}

// DeleteClusterSet deletes the ClusterSet namespace/name, if it is there.
func DeleteClusterSet(ctx context.Context, mgmt *Cluster, namespace, name string) error {
	err := mgmt.Dynamic.Resource(ClusterSetGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ClusterSet %s/%s: %w", namespace, name, err)
	}
	return nil
}

// labelSliceManagedBy is the EndpointSlice API's managed-by label, which
// the controller sets on the slices it imports into a member.
const labelSliceManagedBy = "endpointslice.kubernetes.io/managed-by"

// ImportedSlices lists the EndpointSlices the controller wrote into
// namespace of w for its imports: those of the import service, or of
// every import when service is empty; of the endpoints of the source
// cluster id, or of every source when source is empty.
func ImportedSlices(ctx context.Context, w *Cluster, namespace, service, source string) ([]discoveryv1.EndpointSlice, error) {
	sel := labelSliceManagedBy + "=" + controllerManagedBy
	if service != "" {
		sel += "," + labelMCSServiceName + "=" + service
	}
	if source != "" {
		sel += "," + labelMCSSourceCluster + "=" + source
	}
	l, err := w.Client.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list the imported EndpointSlices %s in %s of %s: %w", sel, namespace, w.Name, err)
	}
	return l.Items, nil
}

// EnsureNamespace creates namespace name in c unless it is there: an
// import reaches only the members where its namespace exists.
func EnsureNamespace(ctx context.Context, c *Cluster, name string) error {
	return ensureNamespace(ctx, c, name)
}

// ImportReady reads the Ready condition of the ServiceImport
// namespace/name of w: "<status>/<reason>" and its message.
func ImportReady(ctx context.Context, w *Cluster, namespace, name string) (status, message string, err error) {
	u, err := w.Dynamic.Resource(ServiceImportGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("get ServiceImport %s/%s on %s: %w", namespace, name, w.Name, err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return fmt.Sprintf("%v/%v", m["status"], m["reason"]), fmt.Sprint(m["message"]), nil
		}
	}
	return "", "", nil
}
