package gatewaydns

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// everyKind is every kind of slice a GatewayDNS of loadBalancer type writes.
var everyKind = []contract.Kind{contract.KindGateway, contract.KindAPI, contract.KindGateways, contract.KindSelf}

// gatewayDNS reads the GatewayDNS name of dev-team from the management cluster.
func (e *testEnv) gatewayDNS(name string) *v1alpha1.GatewayDNS {
	e.t.Helper()
	u, err := e.dyn.Resource(v1alpha1.GatewayDNSResource).Namespace("dev-team").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	gd, err := toGatewayDNS(u)
	if err != nil {
		e.t.Fatal(err)
	}
	return gd
}

// markDeleting sets the deletionTimestamp of the object name of resource
// in dev-team, as the API server does on delete while a finalizer holds
// it (the fake deletes at once instead).
func (e *testEnv) markDeleting(name string, clusters bool) {
	e.t.Helper()
	res := v1alpha1.GatewayDNSResource
	if clusters {
		res = clusterGVR
	}
	u, err := e.dyn.Resource(res).Namespace("dev-team").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	now := metav1.Now()
	u.SetDeletionTimestamp(&now)
	if _, err := e.dyn.Resource(res).Namespace("dev-team").Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// eventuallyFinalizer waits until the GatewayDNS name holds the finalizer
// (want) or not.
func (e *testEnv) eventuallyFinalizer(name string, want bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return hasFinalizer(e.gatewayDNS(name)) == want, nil
	})
	if err != nil {
		e.t.Fatalf("GatewayDNS %s: finalizer held %v, want %v", name, !want, want)
	}
}

// deleteWithCHeld marks gw deleting while cluster-c's API server holds
// every call, and checks that cluster-a and cluster-b are cleaned while
// the first call to cluster-c is still held, and that status and an Event
// say cluster-c is still being cleaned and the finalizer stays.
func deleteWithCHeld(t *testing.T, e *testEnv, g *gate) {
	g.close()
	calls, _, _ := g.stats()
	e.markDeleting("gw", false)
	e.eventuallyOf(nil, everyKind, "cluster-a", "cluster-b")
	// Cleaned one after the other, the healthy targets would wait for
	// cluster-c's call to time out (10 s) whenever it comes first.
	if now, held, _ := g.stats(); held != 1 || now-calls != 1 {
		t.Errorf("cluster-a and cluster-b cleaned with %d calls to cluster-c made and %d held; want the first one still held", now-calls, held)
	}
	st := e.eventuallyStatus("gw", func(s v1alpha1.GatewayDNSStatus) bool {
		c := findCondition(s, v1alpha1.ConditionReady)
		return c != nil && c.Reason == string(ReasonRemoving)
	})
	if msg := readyReason(st); !strings.Contains(msg, "cluster-c") || strings.Contains(msg, "cluster-a") || strings.Contains(msg, "cluster-b") {
		t.Errorf("Ready says %q; want cluster-c alone named", msg)
	}
	if !e.sawEvent("Normal", string(ReasonRemoving), "cluster-c") {
		t.Errorf("no Event naming cluster-c as still being cleaned")
	}
	if !hasFinalizer(e.gatewayDNS("gw")) {
		t.Fatal("finalizer removed while cluster-c still holds the slices")
	}
	if got := e.slicesOf("cluster-c", everyKind...); len(got) == 0 {
		t.Errorf("cluster-c lost its slices while held")
	}
}

// Deleting a GatewayDNS cleans every answering target at once, whatever
// one that does not answer does; the finalizer stays until that one is
// clean too.
func TestControllerDeletionDoesNotWaitForHeldTarget(t *testing.T) {
	g := newGate()
	e := threeTargets(t, g)
	e.eventuallyFinalizer("gw", true)
	deleteWithCHeld(t, e, g)

	// Still held a while later (a sync of its own in between): the
	// finalizer stays.
	e.rec.queue.Add("dev-team/gw")
	time.Sleep(200 * time.Millisecond)
	if !hasFinalizer(e.gatewayDNS("gw")) {
		t.Fatal("finalizer removed while cluster-c still holds the slices")
	}

	g.release()
	e.eventuallyOf(nil, everyKind, "cluster-c")
	e.eventuallyFinalizer("gw", false)
}

// A target that does not answer is released when its Cluster is being
// deleted: the finalizer goes without it, and its held call is cancelled.
func TestControllerDeletionReleasesDeletedTarget(t *testing.T) {
	g := newGate()
	e := threeTargets(t, g)
	e.eventuallyFinalizer("gw", true)
	deleteWithCHeld(t, e, g)

	e.markDeleting("cluster-c", true)
	e.eventuallyFinalizer("gw", false)
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, held, _ := g.stats()
		return held == 0, nil
	})
	if err != nil {
		t.Errorf("the call to cluster-c is still held after the GatewayDNS let go of it")
	}
	if got := e.slicesOf("cluster-c", everyKind...); !slices.Contains(got, gwC+" IPv4 10.0.0.3") {
		t.Errorf("cluster-c's slices changed while held: %q", got)
	}
}
