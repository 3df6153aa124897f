package clusterset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

func exportAt(name, uid, rv string) *mcsv1beta1.ServiceExport {
	return &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

// A status write's export stands in for the informer's older copy until
// the informer shows that version or a newer one; then, or once the
// export is gone or made again, it is forgotten.
func TestExportsWrittenOver(t *testing.T) {
	w := &exportsWritten{byKey: map[types.NamespacedName]*mcsv1beta1.ServiceExport{}}
	for _, e := range []*mcsv1beta1.ServiceExport{exportAt("web", "u1", "10"), exportAt("api", "u2", "10"), exportAt("db", "u3", "10"), exportAt("old", "u4", "10")} {
		w.byKey[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] = e
	}
	cached := []*mcsv1beta1.ServiceExport{
		exportAt("web", "u1", "7"),  // the informer lags: the write's copy
		exportAt("api", "u2", "12"), // the informer has a newer one
		exportAt("db", "u9", "5"),   // made again: another object
		exportAt("cart", "u5", "3"), // never written
	}
	got := w.over(cached)
	want := map[string]string{"web": "10", "api": "12", "db": "5", "cart": "3"}
	for _, e := range got {
		if want[e.Name] != e.ResourceVersion {
			t.Errorf("export %s at resourceVersion %s, want %s", e.Name, e.ResourceVersion, want[e.Name])
		}
	}
	if len(w.byKey) != 1 || w.byKey[types.NamespacedName{Namespace: "shop", Name: "web"}] == nil {
		t.Errorf("kept %v: want only web, which the informer has not shown yet", w.byKey)
	}
}
