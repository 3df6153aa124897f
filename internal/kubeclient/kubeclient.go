// Package kubeclient builds the Kubernetes client configuration every
// xcc-syncer role starts from.
package kubeclient

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config reads kubeconfig, or the pod's service account when kubeconfig
// is empty, and sets the user agent the API server logs requests under.
func Config(kubeconfig, userAgent string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config (kubeconfig %q): %w", kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}
