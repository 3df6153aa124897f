package apply

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// What a member holds of 1,000 imports: each a ServiceImport, a derived
// Service and a slice. The figure is in docs/benchmarks.md.
func BenchmarkHeldDigests(b *testing.B) {
	var e Existing
	for i := range 1000 {
		meta := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%10), Name: name, UID: types.UID(fmt.Sprintf("%08d-0000-0000-0000-000000000000", i)),
				ResourceVersion: fmt.Sprint(100000 + i), Labels: map[string]string{objects.LabelServiceName: fmt.Sprintf("svc%d", i)}}
		}
		e.Imports = append(e.Imports, &mcsv1beta1.ServiceImport{ObjectMeta: meta(fmt.Sprintf("svc%d", i))})
		e.Services = append(e.Services, &corev1.Service{ObjectMeta: meta(objects.DerivedServiceName("ns", fmt.Sprintf("svc%d", i)))})
		e.Slices = append(e.Slices, &discoveryv1.EndpointSlice{ObjectMeta: meta(fmt.Sprintf("svc%d-a-v4", i))})
	}
	for b.Loop() {
		heldDigests(e)
	}
}
