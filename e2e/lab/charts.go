package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// HelmVersion is the helm the Makefile builds (bin/helm-<version>).
	HelmVersion = "v4.3.1"
	// ReleaseName is the Helm release of both charts; their ServiceAccounts
	// are named after it.
	ReleaseName = "xcc-dns"
	// ManagementChart and WorkloadChart are the charts in the repository.
	ManagementChart = "charts/xcc-dns-management"
	WorkloadChart   = "charts/xcc-dns-workload"
	// chartTokenSeconds is the lifetime of the ServiceAccount tokens.
	chartTokenSeconds = 4 * 60 * 60
	// ImageRegistry is the charts' one image value, as the README's install
	// sets it. Nothing is pulled from it: no pod ever runs.
	ImageRegistry = "registry.example.com/xcc-dns"
)

// helmInstall installs chart into c's namespace SliceNamespace with the
// admin kubeconfig and the install command of the README: one image
// value, image.registry, and the lab's own settings in set. Hooks are
// skipped (no kubelet runs their Jobs).
func (l *Lab) helmInstall(ctx context.Context, c *Cluster, chart string, set ...string) error {
	args := []string{"install", ReleaseName, filepath.Join(l.RepoRoot, chart),
		"--kubeconfig", c.Kubeconfig,
		"--namespace", SliceNamespace, "--create-namespace",
		"--set", "image.registry=" + ImageRegistry,
		"--no-hooks",
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return l.run(ctx, "helm-"+c.Name, l.Bin("helm-"+HelmVersion), args...)
}

// chartKubeconfig requests a token for the chart's ServiceAccount sa in
// namespace SliceNamespace of c (TokenRequest API) and writes a kubeconfig
// with it, so that a process runs with the chart's RBAC only.
func chartKubeconfig(ctx context.Context, c *Cluster, sa string) (string, error) {
	return serviceAccountKubeconfig(ctx, c, SliceNamespace, sa)
}

// serviceAccountKubeconfig is chartKubeconfig for the ServiceAccount
// namespace/sa.
func serviceAccountKubeconfig(ctx context.Context, c *Cluster, namespace, sa string) (string, error) {
	seconds := int64(chartTokenSeconds)
	tr, err := c.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}},
		metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of ServiceAccount %s/%s on %s: %w", namespace, sa, c.Name, err)
	}
	data, err := clientcmd.Write(*KubeconfigFor(c.Name, c.URL(), c.pki.CAPEM, tr.Status.Token))
	if err != nil {
		return "", fmt.Errorf("encode kubeconfig of %s/%s on %s: %w", namespace, sa, c.Name, err)
	}
	file := sa
	if namespace != SliceNamespace {
		file = namespace + "." + sa
	}
	path := filepath.Join(c.dir, file+".serviceaccount.kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// UpgradeWorkloadChart upgrades the workload chart's release in c to
// the values it has with set on top (helm upgrade --reuse-values),
// hooks skipped as at install.
func (l *Lab) UpgradeWorkloadChart(ctx context.Context, c *Cluster, set ...string) error {
	args := []string{"upgrade", ReleaseName, filepath.Join(l.RepoRoot, WorkloadChart),
		"--kubeconfig", c.Kubeconfig, "--namespace", SliceNamespace, "--reuse-values", "--no-hooks"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return l.run(ctx, "helm-upgrade-"+c.Name, l.Bin("helm-"+HelmVersion), args...)
}
