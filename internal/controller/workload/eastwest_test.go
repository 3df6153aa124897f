package workload

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// gatewayMember is a member's client with the Gateway API.
type gatewayMember struct {
	*fake.Clientset
	gw *gatewayfake.Clientset
}

func (c gatewayMember) GatewayV1() gatewayclient.GatewayV1Interface { return c.gw.GatewayV1() }

// TestWatchEastWest: the operator's Gateway (that one only) and every
// ListenerSet of the member are cached once watched, their changes sync
// the set, and they stop when the set no longer keeps them.
func TestWatchEastWest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ref := GatewayRef{Namespace: "infra", Name: "east-west"}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "east-west"}}
	other := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "north-south"}}
	set := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "xcc-cart",
		Annotations: map[string]string{"big": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	// Filed under v1 by hand: the fake's tracker files a Gateway given to
	// it under the first version of the kind its scheme names, another.
	client := gatewayMember{Clientset: fake.NewClientset(), gw: gatewayfake.NewSimpleClientset(set)} //nolint:staticcheck // NewClientset's tracker does not know Gateway at v1
	for _, g := range []*gatewayv1.Gateway{gw, other} {
		if err := client.gw.Tracker().Create(schema.GroupVersionResource{Group: gatewayv1.GroupVersion.Group, Version: gatewayv1.GroupVersion.Version, Resource: "gateways"}, g, g.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	events := make(chan struct{}, 100)
	m := NewSet(Config{NewClient: func([]byte) (Client, error) { return client, nil }, SliceNamespace: "xcc-dns",
		OnNamespace: func(string) {}, OnService: func(users []string) {
			if reflect.DeepEqual(users, []string{"set"}) {
				events <- struct{}{}
			}
		}, Gauge: func(int) {}})
	m.Start(ctx)
	acc := m.Get("dev-team", "cluster-a", testfixture.KubeconfigSecret("cluster-a", "k"), "set")
	if _, _, synced := m.EastWest(acc.Cluster); synced {
		t.Fatal("synced before WatchEastWest")
	}
	m.WatchEastWest(acc.Cluster, "set", ref)
	read := func(want func(*gatewayv1.Gateway, []*gatewayv1.ListenerSet) bool) (*gatewayv1.Gateway, []*gatewayv1.ListenerSet) {
		t.Helper()
		var g *gatewayv1.Gateway
		var sets []*gatewayv1.ListenerSet
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			var synced bool
			g, sets, synced = m.EastWest(acc.Cluster)
			return synced && want(g, sets), nil
		})
		if err != nil {
			t.Fatalf("never read as wanted: gateway %v, sets %d", g, len(sets))
		}
		return g, sets
	}
	g, sets := read(func(g *gatewayv1.Gateway, s []*gatewayv1.ListenerSet) bool { return g != nil && len(s) == 1 })
	if g.Name != "east-west" || sets[0].Annotations != nil || sets[0].ManagedFields != nil {
		t.Errorf("gateway %s, set annotations %v managed fields %v: want the named Gateway, sets cut", g.Name, sets[0].Annotations, sets[0].ManagedFields)
	}
	for len(events) > 0 {
		<-events
	}
	gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: "False", Reason: "x", LastTransitionTime: metav1.Now()}}
	if _, err := client.gw.GatewayV1().Gateways("infra").UpdateStatus(ctx, gw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-events:
	case <-time.After(5 * time.Second):
		t.Fatal("a change of the Gateway synced no set")
	}
	read(func(g *gatewayv1.Gateway, _ []*gatewayv1.ListenerSet) bool {
		return g != nil && len(g.Status.Conditions) == 1
	})

	m.Release("set", map[string]map[string]bool{acc.Cluster.Key(): {}})
	if _, _, synced := m.EastWest(acc.Cluster); synced {
		t.Error("still read after the set let it go")
	}
}
