package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// A write of the controller stands in for the object its informer holds
// until the informer shows that write or a newer one; a deletion hides
// the object until the informer deletes it too.
func TestOwnWrittenUntilShown(t *testing.T) {
	o := newOwnWatch()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	o.stores[ownServices] = &objectWatch{store: store}
	svc := func(name, rv, ip string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv, Labels: ours(name)},
			Spec: corev1.ServiceSpec{ClusterIP: ip}}
	}
	held := func() map[string]string {
		out := map[string]string{}
		for _, s := range list[*corev1.Service](o, ownServices) {
			out[s.Name] = s.ResourceVersion + "/" + s.Spec.ClusterIP
		}
		return out
	}
	check := func(step string, want map[string]string) {
		t.Helper()
		got := held()
		if len(got) != len(want) {
			t.Errorf("%s: held %v, want %v", step, got, want)
			return
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: held %v, want %v", step, got, want)
				return
			}
		}
	}
	_ = store.Add(svc("a", "5", ""))
	_ = store.Add(svc("b", "6", "10.0.0.2"))
	check("the informer's", map[string]string{"a": "5/", "b": "6/10.0.0.2"})

	o.seen(apply.KindService, "shop", "a", svc("a", "9", "10.0.0.1"))
	o.seen(apply.KindService, "shop", "b", nil)
	o.seen(apply.KindService, "shop", "c", svc("c", "10", "10.0.0.3"))
	check("written, not shown", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})

	// An older event of a (the watch lags) does not retire the write.
	_ = store.Update(svc("a", "7", ""))
	o.shown(ownServices, svc("a", "7", ""), false)
	check("an older event", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})

	// b's update before the deletion does not bring it back.
	o.shown(ownServices, svc("b", "8", "10.0.0.2"), false)
	check("an update before the deletion", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})

	for _, s := range []*corev1.Service{svc("a", "9", "10.0.0.1"), svc("c", "10", "10.0.0.3")} {
		_ = store.Update(s)
		o.shown(ownServices, s, false)
	}
	_ = store.Delete(svc("b", "8", ""))
	o.shown(ownServices, svc("b", "8", ""), true)
	if len(o.written) != 0 {
		t.Errorf("%d writes kept after the watch showed them all", len(o.written))
	}
	check("shown", map[string]string{"a": "9/10.0.0.1", "c": "10/10.0.0.3"})
}

// ours are the labels of the controller's object of the import name.
func ours(name string) map[string]string {
	return map[string]string{objects.LabelManagedBy: objects.ManagedByValue, objects.LabelServiceName: name}
}

// What the member's API server sends a watch on the controller's objects
// is checked against the watch's selector again: an object without the
// controller's labels is never read as one of its own, so no write
// deletes it.
func TestOwnReadsOnlyWhatItsSelectorSelects(t *testing.T) {
	o := newOwnWatch()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	o.stores[ownServices] = &objectWatch{store: store}
	_ = store.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "derived", Labels: ours("web")}})
	_ = store.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "users", Labels: map[string]string{"app": "web"}}})
	var got []string
	for _, s := range list[*corev1.Service](o, ownServices) {
		got = append(got, s.Name)
	}
	if len(got) != 1 || got[0] != "derived" {
		t.Errorf("read %v as the controller's Services; want only derived", got)
	}
}
