package explain

import (
	"context"
	"fmt"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
)

// Reader reads the objects of the management cluster that can publish a
// name. A resource the API server does not serve lists nothing.
type Reader interface {
	// GatewayDNS lists the GatewayDNS of namespace.
	GatewayDNS(ctx context.Context, namespace string) ([]v1alpha1.GatewayDNS, error)
	// ClusterSets lists the ClusterSets of every namespace.
	ClusterSets(ctx context.Context) ([]xccv1alpha1.ClusterSet, error)
}

// SliceReader reads the contract slices of a workload cluster (--from):
// the Cluster cluster of the management namespace namespace.
type SliceReader interface {
	Slices(ctx context.Context, namespace, cluster string) ([]Slice, error)
}

// Read gathers the facts for n: only what can publish it, so that the
// rights needed are the fewest (list GatewayDNS in the name's namespace,
// or list ClusterSets). An error is recorded in Facts.Unread, never
// returned: the rest of the explanation still stands.
func Read(ctx context.Context, n Name, r Reader) Facts {
	var f Facts
	switch {
	case n.Refused != "" || n.Empty || n.TypeRefused != "" || n.Hand:
	case n.Family == FamilyClusterSet:
		sets, err := r.ClusterSets(ctx)
		if err != nil {
			f.Unread, f.ListFailed = append(f.Unread, fmt.Sprintf("list ClusterSets: %v", err)), true
		}
		f.ClusterSets = sets
	case n.Family != FamilyNone && n.Owner.Namespace != "":
		gds, err := r.GatewayDNS(ctx, n.Owner.Namespace)
		if err != nil {
			f.Unread, f.ListFailed = append(f.Unread, fmt.Sprintf("list GatewayDNS in %s: %v", n.Owner.Namespace, err)), true
		}
		f.GatewayDNS = gds
	}
	return f
}

// ReadSlices adds to f the slices of the workload cluster namespace/cluster
// (--from) that publish n; an error is recorded in f.Unread.
func ReadSlices(ctx context.Context, n Name, sr SliceReader, namespace, cluster string, f *Facts) {
	f.From = cluster
	all, err := sr.Slices(ctx, namespace, cluster)
	if err != nil {
		f.Unread, f.SlicesFailed = append(f.Unread, fmt.Sprintf("slices of %s/%s: %v", namespace, cluster, err)), true
	}
	for _, s := range all {
		if Publishes(s.Hostname, n.Name) {
			f.Slices = append(f.Slices, s)
		}
	}
}

// FromNamespace is the management namespace of the Cluster cluster that
// --from names for n: the name's own namespace, else (a clusterset name)
// the namespace of the ClusterSet that lists cluster among its selected
// Clusters; empty when none says.
func FromNamespace(n Name, f Facts, cluster string) string {
	if n.Owner.Namespace != "" {
		return n.Owner.Namespace
	}
	for _, cs := range f.ClusterSets {
		for _, m := range cs.Status.Clusters {
			if m.Name == cluster {
				return cs.Namespace
			}
		}
	}
	return ""
}
