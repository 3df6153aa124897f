package lab

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const (
	// KubeadmCoreDNSVersion is the CoreDNS kubeadm deploys for
	// KubernetesVersion (cmd/kubeadm/app/constants CoreDNSVersion); the
	// Makefile builds it as bin/coredns-upstream-<version>.
	KubeadmCoreDNSVersion = "v1.14.2"
	// KubeadmCoreDNSImage is kubeadm's name for that image.
	KubeadmCoreDNSImage = "registry.k8s.io/coredns/coredns:" + KubeadmCoreDNSVersion
	kubeadmManifests    = "cmd/kubeadm/app/phases/addons/dns/manifests.go"
	coreDNSReadyWait    = 180 * time.Second
)

// kubeadmDNSManifests reads the CoreDNS manifests kubeadm applies, from
// the k8s.io/kubernetes module the e2e module pins: the string constants
// of its addons/dns/manifests.go, by name.
func kubeadmDNSManifests(ctx context.Context, e2eDir string) (map[string]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = e2eDir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locate k8s.io/kubernetes: %w", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), kubeadmManifests)
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parse kubeadm's CoreDNS manifests: %w", err)
	}
	m := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							m[n.Name] = v
						}
					}
				}
			}
		}
	}
	for _, k := range []string{"CoreDNSServiceAccount", "CoreDNSClusterRole", "CoreDNSClusterRoleBinding", "CoreDNSConfigMap", "CoreDNSDeployment", "CoreDNSService"} {
		if m[k] == "" {
			return nil, fmt.Errorf("%s of %s: no constant %s", kubeadmManifests, path, k)
		}
	}
	return m, nil
}

var kindGVR = map[string]schema.GroupVersionResource{
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ConfigMap":          {Version: "v1", Resource: "configmaps"},
	"Service":            {Version: "v1", Resource: "services"},
	"PersistentVolume":   {Version: "v1", Resource: "persistentvolumes"},
	"Deployment":         {Group: "apps", Version: "v1", Resource: "deployments"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
}

// createManifest creates the one object of doc (YAML).
func createManifest(ctx context.Context, c *Cluster, doc string) error {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		return fmt.Errorf("parse manifest: %w", err)
	}
	gvr, ok := kindGVR[obj.GetKind()]
	if !ok {
		return fmt.Errorf("manifest of kind %q: no resource known", obj.GetKind())
	}
	// kubeadm sets resourceVersion "0" for its updates; a create takes none.
	obj.SetResourceVersion("")
	var err error
	if ns := obj.GetNamespace(); ns != "" {
		_, err = c.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	} else {
		_, err = c.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s on %s: %w", obj.GetKind(), obj.GetName(), c.Name, err)
	}
	return nil
}

// deployKubeadmCoreDNS deploys the cluster's DNS as kubeadm does: its
// ServiceAccount, RBAC, ConfigMap coredns, Deployment coredns and Service
// kube-dns, from kubeadm's own manifests.
func (l *NodeLab) deployKubeadmCoreDNS(ctx context.Context, c *NodeCluster, manifests map[string]string) error {
	data := map[string]any{
		"DeploymentName":       "coredns",
		"Image":                KubeadmCoreDNSImage,
		"ControlPlaneTaintKey": "node-role.kubernetes.io/control-plane",
		"Replicas":             2,
		"DNSDomain":            nodeClusterName,
		"DNSIP":                c.Net.DNSIP(),
	}
	for _, k := range []string{"CoreDNSServiceAccount", "CoreDNSClusterRole", "CoreDNSClusterRoleBinding", "CoreDNSConfigMap", "CoreDNSDeployment", "CoreDNSService"} {
		t, err := template.New(k).Parse(manifests[k])
		if err != nil {
			return fmt.Errorf("kubeadm's %s: %w", k, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return fmt.Errorf("kubeadm's %s: %w", k, err)
		}
		if err := createManifest(ctx, c.Cluster, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// waitDeployment waits until every replica of a Deployment is available.
func waitDeployment(ctx context.Context, c *Cluster, ns, name string, timeout time.Duration) error {
	return waitFor(ctx, nil, timeout, fmt.Sprintf("Deployment %s/%s of %s available", ns, name, c.Name), func(ctx context.Context) error {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return deploymentReady(d)
	})
}

func deploymentReady(d *appsv1.Deployment) error {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.AvailableReplicas != want {
		return fmt.Errorf("%d of %d replicas updated, %d available", d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas)
	}
	return nil
}

// createLocalVolumes creates n hostPath PersistentVolumes without a
// storage class in the cluster, each pre-bound to the claim
// <claimPrefix>-<i> of namespace ns, owned by uid 65532 (the charts' pods):
// the node lab has no volume provisioner, as an administrator would
// provide them.
func createLocalVolumes(ctx context.Context, c *NodeCluster, ns, claimPrefix string, n int, size string) error {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", claimPrefix, i)
		dir := filepath.Join(c.Dir, "volumes", name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.Chown(dir, 65532, 65532); err != nil {
			return err
		}
		hp := corev1.HostPathDirectory
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-" + name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hp}},
				ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
			},
		}
		if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PersistentVolume %s on %s: %w", pv.Name, c.Name, err)
		}
	}
	return nil
}
