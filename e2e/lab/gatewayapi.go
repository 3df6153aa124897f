package lab

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatewayAPIKinds are the Gateway API CRDs (standard channel) the
// controller's east-west objects need: their file names' kinds.
var GatewayAPIKinds = []string{"gateways", "listenersets", "httproutes", "tlsroutes", "tcproutes"}

// GatewayAPICRDDir is the standard-channel CRD directory of the Gateway
// API release the main module requires, from the module cache: the CRDs
// the controller's objects are built for.
func GatewayAPICRDDir(ctx context.Context, repo string) (string, error) {
	return gatewayAPICRDDir(ctx, repo, "standard")
}

// gatewayAPICRDDir is the CRD directory of channel ("standard",
// "experimental") of the main module's Gateway API release, the main
// module being at repo.
func gatewayAPICRDDir(ctx context.Context, repo, channel string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", gatewayAPIModule)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find %s in the main module: %w", gatewayAPIModule, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", channel), nil
}

// InstallGatewayAPI installs the Gateway API CRDs of dir into c and waits
// until each is Established.
func InstallGatewayAPI(ctx context.Context, c *Cluster, dir string) error {
	return installGatewayAPIKinds(ctx, c, dir, GatewayAPIKinds)
}

// installGatewayAPIKinds installs the CRDs of kinds (lowercase plural)
// from dir into c, each Established.
func installGatewayAPIKinds(ctx context.Context, c *Cluster, dir string, kinds []string) error {
	for _, k := range kinds {
		if err := installCRDFile(ctx, c, filepath.Join(dir, "gateway.networking.k8s.io_"+k+".yaml")); err != nil {
			return err
		}
	}
	return nil
}

// UninstallGatewayAPI deletes the Gateway API CRDs InstallGatewayAPI
// installed, and with them every object of theirs, and waits until they
// are gone: an install meanwhile would apply to a CRD being deleted, see
// it Established, and lose it a moment later.
func UninstallGatewayAPI(ctx context.Context, c *Cluster) error {
	for _, k := range GatewayAPIKinds {
		name := k + ".gateway.networking.k8s.io"
		if err := c.Dynamic.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete CRD %s on %s: %w", name, c.Name, err)
		}
	}
	for _, k := range GatewayAPIKinds {
		name := k + ".gateway.networking.k8s.io"
		err := waitFor(ctx, nil, crdEstablishedWait, "CRD "+name+" gone from "+c.Name, func(ctx context.Context) error {
			_, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("get CRD: %w", err)
			}
			return errors.New("still there")
		})
		if err != nil {
			return err
		}
	}
	return nil
}
