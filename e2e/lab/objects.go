package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

const (
	fieldManager       = "xcc-dns-lab"
	crdEstablishedWait = 60 * time.Second
	// coreDNSConfigMap is kube-system/coredns, the cluster DNS's Corefile.
	coreDNSNamespace = "kube-system"
	coreDNSConfigMap = "coredns"
	corefileKey      = "Corefile"
	// KubeconfigSecretKey is the key of a CAPI <cluster>-kubeconfig Secret.
	KubeconfigSecretKey = "value"
)

var (
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ClusterGVR    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	GatewayDNSGVR = schema.GroupVersionResource{Group: "connectivity.tanzu.vmware.com", Version: "v1alpha1", Resource: "gatewaydns"}
)

// installCRDFile applies the CRD in path and waits until it is Established.
func installCRDFile(ctx context.Context, c *Cluster, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read CRD: %w", err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return fmt.Errorf("parse CRD %s: %w", path, err)
	}
	name := obj.GetName()
	if _, err := c.Dynamic.Resource(crdGVR).Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply CRD %s on %s: %w", name, c.Name, err)
	}
	return waitEstablished(ctx, c, name)
}

// waitCRDEstablished waits until the CRD in path (installed by another,
// such as helm) is Established.
func waitCRDEstablished(ctx context.Context, c *Cluster, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read CRD: %w", err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return fmt.Errorf("parse CRD %s: %w", path, err)
	}
	return waitEstablished(ctx, c, obj.GetName())
}

func waitEstablished(ctx context.Context, c *Cluster, name string) error {
	return waitFor(ctx, nil, crdEstablishedWait, "CRD "+name+" Established on "+c.Name, func(ctx context.Context) error {
		got, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get CRD: %w", err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return errors.New("not Established yet")
	})
}

// ApplyYAML server-side applies one namespaced object given as YAML.
func ApplyYAML(ctx context.Context, c *Cluster, gvr schema.GroupVersionResource, doc string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		return nil, fmt.Errorf("parse %s: %w", gvr.Resource, err)
	}
	got, err := c.Dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("apply %s %s/%s on %s: %w", gvr.Resource, obj.GetNamespace(), obj.GetName(), c.Name, err)
	}
	return got, nil
}

func ensureNamespace(ctx context.Context, c *Cluster, name string) error {
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s on %s: %w", name, c.Name, err)
	}
	return nil
}

// createCAPICluster creates the Cluster object for w in the management
// cluster as Cluster API would after provisioning it, and its
// <cluster>-kubeconfig Secret.
func createCAPICluster(ctx context.Context, mgmt, w *Cluster, controlPlaneHost string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ClusterGVR.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": w.Name, "namespace": ClusterNamespace},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": controlPlaneHost, "port": int64(w.Port)},
		},
	}}
	// A CRD that has just become Established can take a moment to be served.
	err := waitFor(ctx, nil, crdEstablishedWait, "create Cluster "+w.Name, func(ctx context.Context) error {
		_, err := mgmt.Dynamic.Resource(ClusterGVR).Namespace(ClusterNamespace).Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	status := `{"status":{"phase":"Provisioned","initialization":{"infrastructureProvisioned":true,"controlPlaneInitialized":true}}}`
	if _, err := mgmt.Dynamic.Resource(ClusterGVR).Namespace(ClusterNamespace).Patch(ctx, w.Name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("set status of Cluster %s: %w", w.Name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      w.Name + "-kubeconfig",
			Namespace: ClusterNamespace,
			Labels:    map[string]string{"cluster.x-k8s.io/cluster-name": w.Name},
		},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{KubeconfigSecretKey: w.KubeconfigBytes},
	}
	if _, err := mgmt.Client.CoreV1().Secrets(ClusterNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	return nil
}

// KubeconfigFromSecret reads a <cluster>-kubeconfig Secret the way the
// controller does and checks that it reaches that cluster.
func KubeconfigFromSecret(ctx context.Context, mgmt *Cluster, cluster string) ([]byte, error) {
	s, err := mgmt.Client.CoreV1().Secrets(ClusterNamespace).Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get kubeconfig Secret of %s: %w", cluster, err)
	}
	data := s.Data[KubeconfigSecretKey]
	if _, err := clientcmd.RESTConfigFromKubeConfig(data); err != nil {
		return nil, fmt.Errorf("kubeconfig Secret of %s: %w", cluster, err)
	}
	return data, nil
}

// createGateway creates projectcontour/envoy as a LoadBalancer Service and
// sets its load-balancer status as MetalLB would.
func createGateway(ctx context.Context, w *Cluster, gw Gateway) error {
	if err := ensureNamespace(ctx, w, GatewayNamespace); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayName, Namespace: GatewayNamespace},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "envoy"},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
				{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	if _, err := w.Client.CoreV1().Services(GatewayNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s/%s on %s: %w", GatewayNamespace, GatewayName, w.Name, err)
	}
	return SetGateway(ctx, w, gw)
}

// SetGateway replaces the envoy Service's status.loadBalancer.ingress, as
// a load balancer does when it assigns or changes addresses.
func SetGateway(ctx context.Context, w *Cluster, gw Gateway) error {
	svc, err := w.Client.CoreV1().Services(GatewayNamespace).Get(ctx, GatewayName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get Service %s/%s on %s: %w", GatewayNamespace, GatewayName, w.Name, err)
	}
	var ingress []corev1.LoadBalancerIngress
	for _, ip := range gw.IPs {
		ingress = append(ingress, corev1.LoadBalancerIngress{IP: ip, IPMode: ptr(corev1.LoadBalancerIPModeVIP)})
	}
	if gw.Hostname != "" {
		ingress = append(ingress, corev1.LoadBalancerIngress{Hostname: gw.Hostname})
	}
	svc.Status.LoadBalancer.Ingress = ingress
	if _, err := w.Client.CoreV1().Services(GatewayNamespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set load-balancer status of %s/%s on %s: %w", GatewayNamespace, GatewayName, w.Name, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// createCoreDNSConfigMap creates kube-system/coredns with corefile.
func createCoreDNSConfigMap(ctx context.Context, w *Cluster, corefile string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: coreDNSConfigMap, Namespace: coreDNSNamespace},
		Data:       map[string]string{corefileKey: corefile},
	}
	if _, err := w.Client.CoreV1().ConfigMaps(coreDNSNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ConfigMap %s/%s on %s: %w", coreDNSNamespace, coreDNSConfigMap, w.Name, err)
	}
	return nil
}

// setCoreDNSCorefile replaces kube-system/coredns's Corefile.
func setCoreDNSCorefile(ctx context.Context, w *Cluster, corefile string) error {
	cm, err := w.Client.CoreV1().ConfigMaps(coreDNSNamespace).Get(ctx, coreDNSConfigMap, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ConfigMap %s/%s on %s: %w", coreDNSNamespace, coreDNSConfigMap, w.Name, err)
	}
	cm.Data[corefileKey] = corefile
	if _, err := w.Client.CoreV1().ConfigMaps(coreDNSNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ConfigMap %s/%s on %s: %w", coreDNSNamespace, coreDNSConfigMap, w.Name, err)
	}
	return nil
}

// ClusterCorefile reads kube-system/coredns's Corefile.
func ClusterCorefile(ctx context.Context, w *Cluster) (string, error) {
	cm, err := w.Client.CoreV1().ConfigMaps(coreDNSNamespace).Get(ctx, coreDNSConfigMap, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get ConfigMap %s/%s on %s: %w", coreDNSNamespace, coreDNSConfigMap, w.Name, err)
	}
	return cm.Data[corefileKey], nil
}

// chartCorefile returns the Corefile of our DNS server as the workload
// chart rendered it into w.
func chartCorefile(ctx context.Context, w *Cluster) (string, error) {
	cm, err := w.Client.CoreV1().ConfigMaps(SliceNamespace).Get(ctx, CorefileConfigMap, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get the chart's Corefile %s/%s on %s: %w", SliceNamespace, CorefileConfigMap, w.Name, err)
	}
	return cm.Data[corefileKey], nil
}

// LabelCluster sets (value not empty) or removes the label key on the
// Cluster name in the management cluster, as `kubectl label` does.
func LabelCluster(ctx context.Context, mgmt *Cluster, name, key, value string) error {
	var patch string
	if value == "" {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
	} else {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	}
	if _, err := mgmt.Dynamic.Resource(ClusterGVR).Namespace(ClusterNamespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label Cluster %s/%s: %w", ClusterNamespace, name, err)
	}
	return nil
}

// DeleteGatewayDNS deletes a GatewayDNS (gone already is fine).
func DeleteGatewayDNS(ctx context.Context, mgmt *Cluster, namespace, name string) error {
	err := mgmt.Dynamic.Resource(GatewayDNSGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete GatewayDNS %s/%s: %w", namespace, name, err)
	}
	return nil
}

// CreateTenantCluster creates, in ClusterNamespace, a Cluster with labels
// and no control plane endpoint (so no api. name: its spec is only
// paused: false, as the CRD wants one field) and its <name>-kubeconfig
// Secret holding
// kubeconfig: what a tenant who may create both can make, whatever the
// kubeconfig says.
func CreateTenantCluster(ctx context.Context, mgmt *Cluster, name string, labels map[string]string, kubeconfig []byte) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ClusterGVR.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": name, "namespace": ClusterNamespace},
		"spec":       map[string]any{"paused": false},
	}}
	obj.SetLabels(labels)
	if _, err := mgmt.Dynamic.Resource(ClusterGVR).Namespace(ClusterNamespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Cluster %s: %w", name, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: ClusterNamespace,
			Labels: map[string]string{"cluster.x-k8s.io/cluster-name": name}},
		Type: "cluster.x-k8s.io/secret",
		Data: map[string][]byte{KubeconfigSecretKey: kubeconfig},
	}
	if _, err := mgmt.Client.CoreV1().Secrets(ClusterNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	return nil
}

// DeleteTenantCluster deletes what CreateTenantCluster made; what is gone
// already is not an error.
func DeleteTenantCluster(ctx context.Context, mgmt *Cluster, name string) error {
	err := mgmt.Dynamic.Resource(ClusterGVR).Namespace(ClusterNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Cluster %s: %w", name, err)
	}
	err = mgmt.Client.CoreV1().Secrets(ClusterNamespace).Delete(ctx, name+"-kubeconfig", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s-kubeconfig: %w", name, err)
	}
	return nil
}

// ClusterStatus is one entry of a GatewayDNS's status.clusters.
type ClusterStatus struct {
	Reason, Message string
}

// GatewayDNSClusters returns status.clusters of a GatewayDNS by cluster name.
func GatewayDNSClusters(ctx context.Context, mgmt *Cluster, namespace, name string) (map[string]ClusterStatus, error) {
	gd, err := mgmt.Dynamic.Resource(GatewayDNSGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get GatewayDNS %s/%s: %w", namespace, name, err)
	}
	entries, _, err := unstructured.NestedSlice(gd.Object, "status", "clusters")
	if err != nil {
		return nil, fmt.Errorf("status.clusters of GatewayDNS %s/%s: %w", namespace, name, err)
	}
	out := map[string]ClusterStatus{}
	for _, e := range entries {
		m, _ := e.(map[string]any)
		n, _ := m["name"].(string)
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		out[n] = ClusterStatus{Reason: reason, Message: message}
	}
	return out, nil
}
