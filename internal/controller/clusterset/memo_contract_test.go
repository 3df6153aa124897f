package clusterset

import (
	"context"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
)

// The contract slices of an import whose inputs did not change and whose
// held slices are those found equal before are neither built nor
// written; one someone changed in the member is built and written back.
func TestContractSlicesOfASettledImportAreNotBuilt(t *testing.T) {
	ctx := context.Background()
	const ns = "xcc-dns"
	c := &Reconciler{cfg: Config{SliceNamespace: ns, ClusterSetZone: "clusterset.local"}}
	agg, err := aggregate.Aggregate([]aggregate.Export{{Cluster: "a", Namespace: "shop", Name: "web", Created: time.Unix(100, 0),
		Service: &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.11", Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 80}}}}})
	if err != nil {
		t.Fatal(err)
	}
	k := aggregate.Key{Namespace: "shop", Name: "web"}
	objs := objects.Objects{Digests: map[aggregate.Key]uint64{k: 1}}
	ips := map[aggregate.Key][]string{k: {"10.97.0.5"}}
	kube := fake.NewClientset()
	client := kube.DiscoveryV1().EndpointSlices(ns)
	memo := newDNSMemo()
	// held is the member's slices as an informer holds them: an object
	// is replaced when it changes, else kept.
	cache := map[string]*discoveryv1.EndpointSlice{}
	held := func() []*discoveryv1.EndpointSlice {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []*discoveryv1.EndpointSlice
		for i := range list.Items {
			s := &list.Items[i]
			if old := cache[s.Name]; old != nil && equality.Semantic.DeepEqual(old, s) {
				s = old
			}
			cache[s.Name] = s
			out = append(out, s)
		}
		return out
	}
	// write writes once from what the member holds now; it returns how
	// many slices were built and how many requests were sent.
	write := func() (built, sent int) {
		before := len(kube.Actions())
		h := held()
		want := c.clusterSetSlices(memo, objs, agg, nil, nil, ips, h, func(string) bool { return true })
		if err := c.writeClusterSetSlices(ctx, "ns/b", client, memo, h, want); err != nil {
			t.Fatal(err)
		}
		return len(want.slices), len(kube.Actions()) - before - 1 // the list
	}
	if built, sent := write(); built != 1 || sent != 1 {
		t.Fatalf("first write built %d and sent %d; want one slice created", built, sent)
	}
	// The informer's copy is a new object: compared once, then known.
	if built, sent := write(); built != 1 || sent != 0 {
		t.Errorf("second write built %d and sent %d; want one compared, none sent", built, sent)
	}
	if built, sent := write(); built != 0 || sent != 0 {
		t.Errorf("settled: built %d and sent %d; want none", built, sent)
	}
	// Someone edits the slice in the member.
	s := held()[0].DeepCopy()
	s.Endpoints[0].Addresses = []string{"10.97.0.66"}
	if _, err := client.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if built, sent := write(); built != 1 || sent != 1 {
		t.Errorf("after someone's edit: built %d and sent %d; want it written back", built, sent)
	}
	if got := held()[0].Endpoints[0].Addresses[0]; got != "10.97.0.5" {
		t.Errorf("the member's slice answers %s; want 10.97.0.5", got)
	}
}

// A slice in the slice namespace that is not one of the controller's
// clusterset slices is never deleted, even when the member's API server
// hands it over as one (a fake or hostile server that ignores the label
// selector).
func TestContractWriteKeepsOthersSlices(t *testing.T) {
	ctx := context.Background()
	const ns = "xcc-dns"
	c := &Reconciler{cfg: Config{SliceNamespace: ns, ClusterSetZone: "clusterset.local"}}
	gateway := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gateway-of-a-gatewaydns",
		Labels: map[string]string{"endpointslice.kubernetes.io/managed-by": "xcc-dns-controller", "xcc-dns.io/record": "gateway"}},
		AddressType: discoveryv1.AddressTypeIPv4}
	users := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-elses"}, AddressType: discoveryv1.AddressTypeIPv4}
	kube := fake.NewClientset(gateway, users)
	client := kube.DiscoveryV1().EndpointSlices(ns)
	if err := c.writeClusterSetSlices(ctx, "ns/b", client, newDNSMemo(), []*discoveryv1.EndpointSlice{gateway, users}, contractWant{}); err != nil {
		t.Fatal(err)
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("%d slices left of 2: the write deleted slices it did not write", len(list.Items))
	}
}
