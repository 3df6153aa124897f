package clusterset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/eastwest"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// eastWest is what one sync knows of the members' networks and of the
// exporters' east-west gateways (docs/mcs.md, "Networks"): the networks
// every member's objects are computed with, and the Gateway API objects
// each exporting member is written.
type eastWest struct {
	// on: the ClusterSet has spec.networks and members of two networks.
	on       bool
	networks objects.Networks
	// want are, per exporting member (cluster id) whose gateway was
	// read, the objects of each of its exports that a member of another
	// network imports; a member absent is not written.
	want map[string]map[aggregate.Key]*eastwest.Objects
	// held are the controller's ListenerSets each of those members
	// holds, as read (eastwest.Owned).
	held map[string]map[aggregate.Key]*gatewayv1.ListenerSet
}

// readEastWest reads the east-west gateway of every member that exports
// an import some member of another network imports, starting its
// informers for user (keep gets the ref), and computes the objects the
// member is written. Without spec.networks, or with all members in one
// network, it is the zero value: one network, nothing written.
func (c *Reconciler) readEastWest(cs *xccv1alpha1.ClusterSet, members []setMember, agg aggregate.Result, user string,
	keep map[string]map[string]bool) eastWest {
	var ew eastWest
	spec := cs.Spec.Networks
	if spec == nil {
		return ew
	}
	of := map[string]string{}
	for _, m := range members {
		of[m.ClusterID] = m.network
	}
	if len(slices.Compact(slices.Sorted(maps.Values(of)))) < 2 {
		return ew
	}
	cfg := eastwest.Config{Gateway: eastwest.Ref{Namespace: spec.Gateway.Namespace, Name: spec.Gateway.Name},
		Zone: c.cfg.ClusterSetZone, HTTPPort: spec.HTTPPort, TLSPort: spec.TLSPort,
		TCP: eastwest.Range{First: spec.TCPPorts.First, Last: spec.TCPPorts.Last}}
	ew = eastWest{on: true, networks: objects.Networks{Of: of, Gateways: map[string]objects.Gateway{}},
		want: map[string]map[aggregate.Key]*eastwest.Objects{}, held: map[string]map[aggregate.Key]*gatewayv1.ListenerSet{}}
	for _, m := range members {
		if m.cluster == nil {
			continue
		}
		keep[m.cluster.Key()][workload.EastWestRef] = true
		c.cfg.Workloads.WatchEastWest(m.cluster, user, workload.GatewayRef(cfg.Gateway))
		gw, sets, synced := c.cfg.Workloads.EastWest(m.cluster)
		if !synced {
			continue // its importers of other networks get none of it
		}
		exports := crossingExports(m, of, agg)
		alloc := eastwest.Allocate(cfg.Gateway, cfg.TCP, gw, sets, exports)
		read := eastwest.Read(cfg.Gateway, gw, sets, exports)
		for k, r := range alloc.Refused {
			read.Refused[k] = append(r, read.Refused[k]...)
		}
		read.Gateway.Refused = read.Refused
		ew.networks.Gateways[m.ClusterID] = read.Gateway
		want := make(map[aggregate.Key]*eastwest.Objects, len(exports))
		for k, ports := range exports {
			o := eastwest.Desired(cfg, k, ports, alloc.Ports[k])
			want[k] = &o
		}
		ew.want[m.ClusterID] = want
		ew.held[m.ClusterID] = eastwest.Owned(sets)
	}
	return ew
}

// crossingExports are the import ports of each import m is a source of
// that a member of another network imports: every member imports every
// import, so any member of another network does. A Headless import
// crosses no network (objects.Networks).
func crossingExports(m setMember, of map[string]string, agg aggregate.Result) map[aggregate.Key][]aggregate.Port {
	other := false
	for _, n := range of {
		other = other || n != m.network
	}
	out := map[aggregate.Key][]aggregate.Port{}
	if !other {
		return out
	}
	for _, imp := range agg.Imports {
		if imp.Type != aggregate.ImportHeadless && slices.Contains(imp.Clusters, m.ClusterID) {
			out[imp.Key] = imp.Ports
		}
	}
	return out
}

// writeEastWest brings the member's east-west objects to what ew wants
// of it (none: the member is not written, its gateway not read yet) and
// removes those of exports that no longer cross, as held (the member's
// ListenerSets of the controller, read), or all once ew is off. An
// export whose objects the last write of this process left as wanted,
// and whose ListenerSet the member still holds as written, costs no
// request (memo).
func writeEastWest(ctx context.Context, m setMember, ew eastWest, memo *memberMemo) error {
	want, held := ew.want[m.ClusterID], ew.held[m.ClusterID]
	if !ew.on && len(memo.eastWest) > 0 {
		// Networks were turned off, or every member is in one now.
		clear(memo.eastWest)
		return removeEastWest(ctx, m)
	}
	if want == nil {
		return nil
	}
	gc, ok := m.cluster.Gateways()
	if !ok {
		return errors.New("its client has no Gateway API")
	}
	keys := map[aggregate.Key]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range held {
		keys[k] = true
	}
	for k := range memo.eastWest {
		keys[k] = true
	}
	var errs []error
	for _, k := range slices.SortedFunc(maps.Keys(keys), aggregate.CompareKeys) {
		w := want[k]
		if w != nil && memo.eastWest[k] != nil && equality.Semantic.DeepEqual(memo.eastWest[k], w) && eastwest.Holds(held[k], w) {
			continue
		}
		if w == nil && held[k] == nil && memo.eastWest[k] == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, workload.RequestTimeout)
		err := eastwest.Apply(ctx, gc.GatewayV1(), k, w)
		cancel()
		delete(memo.eastWest, k)
		if err != nil {
			errs = append(errs, fmt.Errorf("east-west objects of %s/%s: %w", k.Namespace, k.Name, err))
			continue
		}
		if w != nil {
			memo.eastWest[k] = w
		}
	}
	return errors.Join(errs...)
}

// removeEastWest removes every east-west object of the controller from
// member m: it is no longer one, or its ClusterSet is going.
func removeEastWest(ctx context.Context, m setMember) error {
	gc, ok := m.cluster.Gateways()
	if !ok {
		return nil
	}
	keys, err := eastwest.Held(ctx, gc.GatewayV1())
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		if err := eastwest.Apply(ctx, gc.GatewayV1(), k, nil); err != nil {
			errs = append(errs, fmt.Errorf("remove the east-west objects of %s/%s: %w", k.Namespace, k.Name, err))
		}
	}
	return errors.Join(errs...)
}
