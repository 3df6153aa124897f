package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
)

// discoveryBackoff spaces the tries of the API discovery at start.
var discoveryBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: time.Minute}

// startState is what /readyz says of the controller while it leads:
// ready once its caches synced; until then, while the API discovery at
// its start fails, that failure.
type startState struct {
	ready     atomic.Bool
	discovery atomic.Pointer[string]
}

// notReady is why the controller is not ready yet.
func (s *startState) notReady() error {
	if msg := s.discovery.Load(); msg != nil {
		return errors.New(*msg)
	}
	return errors.New("informer caches not synced")
}

// servedAPIs is what the management cluster serves of what the
// controller reads.
type servedAPIs struct {
	// clusterGVR is the served version of cluster.x-k8s.io clusters.
	clusterGVR schema.GroupVersionResource
	// clusterSets: the ClusterSet CRD is served.
	clusterSets bool
}

// errNoClusterAPI is a discovery that answered without a Cluster API
// version: no try will find one until the Cluster CRD is installed.
var errNoClusterAPI = errors.New("no served Cluster API version has clusters")

// discoverAPIs finds what the management cluster serves, trying again
// while its discovery fails (discoveryBackoff, until ctx ends). A single
// failed call at start used to turn the ClusterSet reconciler off until
// a restart, leaving the finalizers of ClusterSets being deleted in
// place. Each failure is logged, counted, said by /readyz (start) and,
// when say is not nil, passed to it (discoveryStatus.say).
func discoverAPIs(ctx context.Context, d discovery.DiscoveryInterface, start *startState, metrics *Metrics, say func(context.Context, error)) (servedAPIs, error) {
	logger := klog.FromContext(ctx)
	backoff := discoveryBackoff
	for try := 1; ; try++ {
		apis, err := discoverOnce(d)
		if err == nil || errors.Is(err, errNoClusterAPI) {
			start.discovery.Store(nil)
			return apis, err
		}
		// The server's text is cut before it is logged or said anywhere.
		err = kubeclient.Cut(err)
		next := backoff.Step()
		metrics.DiscoveryFailures.Inc()
		msg := fmt.Sprintf("API discovery of the management cluster failed (try %d, next in %s); the controller starts once it answers: %v",
			try, next.Round(time.Millisecond), err)
		start.discovery.Store(&msg)
		logger.Error(err, "API discovery of the management cluster failed; trying again", "try", try, "next", next)
		if say != nil {
			say(ctx, err)
		}
		timer := time.NewTimer(next)
		select {
		case <-ctx.Done():
			timer.Stop()
			return servedAPIs{}, fmt.Errorf("API discovery of the management cluster, stopped after %d tries: %w", try, err)
		case <-timer.C:
		}
	}
}

// discoverOnce is one try of discoverAPIs: an error other than
// errNoClusterAPI is a call that failed and is worth another try.
func discoverOnce(d discovery.DiscoveryInterface) (servedAPIs, error) {
	gvr, err := discoverClusterResource(d)
	if err != nil {
		return servedAPIs{}, err
	}
	sets, err := servesClusterSets(d)
	if err != nil {
		return servedAPIs{}, err
	}
	return servedAPIs{clusterGVR: gvr, clusterSets: sets}, nil
}

// servesClusterSets reports whether the management cluster serves the
// ClusterSet CRD. A management chart older than it has not installed it
// (Helm installs a chart's CRDs on install only), which discovery says
// with NotFound: the GatewayDNS half then runs alone rather than wait
// for a cache that never syncs. Any other error is a failed call.
func servesClusterSets(d discovery.DiscoveryInterface) (bool, error) {
	gv := xccv1alpha1.SchemeGroupVersion.String()
	list, err := d.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == xccv1alpha1.ClusterSetResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

// discoverClusterResource picks the served cluster.x-k8s.io version,
// preferring v1beta2; CAPI v1.11 serves both, older releases only
// v1beta1. A version discovery does not find (NotFound) is not served;
// any other error fails the try, so a v1beta2 that failed to answer is
// not passed over for v1beta1.
func discoverClusterResource(d discovery.DiscoveryInterface) (schema.GroupVersionResource, error) {
	var notFound []error
	for _, v := range clusterAPIVersions {
		gv := schema.GroupVersion{Group: clusterAPIGroup, Version: v}
		list, err := d.ServerResourcesForGroupVersion(gv.String())
		if apierrors.IsNotFound(err) {
			notFound = append(notFound, fmt.Errorf("%s: %w", gv, err))
			continue
		}
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("%s: %w", gv, err)
		}
		for _, r := range list.APIResources {
			if r.Name == "clusters" {
				return gv.WithResource("clusters"), nil
			}
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("%w (tried %v); is the Cluster CRD installed? %w",
		errNoClusterAPI, clusterAPIVersions, errors.Join(notFound...))
}
