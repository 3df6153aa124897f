package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// pollUntil calls check every interval until it returns nil, and returns
// when that was: the benchmarks time changes with it, so the interval is
// the resolution of their figures. After timeout, or once ctx ends, it
// returns check's last error.
func pollUntil(ctx context.Context, interval, timeout time.Duration, check func() error) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not within %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}

// waitGatewayDNSGone waits until the GatewayDNS namespace/name is gone
// from the management cluster: its finalizer removed its slices.
func waitGatewayDNSGone(ctx context.Context, mgmt benchClients, namespace, name string, timeout time.Duration) error {
	gds := mgmt.dyn.Resource(lab.GatewayDNSGVR).Namespace(namespace)
	_, err := pollUntil(ctx, 200*time.Millisecond, timeout, func() error {
		_, err := gds.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return errors.New("still there")
	})
	if err != nil {
		return fmt.Errorf("GatewayDNS %s/%s not gone: %w", namespace, name, err)
	}
	return nil
}
