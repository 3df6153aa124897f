package workload

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// interned is s as the one copy of its value the process keeps while
// any object refers to it (package unique: nothing is kept for values no
// object holds any more, so a tenant's many distinct values cost what
// they did before).
func interned(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internMeta makes the strings of m that repeat from one cached object to
// the next share one copy: namespaces, label and annotation keys and
// values, owner references' kinds and names. A member's objects repeat
// them by the thousand (every object of one import carries its name in a
// label, every object of the controller the same keys). Names, UIDs and
// resourceVersions are unique per object and left alone. It changes no
// value, so a transformed object compares and writes as before.
func internMeta(m *metav1.ObjectMeta) {
	m.Namespace = interned(m.Namespace)
	internMap(m.Labels)
	internMap(m.Annotations)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = interned(r.APIVersion), interned(r.Kind), interned(r.Name)
	}
	for i := range m.Finalizers {
		m.Finalizers[i] = interned(m.Finalizers[i])
	}
}

// internMap interns the keys and values of m in place: assigning an equal
// string key replaces the key the map holds.
func internMap(m map[string]string) {
	for k, v := range m {
		m[interned(k)] = interned(v)
	}
}
