package controller

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

// One address claimed by two clusters is found whichever GatewayDNS, in
// whichever namespace, publishes each; the other GatewayDNS is named as
// affected whenever the claim appears or goes, so it re-syncs its status.
func TestAddressClaims(t *testing.T) {
	a := newAddressClaims()
	steps := []struct {
		name     string
		gd       string
		claims   claims // nil: the GatewayDNS is gone
		shared   map[string]map[string][]string
		affected []string
	}{
		{"first GatewayDNS alone", "team-a/gw", claims{"team-a/c1": {"192.0.2.10", "192.0.2.11"}},
			map[string]map[string][]string{}, nil},
		{"a cluster of another namespace claims one of its addresses", "team-b/gw", claims{"team-b/c9": {"192.0.2.11"}},
			map[string]map[string][]string{"team-b/c9": {"192.0.2.11": {"team-a/c1"}}}, []string{"team-a/gw"}},
		{"the first syncs again and sees the conflict; nothing else changed", "team-a/gw", claims{"team-a/c1": {"192.0.2.10", "192.0.2.11"}},
			map[string]map[string][]string{"team-a/c1": {"192.0.2.11": {"team-b/c9"}}}, nil},
		{"one cluster's gateway and api on one address is no conflict", "team-a/gw2", claims{"team-a/c2": {"198.51.100.1"}},
			map[string]map[string][]string{}, nil},
		// The other GatewayDNS re-syncs (its claim's holders changed) and finds no conflict either.
		{"the same cluster under two GatewayDNS (a name Conflict) is no address conflict", "team-a/gw3", claims{"team-a/c2": {"198.51.100.1"}},
			map[string]map[string][]string{}, []string{"team-a/gw2"}},
		{"the claim moves away", "team-b/gw", claims{"team-b/c9": {"192.0.2.99"}},
			map[string]map[string][]string{}, []string{"team-a/gw"}},
		{"a GatewayDNS that goes releases its claims", "team-a/gw", nil,
			map[string]map[string][]string{}, nil},
	}
	for _, s := range steps {
		shared, affected := a.set(s.gd, s.claims)
		if !maps.EqualFunc(shared, s.shared, func(x, y map[string][]string) bool { return maps.EqualFunc(x, y, slices.Equal) }) {
			t.Errorf("%s: shared %v, want %v", s.name, shared, s.shared)
		}
		if !slices.Equal(affected, s.affected) {
			t.Errorf("%s: affected %v, want %v", s.name, affected, s.affected)
		}
	}
	if _, ok := a.byGD["team-a/gw"]; ok {
		t.Error("claims of a gone GatewayDNS kept")
	}
}

func TestClusterClaims(t *testing.T) {
	d := desiredState{
		Clusters: []v1alpha1.ClusterStatus{
			{Name: "c1", Addresses: []string{"192.0.2.11", "192.0.2.10", "lb.example.com"}, APIAddresses: []string{"192.0.2.10"}},
			{Name: "c2", Addresses: []string{"lb2.example.com"}},
			{Name: "kept"},
		},
		Keep: map[string]bool{"kept": true},
	}
	got := clusterClaims("ns", d, claims{"ns/kept": {"192.0.2.7"}, "ns/c1": {"10.0.0.1"}})
	want := claims{"ns/c1": {"192.0.2.10", "192.0.2.11"}, "ns/kept": {"192.0.2.7"}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("claims %v, want %v (hostnames are no claim; a kept cluster keeps its last)", got, want)
	}
}

func TestMarkAddressConflicts(t *testing.T) {
	in := []v1alpha1.ClusterStatus{
		{Name: "c1", Reason: ReasonPublished, Ready: true},
		{Name: "c2", Reason: ReasonInvalidServiceRef, Message: "spec.service: bad"},
		{Name: "c3", Reason: ReasonPublished, Ready: true},
	}
	shared := map[string]map[string][]string{
		"ns/c1": {"192.0.2.10": {"other/x"}},
		"ns/c2": {"192.0.2.20": {"ns/c9", "other/y"}},
	}
	got := markAddressConflicts(in, "ns", shared)
	want := []v1alpha1.ClusterStatus{
		{Name: "c1", Reason: ReasonAddressConflict, Ready: true,
			Message: "address conflict: 192.0.2.10 also claimed by other/x; no PTR is published for a shared address"},
		{Name: "c2", Reason: ReasonInvalidServiceRef,
			Message: "spec.service: bad; address conflict: 192.0.2.20 also claimed by ns/c9, other/y; no PTR is published for a shared address"},
		{Name: "c3", Reason: ReasonPublished, Ready: true},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if in[0].Reason != ReasonPublished {
		t.Error("the input was changed")
	}
}

// Two GatewayDNS whose clusters report one load-balancer address: both
// clusters say AddressConflict and still publish; when one moves away,
// the other GatewayDNS (whose own inputs did not change) is synced again
// and says Published.
func TestControllerAddressConflictAcrossGatewayDNS(t *testing.T) {
	gdA, gdB := testGatewayDNS("gw-a"), testGatewayDNS("gw-b")
	gdA.Spec.ClusterSelector.MatchLabels = map[string]string{"team": "a"}
	gdB.Spec.ClusterSelector.MatchLabels = map[string]string{"team": "b"}
	workloadB := fakeWorkload(true, "10.0.0.1")
	e := newTestEnv(t,
		[]runtime.Object{kubeconfigSecret("cluster-a", "cluster-a"), kubeconfigSecret("cluster-b", "cluster-b")},
		[]runtime.Object{capiCluster("cluster-a", map[string]string{"team": "a"}, ""), capiCluster("cluster-b", map[string]string{"team": "b"}, ""),
			gatewayDNSObject(t, gdA), gatewayDNSObject(t, gdB)},
		map[string]*fake.Clientset{"cluster-a": fakeWorkload(true, "10.0.0.1"), "cluster-b": workloadB})

	e.eventually([]string{gwA + " IPv4 10.0.0.1", gwB + " IPv4 10.0.0.1"}, "cluster-a", "cluster-b")
	for gd, cluster := range map[string]string{"gw-a": "cluster-a", "gw-b": "cluster-b"} {
		st := e.eventuallyStatus(gd, func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == cluster+"="+ReasonAddressConflict })
		if c := st.Clusters[0]; !c.Ready || !strings.Contains(c.Message, "10.0.0.1 also claimed by dev-team/") {
			t.Errorf("%s: %+v, want Ready and the shared address named", gd, c)
		}
	}

	// Let the syncs that the status writes set off run out, so that only
	// the Service change (which concerns gw-b alone) can sync gw-a again.
	time.Sleep(300 * time.Millisecond)
	svc := lbService(ips("10.0.0.2")...)
	if _, err := workloadB.CoreV1().Services(svc.Namespace).UpdateStatus(e.ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventuallyStatus("gw-b", func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == "cluster-b="+ReasonPublished })
	e.eventuallyStatus("gw-a", func(s v1alpha1.GatewayDNSStatus) bool { return reasonsOf(s) == "cluster-a="+ReasonPublished })
}
