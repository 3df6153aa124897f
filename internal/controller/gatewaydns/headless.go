package gatewaydns

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
)

// recoverHeadless gives the kept clusters of src that have no last
// endpoints in memory (the controller restarted) the ones the controller's
// state holds, once per GatewayDNS after the start. Without this, a
// cluster unreachable across a restart would lose its pods in every other
// cluster. It reports whether the state is known: false (the state could
// not be read) means this sync must not overwrite it.
func (c *Reconciler) recoverHeadless(ctx context.Context, mem *memory, key string, src gathered) bool {
	if c.cfg.State == nil || mem.recovered() {
		return true
	}
	need := false
	for _, in := range src.clusters {
		need = need || (in.Selected && in.LastHeadless == nil && (in.AccessReason != "" || !in.ServiceSynced || !in.EndpointsSynced))
	}
	if !need {
		return true
	}
	got, err := c.cfg.State.Load(ctx, key)
	if err != nil {
		klog.FromContext(ctx).Info("Reading the kept headless endpoints failed; retrying", "err", err)
		return false
	}
	for i := range src.clusters {
		if eps, ok := got[src.clusters[i].Name]; ok && src.clusters[i].LastHeadless == nil {
			src.clusters[i].LastHeadless = &eps
		}
	}
	mem.setRecovered()
	return true
}

// saveHeadless keeps what key published in the controller's state when it
// differs from what the state is known to hold (mem says what that is).
func (c *Reconciler) saveHeadless(ctx context.Context, mem *memory, key string, eps map[string]contract.HeadlessEndpoints) error {
	if c.cfg.State == nil {
		return nil
	}
	data, err := state.Encode(eps)
	if err != nil {
		return err
	}
	if len(eps) == 0 {
		data = nil
	}
	if mem.savedHeadless(string(data)) {
		return nil
	}
	if err := c.cfg.State.Save(ctx, key, eps); err != nil {
		if !errors.Is(err, state.ErrTooLarge) {
			return fmt.Errorf("keep the headless endpoints of %s: %w", key, err)
		}
		// Not an error to retry: the export stays published, and only a
		// restart while a cluster is unreachable loses that cluster's pods.
		klog.FromContext(ctx).Info("Headless endpoints too many to keep across a restart", "gatewayDNS", key, "err", err)
	}
	mem.setSavedHeadless(string(data))
	return nil
}
