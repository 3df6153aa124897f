package mgmt

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
)

// Engine is what the controller builds once and both reconcilers run on:
// one watch of each management kind, one connection and cache per
// workload cluster, one writer into them. The controller starts and
// stops all of it; a reconciler only registers on it.
type Engine struct {
	// Dynamic is the management cluster: status and finalizers.
	Dynamic dynamic.Interface
	// Informers is the controller's dynamic informer factory; each
	// reconciler registers the informer of its own kind on it.
	Informers dynamicinformer.DynamicSharedInformerFactory
	// Clusters is the Cluster API Cluster informer.
	Clusters cache.SharedIndexInformer
	// Secrets is the cache of kubeconfig Secrets.
	Secrets corelisters.SecretLister
	// Workloads are the connections to the workload clusters and their
	// informers; each reconciler's users are its own keys.
	Workloads *workload.Set
	// Lanes are the writers into the workload clusters (package lane):
	// one backoff and one bound on the writes per cluster for both.
	Lanes *lane.Set
}
