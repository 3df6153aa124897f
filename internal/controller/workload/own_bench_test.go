package workload

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
)

// What a write of a member reads of the controller's objects there, at
// 5,000 imports (a ServiceImport, a derived Service and a slice each):
// the lists, and the digest of every import. "kept" is Own (the index
// of the controller's objects, digests kept as events come); "summed" is
// the same read done as before: every cached object's labels checked,
// every object digested. The figures are in docs/benchmarks.md.
func BenchmarkOwnRead(b *testing.B) {
	const imports = 5000
	o := newOwnWatch(mcsKinds())
	for _, s := range []int{kindImports, kindServices, kindSlices} {
		o.stores[s] = &objectWatch{store: &informerStore{o: o, store: s, Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}}
	}
	keys := make([]aggregate.Key, 0, imports)
	for i := range imports {
		ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("svc%d", i)
		keys = append(keys, aggregate.Key{Namespace: ns, Name: name})
		meta := func(n string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: ns, Name: n, UID: types.UID(fmt.Sprintf("%08d-0000-0000-0000-000000000000", i)),
				ResourceVersion: fmt.Sprint(100000 + i), Labels: ours(name)}
		}
		_ = o.stores[kindImports].store.Add(&mcsv1beta1.ServiceImport{ObjectMeta: meta(name)})
		_ = o.stores[kindServices].store.Add(&corev1.Service{ObjectMeta: meta("derived-" + name)})
		_ = o.stores[kindSlices].store.Add(&discoveryv1.EndpointSlice{ObjectMeta: meta(name + "-v4")})
	}
	// A few writes the watch has not shown yet, as while an export is
	// added.
	for i := range 3 {
		ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("svc%d", i)
		o.seen(kindServices, ns, "derived-"+name, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "derived-" + name,
			ResourceVersion: "200000", Labels: ours(name)}})
	}
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			pending := o.pending()
			_ = list[*mcsv1beta1.ServiceImport](o, kindImports, pending)
			_ = list[*corev1.Service](o, kindServices, pending)
			_ = list[*discoveryv1.EndpointSlice](o, kindSlices, pending)
			digest := o.digest(pending)
			for _, k := range keys {
				_ = digest(k)
			}
		}
	})
	b.Run("summed", func(b *testing.B) {
		for b.Loop() {
			sums := map[aggregate.Key]uint64{}
			for _, s := range []int{kindImports, kindServices, kindSlices} {
				for _, obj := range o.stores[s].store.List() {
					m := obj.(metav1.Object) //nolint:forcetypeassert // objects only
					if !o.selectors[s].Matches(labels.Set(m.GetLabels())) {
						continue
					}
					k, d, _ := apply.HeldDigest(m)
					sums[k] += d
				}
			}
			for _, k := range keys {
				_ = sums[k]
			}
		}
	})
}
