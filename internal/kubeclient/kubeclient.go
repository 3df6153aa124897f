// Package kubeclient builds the Kubernetes client configuration every
// xcc-syncer role starts from.
package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

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

// IsTimeout reports whether err says an API server did not answer in
// time: a request's deadline passed, or the server said it timed out.
// Every writer into a workload cluster uses it to tell a member that does
// not answer from one that refuses.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
