package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
)

// workloadConfig is the client configuration of the workload Cluster
// namespace/cluster, read from its Cluster API <cluster>-kubeconfig
// Secret on the management cluster. A tenant may have written that
// Secret and runs that API server: the configuration is built by
// internal/kubeconfig (inline credentials only, no exec), and no response
// body is read past workload.DefaultMaxResponseBytes. explain --from and
// status read workload clusters through it alike.
func workloadConfig(ctx context.Context, management kubernetes.Interface, namespace, cluster, userAgent string, timeout time.Duration) (*rest.Config, error) {
	name := cluster + workload.KubeconfigSecretSuffix
	secret, err := management.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get Secret %s/%s: %w", namespace, name, err)
	}
	cfg, err := kubeconfig.RESTConfig(secret.Data[workload.KubeconfigSecretKey], kubeconfig.Policy{})
	if err != nil {
		return nil, fmt.Errorf("read Secret %s/%s: %w", namespace, name, err)
	}
	cfg.UserAgent = userAgent
	cfg.Timeout = timeout
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return workload.LimitBodies(rt, workload.DefaultMaxResponseBytes)
	})
	return cfg, nil
}
