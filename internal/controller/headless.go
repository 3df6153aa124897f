package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
)

// headlessPublished remembers, per GatewayDNS key, the ready endpoints a
// headless export last published per source cluster
// (desired.State.Headless): what stays published while a cluster's
// endpoints are unknown. Pod addresses are too many and change too often
// for status, which carries only their count. A copy is kept in the
// controller's state on the management cluster (state.Headless) for the
// next controller to start from; never read back from a target cluster,
// whose admin can write any slice there.
type headlessPublished struct {
	mu    sync.Mutex
	byKey map[string]map[string]contract.HeadlessEndpoints
	// recovered holds the keys whose kept endpoints were loaded from the
	// state since the controller started (recoverHeadless).
	recovered map[string]bool
	// saved is what the state holds of each key, as state.Encode wrote
	// it; a key not here is unknown (not saved since the start).
	saved map[string]string
}

func newHeadlessPublished() *headlessPublished {
	return &headlessPublished{byKey: map[string]map[string]contract.HeadlessEndpoints{}, recovered: map[string]bool{}, saved: map[string]string{}}
}

func (h *headlessPublished) get(key string) map[string]contract.HeadlessEndpoints {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byKey[key]
}

// set replaces what key published; nil or empty forgets it.
func (h *headlessPublished) set(key string, eps map[string]contract.HeadlessEndpoints) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(eps) == 0 {
		delete(h.byKey, key)
		return
	}
	h.byKey[key] = eps
}

// forget drops everything known of key, in memory only.
func (h *headlessPublished) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byKey, key)
	delete(h.recovered, key)
	delete(h.saved, key)
}

// recoverHeadless gives the kept clusters of src that have no last
// endpoints in memory (the controller restarted) the ones the controller's
// state holds, once per GatewayDNS after the start. Without this, a
// cluster unreachable across a restart would lose its pods in every other
// cluster. It reports whether the state is known: false (the state could
// not be read) means this sync must not overwrite it.
func (c *Controller) recoverHeadless(ctx context.Context, key string, src gathered) bool {
	c.headless.mu.Lock()
	done := c.headless.recovered[key]
	c.headless.mu.Unlock()
	if done || c.cfg.State == nil {
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
	c.headless.mu.Lock()
	c.headless.recovered[key] = true
	c.headless.mu.Unlock()
	return true
}

// saveHeadless keeps what key published in the controller's state when it
// differs from what the state is known to hold.
func (c *Controller) saveHeadless(ctx context.Context, key string, eps map[string]contract.HeadlessEndpoints) error {
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
	c.headless.mu.Lock()
	saved, known := c.headless.saved[key]
	c.headless.mu.Unlock()
	if known && saved == string(data) {
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
	c.headless.mu.Lock()
	c.headless.saved[key] = string(data)
	c.headless.mu.Unlock()
	return nil
}
