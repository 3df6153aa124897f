package workload

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// allServices is the one cluster-wide Service informer of a workload
// cluster, shared by its two readers: the names Services claim with the
// fqdn annotation (WatchNames) and the Services that ServiceExports name
// (WatchExports). One list and one watch of every Service per cluster,
// whatever reads them; each reader is told only of the changes it reads.
type allServices struct {
	informer *objectWatch
	cancel   context.CancelFunc
	// onNames and onExports are the readers' callbacks, nil while that
	// reader does not use the informer; exported says whether a
	// ServiceExport names a Service (the exports' store).
	onNames, onExports atomic.Pointer[func()]
	exported           atomic.Pointer[func(namespace, name string) bool]
}

// servicesLocked returns w's shared Service informer, started if it is
// not (again after a cut-off, once the cluster is no longer cut off);
// nil while the cluster is cut off. m.mu is held.
func (m *Set) servicesLocked(w *Cluster) *allServices {
	if s := w.allServices; s != nil && s.informer.cut() {
		s.cancel()
		w.allServices = nil
	}
	if w.allServices == nil && w.reads.cut() != "" {
		return nil
	}
	if w.allServices == nil {
		ctx, cancel := context.WithCancel(w.ctx)
		s := &allServices{cancel: cancel}
		s.informer = watchAllServices(w.client, w.reads, s)
		s.informer.run(ctx, s.notifyAll)
		w.allServices = s
		klog.FromContext(m.ctx).Info("Watching the Services of workload cluster", "cluster", w.key)
	}
	return w.allServices
}

// releaseServicesLocked stops w's shared Service informer once neither
// reader uses it. m.mu is held.
func (m *Set) releaseServicesLocked(w *Cluster) {
	if s := w.allServices; s != nil && w.names == nil && w.exports == nil {
		s.cancel()
		w.allServices = nil
		klog.FromContext(m.ctx).Info("Stopped watching the Services of workload cluster", "cluster", w.key)
	}
}

func (s *allServices) notifyAll() {
	s.notify(&s.onNames)
	s.notify(&s.onExports)
}

func (s *allServices) notify(p *atomic.Pointer[func()]) {
	if f := p.Load(); f != nil {
		(*f)()
	}
}

// isExported reports whether a ServiceExport names obj, a Service.
func (s *allServices) isExported(obj any) bool {
	f := s.exported.Load()
	svc, ok := obj.(*corev1.Service)
	return f != nil && ok && (*f)(svc.Namespace, svc.Name)
}

// watchAllServices is the cluster-wide Service informer of s. A change
// of a Service that claims a name is an event of the names; one of a
// Service a ServiceExport names, of the exports.
func watchAllServices(client Client, r *reads, s *allServices) *objectWatch {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = notOwnServices()
			return client.CoreV1().Services(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = notOwnServices()
			return client.CoreV1().Services(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	event := func(old, cur any) {
		if claims(old) || claims(cur) {
			s.notify(&s.onNames)
		}
		if s.isExported(cur) {
			s.notify(&s.onExports)
		}
	}
	return newInformer(r, "Services of every namespace", lw, cache.InformerOptions{
		ObjectType: &corev1.Service{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { event(nil, obj) },
			UpdateFunc: func(old, cur any) {
				if !sameForReaders(old, cur) {
					event(old, cur)
				}
			},
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				event(nil, obj)
			},
		},
		Transform: serviceForReaders,
	})
}

// notOwnServices selects every Service but the controller's own derived
// Services, which neither reader reads (an export names a tenant's
// Service, and a derived Service claims no name) and which the
// controller's own-object informer caches already (own.go): at 1,000
// ClusterSetIP imports in five members they were 4,500 Services cached
// twice. A tenant that puts the label on a Service of its own only
// hides it from its own exports and names.
func notOwnServices() string {
	return contract.LabelAppManagedBy + "!=" + contract.ManagedByValue
}

// sameForReaders: a and b, cached Services, differ in nothing
// serviceForReaders keeps but their resource version, which every write
// of the Service moves.
func sameForReaders(a, b any) bool {
	o, ok := a.(*corev1.Service)
	n, nok := b.(*corev1.Service)
	if !ok || !nok {
		return false
	}
	oc, nc := *o, *n
	oc.ResourceVersion, nc.ResourceVersion = "", ""
	return equality.Semantic.DeepEqual(&oc, &nc)
}

// serviceForReaders keeps of a Service what its two readers read: its
// identity, for names the type, the fqdn annotation and the load-balancer
// ingress addresses (serviceForNames), for exports what the aggregator
// reads (serviceForCache). No labels, other annotations, selector or
// managedFields: a cluster may hold thousands of Services, most of them
// read by neither. Idempotent.
func serviceForReaders(obj any) (any, error) {
	kept, err := serviceForCache(obj)
	if err != nil {
		return kept, err
	}
	named, err := serviceForNames(obj)
	out, ok := kept.(*corev1.Service)
	n, nok := named.(*corev1.Service)
	if err != nil || !ok || !nok {
		return kept, err
	}
	out.Annotations, out.Status = n.Annotations, n.Status
	internMeta(&out.ObjectMeta)
	return out, nil
}
