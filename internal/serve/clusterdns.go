package serve

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/corefile"
)

// DefaultClusterDNSPeriod is how often the forward block is checked: a block
// an addon manager dropped is back within it.
const DefaultClusterDNSPeriod = 10 * time.Second

// clusterDNSKeeper keeps the zone's forward block in the cluster DNS
// Corefile (corefile.Keep). Every replica runs one; their writes are
// guarded by the ConfigMap's resourceVersion, and all of them want the same
// text, so they never fight.
type clusterDNSKeeper struct {
	kube   kubernetes.Interface
	o      corefile.KeepOptions
	period time.Duration
}

func newClusterDNSKeeper(kube kubernetes.Interface, o Options) (*clusterDNSKeeper, error) {
	ns, name, err := corefile.SplitRef(o.ClusterDNSConfigMap)
	if err != nil {
		return nil, fmt.Errorf("cluster DNS ConfigMap: %w", err)
	}
	if _, _, err := corefile.SplitRef(o.ClusterDNSService); err != nil {
		return nil, fmt.Errorf("cluster DNS Service: %w", err)
	}
	period := o.ClusterDNSPeriod
	if period <= 0 {
		period = DefaultClusterDNSPeriod
	}
	return &clusterDNSKeeper{kube: kube, period: period, o: corefile.KeepOptions{
		Namespace: ns, ConfigMap: name, Service: o.ClusterDNSService,
		Options: corefile.Options{Zone: o.Domain, ClusterSetZone: o.ClusterSetZone, ClusterSetServer: o.ClusterSetServer, ReverseCIDRs: o.ReverseCIDRs},
	}}, nil
}

// run checks every period until ctx ends, and once more as soon as serve is
// told to stop: a pod stopped because its release was deleted
// (helm uninstall --no-hooks, a deleted namespace) takes the block out
// while it still can.
func (k *clusterDNSKeeper) run(ctx context.Context, stopping <-chan struct{}) {
	t := time.NewTicker(k.period)
	defer t.Stop()
	k.once(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.once(ctx)
		case <-stopping:
			k.once(ctx)
			stopping = nil
		}
	}
}

func (k *clusterDNSKeeper) once(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, k.period)
	defer cancel()
	a, err := corefile.Keep(ctx, k.kube, k.o)
	switch {
	case err != nil:
		logger.Error(err, "Keeping the forward block in the cluster DNS Corefile", "configmap", k.o.Namespace+"/"+k.o.ConfigMap, "service", k.o.Service)
	case a != corefile.Unchanged:
		logger.Info("Cluster DNS Corefile", "configmap", k.o.Namespace+"/"+k.o.ConfigMap, "service", k.o.Service, "result", a)
	}
}
