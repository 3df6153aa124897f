package mgmt

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
)

// Connect returns the connection to the workload cluster of the Cluster
// namespace/name for user, from its <name>-kubeconfig Secret in the
// cache secrets: the Cluster, or why there is none (a missing or refused
// kubeconfig is a reason in the Access, not an error). The error is the
// cache's alone.
func Connect(secrets corelisters.SecretLister, workloads *workload.Set, namespace, name, user string) (workload.Access, error) {
	secret, err := secrets.Secrets(namespace).Get(name + workload.KubeconfigSecretSuffix)
	if err != nil && !apierrors.IsNotFound(err) {
		return workload.Access{}, fmt.Errorf("get kubeconfig Secret of cluster %s/%s: %w", namespace, name, err)
	}
	return workloads.Get(namespace, name, secret, user), nil
}
