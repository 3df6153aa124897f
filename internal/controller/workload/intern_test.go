package workload

import (
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Two objects decoded apart hold equal strings in two copies; once
// cached, the strings that repeat are one copy, and no value changes.
func TestCachedObjectsShareRepeatedStrings(t *testing.T) {
	// strings.Clone stands for a decoder: every string its own copy.
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: strings.Clone("tenant-a"),
			Labels:          map[string]string{strings.Clone("xcc-dns.io/source-cluster"): strings.Clone("cluster-a")},
			Annotations:     map[string]string{strings.Clone("note"): strings.Clone("kept")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: strings.Clone("v1"), Kind: strings.Clone("Service"), Name: strings.Clone("web")}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	}
	transforms := map[string]func(any) (any, error){
		"own":       ownForCache,
		"endpoints": endpointsForCache,
	}
	for name, transform := range transforms {
		t.Run(name, func(t *testing.T) {
			var got []*metav1.ObjectMeta
			for _, n := range []string{"one", "two"} {
				obj, err := transform(&discoveryv1.EndpointSlice{ObjectMeta: meta(n)})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, &obj.(*discoveryv1.EndpointSlice).ObjectMeta) //nolint:forcetypeassert // a slice in, a slice out
			}
			a, b := got[0], got[1]
			if a.Namespace != "tenant-a" || unsafe.StringData(a.Namespace) != unsafe.StringData(b.Namespace) {
				t.Errorf("namespace %q: not one copy", a.Namespace)
			}
			for k, v := range a.Labels {
				if b.Labels[k] != v || v != "cluster-a" {
					t.Fatalf("labels changed: %v, %v", a.Labels, b.Labels)
				}
				for bk, bv := range b.Labels {
					if unsafe.StringData(k) != unsafe.StringData(bk) || unsafe.StringData(v) != unsafe.StringData(bv) {
						t.Errorf("label %s=%s: not one copy", k, v)
					}
				}
			}
			if name == "own" {
				if len(a.ManagedFields) != 0 {
					t.Errorf("managed fields kept: %v", a.ManagedFields)
				}
				if a.Annotations["note"] != "kept" || a.OwnerReferences[0].Name != "web" {
					t.Errorf("own object changed: %+v", a)
				}
				if unsafe.StringData(a.OwnerReferences[0].Kind) != unsafe.StringData(b.OwnerReferences[0].Kind) {
					t.Error("owner reference kind: not one copy")
				}
			}
		})
	}
	// A transformed Service keeps its identity.
	obj, err := serviceForReaders(&corev1.Service{ObjectMeta: meta("web")})
	if err != nil {
		t.Fatal(err)
	}
	if s := obj.(*corev1.Service); s.Name != "web" || s.Namespace != "tenant-a" { //nolint:forcetypeassert // a Service in, a Service out
		t.Errorf("Service changed: %s/%s", s.Namespace, s.Name)
	}
}
