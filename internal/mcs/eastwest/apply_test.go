package eastwest

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

// writes are the verbs and resources of the write actions of c.
func writes(c *gatewayfake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if v := a.GetVerb(); v == "create" || v == "update" || v == "delete" {
			out = append(out, v+" "+a.GetResource().Resource+" "+a.(interface{ GetNamespace() string }).GetNamespace())
		}
	}
	c.ClearActions()
	return out
}

// TestApply: an export's objects are created, left alone when they hold
// what is wanted, updated when not, and deleted when the export no
// longer crosses networks; a tenant's object is never written, also
// under the name of one of the controller's.
func TestApply(t *testing.T) {
	ctx := context.Background()
	k := aggregate.Key{Namespace: "shop", Name: "cart"}
	ps := []aggregate.Port{{Name: "web", Protocol: "TCP", Port: 8080, AppProtocol: "http"}, {Name: "db", Protocol: "TCP", Port: 5432}}
	tenantRoute := &gatewayv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "mine", Labels: map[string]string{"team": "shop"}}}
	c := gatewayfake.NewClientset(tenantRoute)
	gw := c.GatewayV1()

	want := Desired(testConfig, k, ps, map[string]int32{"tcp-5432": 31000})
	if err := Apply(ctx, gw, k, &want); err != nil {
		t.Fatal(err)
	}
	if got := writes(c); !slices.Equal(got, []string{"create listenersets shop", "create httproutes shop", "create tcproutes shop"}) {
		t.Errorf("first apply: %q", got)
	}
	if err := Apply(ctx, gw, k, &want); err != nil {
		t.Fatal(err)
	}
	if got := writes(c); len(got) != 0 {
		t.Errorf("same again: %q, want no write", got)
	}
	moved := Desired(testConfig, k, ps, map[string]int32{"tcp-5432": 31001})
	if err := Apply(ctx, gw, k, &moved); err != nil {
		t.Fatal(err)
	}
	if got := writes(c); !slices.Equal(got, []string{"update listenersets shop"}) {
		t.Errorf("a listener port changed: %q", got)
	}
	if err := Apply(ctx, gw, k, nil); err != nil {
		t.Fatal(err)
	}
	if got := writes(c); !slices.Equal(got, []string{"delete httproutes shop", "delete tcproutes shop", "delete listenersets shop"}) {
		t.Errorf("removed: %q", got)
	}
	if _, err := gw.TCPRoutes("shop").Get(ctx, "mine", metav1.GetOptions{}); err != nil {
		t.Errorf("the tenant's route: %v", err)
	}

	// A tenant's ListenerSet holding the name: not written, the export's
	// write says so, and its routes are not written (nothing to attach).
	squat := &gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: SetName("cart")}}
	c2 := gatewayfake.NewClientset(squat)
	err := Apply(ctx, c2.GatewayV1(), k, &want)
	if !errors.Is(err, kubeclient.ErrNotOurs) {
		t.Errorf("tenant's ListenerSet under the name: %v, want ErrNotOurs", err)
	}
	if got := writes(c2); !slices.Equal(got, []string{"create listenersets shop"}) {
		t.Errorf("with the name taken: %q, want only the refused create", got)
	}
}

// TestHeld: the exports whose east-west objects a member holds are found
// in every namespace, by a route too once its ListenerSet is gone, and a
// tenant's objects, also under a name of the controller's, are not.
func TestHeld(t *testing.T) {
	ctx := context.Background()
	cart := aggregate.Key{Namespace: "shop", Name: "cart"}
	db := aggregate.Key{Namespace: "data", Name: "db"}
	ps := []aggregate.Port{{Name: "web", Protocol: "TCP", Port: 8080, AppProtocol: "http"}, {Name: "db", Protocol: "TCP", Port: 5432}}
	squat := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: SetName("x") + "-http-80"}}
	c := gatewayfake.NewClientset(squat)
	gw := c.GatewayV1()
	for _, k := range []aggregate.Key{cart, db} {
		want := Desired(testConfig, k, ps, map[string]int32{"tcp-5432": 31000})
		if err := Apply(ctx, gw, k, &want); err != nil {
			t.Fatal(err)
		}
	}
	if err := gw.ListenerSets("data").Delete(ctx, SetName("db"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := Held(ctx, gw)
	if err != nil {
		t.Fatal(err)
	}
	if want := []aggregate.Key{db, cart}; !slices.Equal(got, want) {
		t.Errorf("held %v, want %v", got, want)
	}
	for _, k := range got {
		if err := Apply(ctx, gw, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Held(ctx, gw); err != nil || len(got) != 0 {
		t.Errorf("after removal: %v %v, want none", got, err)
	}
}
