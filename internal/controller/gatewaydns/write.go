package gatewaydns

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/publish"
)

// destinationGroup is the targets of a namespace that share a destination.
type destinationGroup struct {
	key      string
	clusters []string
	targets  []publish.Target
}

// destinations groups the opted-in targets by destination (API server and
// slice namespace UID), in the order of targets; a target whose slice
// namespace is not listed yet or absent is left out.
func (c *Reconciler) destinations(targets []publish.Target) []*destinationGroup {
	byKey := map[string]*destinationGroup{}
	var out []*destinationGroup
	for _, t := range targets {
		uid, has, synced := t.Cluster.SliceNamespace(c.cfg.SliceNamespace)
		if !synced || !has {
			continue
		}
		key := t.Cluster.Destination(uid)
		if key == "" {
			key = t.Cluster.Key()
		}
		g := byKey[key]
		if g == nil {
			g = &destinationGroup{key: key}
			byKey[key] = g
			out = append(out, g)
		}
		g.clusters = append(g.clusters, t.Name)
		g.targets = append(g.targets, t)
	}
	for _, g := range out {
		slices.Sort(g.clusters)
	}
	return out
}

// withSelf gives each target of namespace the self marker it should hold
// (contract.BuildSelf): the Clusters of the namespace that share its
// destination, so serve can answer the asking cluster's own gateway first
// (policy Local). The publisher writes it with the target's slices.
func (c *Reconciler) withSelf(namespace string, targets []publish.Target) []publish.Target {
	out := slices.Clone(targets)
	at := make(map[string]int, len(out))
	for i, t := range out {
		at[t.Name] = i
	}
	for _, g := range c.destinations(targets) {
		marker := contract.BuildSelf(contract.Self{Namespace: namespace, Clusters: g.clusters})
		for _, t := range g.targets {
			out[at[t.Name]].Self = marker
		}
	}
	return out
}

// answering returns the Clusters of each destination whose marker is in
// place after res (a target of it written, marker and all), for
// contract.Answered; and the markers that could not be written.
func (c *Reconciler) answering(targets []publish.Target, res publish.Results) ([][]string, error) {
	var selves [][]string
	for _, g := range c.destinations(targets) {
		for _, t := range g.targets {
			if slices.Contains(res.Done, t.Name) && res.SelfErrs[t.Name] == nil {
				selves = append(selves, g.clusters)
				break
			}
		}
	}
	if len(res.SelfErrs) == 0 {
		return selves, nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(res.SelfErrs)) {
		errs = append(errs, fmt.Errorf("cluster %s: %w", name, res.SelfErrs[name]))
	}
	return selves, fmt.Errorf("self markers: %w", errors.Join(errs...))
}
