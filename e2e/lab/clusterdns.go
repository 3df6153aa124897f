package lab

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"text/template"
)

// ClusterDNSServiceAccount is the cluster DNS's ServiceAccount in
// kube-system, as kubeadm names it.
const ClusterDNSServiceAccount = "coredns"

// kubeadmClusterDNSGrants are kubeadm's manifests that give the cluster
// DNS its identity and what its kubernetes plugin reads for
// cluster.local: no ServiceImports among them.
var kubeadmClusterDNSGrants = []string{"CoreDNSServiceAccount", "CoreDNSClusterRole", "CoreDNSClusterRoleBinding"}

// KubeadmClusterDNSKubeconfig gives w the cluster DNS's ServiceAccount
// kube-system/coredns and its ClusterRole system:coredns from kubeadm's
// own manifests (the lab runs no kubeadm; each created if missing), and
// returns a kubeconfig with a token of that account: a CoreDNS run with
// it reads with kubeadm's grants and what the charts add.
func (l *Lab) KubeadmClusterDNSKubeconfig(ctx context.Context, w *Cluster) (string, error) {
	manifests, err := kubeadmDNSManifests(ctx, filepath.Join(l.RepoRoot, "e2e"))
	if err != nil {
		return "", err
	}
	for _, k := range kubeadmClusterDNSGrants {
		t, err := template.New(k).Parse(manifests[k])
		if err != nil {
			return "", fmt.Errorf("kubeadm's %s: %w", k, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, map[string]any{}); err != nil {
			return "", fmt.Errorf("kubeadm's %s: %w", k, err)
		}
		if err := createManifest(ctx, w, b.String()); err != nil {
			return "", err
		}
	}
	return serviceAccountKubeconfig(ctx, w, coreDNSNamespace, ClusterDNSServiceAccount)
}
