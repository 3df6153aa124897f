package serve

import (
	"context"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

const (
	gwA  = "*.gateway.cluster-a.dev-team.clusters.xcc.test"
	apiA = "api.cluster-a.dev-team.clusters.xcc.test"
	gwB  = "*.gateway.cluster-b.dev-team.clusters.xcc.test"
	apiB = "api.cluster-b.dev-team.clusters.xcc.test"
)

// ptrs returns the PTR records of a record set as reverse key -> target.
func ptrs(set skydnsrecord.Set) map[string]string {
	out := map[string]string{}
	for k, r := range set {
		if isReverseOwner(r.Owner) {
			out[k] = r.Host
		}
	}
	return out
}

func TestWithReverseRecords(t *testing.T) {
	const (
		// The etcd plugin reads a PTR at the key of the reverse name
		// 10.2.0.192.in-addr.arpa: its labels reversed, the address in order.
		ptr10 = "/skydns/arpa/in-addr/192/0/2/10"
		ptr6  = "/skydns/arpa/ip6/2/0/0/1/0/d/b/8/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/a"
	)
	tests := []struct {
		name   string
		cidrs  string
		slices []*discoveryv1.EndpointSlice
		want   map[string]string
	}{
		{"inside the reverse CIDRs: a PTR to the gateway name", "192.0.2.0/24",
			[]*discoveryv1.EndpointSlice{testfixture.IPv4Slice("a", gwA, "192.0.2.10")},
			map[string]string{ptr10: "gateway.cluster-a.dev-team.clusters.xcc.test"}},
		{"no reverse CIDRs: none", "",
			[]*discoveryv1.EndpointSlice{testfixture.IPv4Slice("a", gwA, "192.0.2.10")}, map[string]string{}},
		{"outside the reverse CIDRs: none", "192.0.2.0/28,2001:db8::/32",
			[]*discoveryv1.EndpointSlice{testfixture.IPv4Slice("a", gwA, "192.0.2.20")}, map[string]string{}},
		{"an api address: a PTR to the api name", "192.0.2.0/24",
			[]*discoveryv1.EndpointSlice{testfixture.IPv4Slice("a", apiA, "192.0.2.10")},
			map[string]string{ptr10: "api.cluster-a.dev-team.clusters.xcc.test"}},
		{"gateway and api of one cluster on one address: the gateway", "192.0.2.0/24",
			[]*discoveryv1.EndpointSlice{testfixture.IPv4Slice("api", apiA, "192.0.2.10"), testfixture.IPv4Slice("gw", gwA, "192.0.2.10")},
			map[string]string{ptr10: "gateway.cluster-a.dev-team.clusters.xcc.test"}},
		{"two clusters claim one address: none for it, the other keeps its own", "192.0.2.0/24",
			[]*discoveryv1.EndpointSlice{testfixture.IPv4Slice("a", gwA, "192.0.2.10"), testfixture.IPv4Slice("b", apiB, "192.0.2.10"), testfixture.IPv4Slice("b2", gwB, "192.0.2.11")},
			map[string]string{"/skydns/arpa/in-addr/192/0/2/11": "gateway.cluster-b.dev-team.clusters.xcc.test"}},
		{"IPv6", "2001:db8::/32",
			[]*discoveryv1.EndpointSlice{func() *discoveryv1.EndpointSlice {
				s := testfixture.IPv4Slice("a6", gwA, "2001:db8::a")
				s.AddressType = discoveryv1.AddressTypeIPv6
				return s
			}()},
			map[string]string{ptr6: "gateway.cluster-a.dev-team.clusters.xcc.test"}},
		{"a hostname gateway is no address: none", "0.0.0.0/0",
			[]*discoveryv1.EndpointSlice{func() *discoveryv1.EndpointSlice {
				s := testfixture.IPv4Slice("f", gwA, "192.0.2.10.nip.example")
				s.AddressType = discoveryv1.AddressTypeFQDN
				return s
			}()}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaves := skydnsrecord.Set{}
			for _, s := range tt.slices {
				records, problems := SliceRecords(s, skydnsrecord.DefaultDomain)
				if len(problems) > 0 {
					t.Fatal(problems)
				}
				maps.Copy(leaves, records)
			}
			// The name records hold addresses too; they are no claim of their own.
			got := ptrs(WithReverseRecords(WithNameRecords(leaves), cidr.MustParse(tt.cidrs)))
			if !maps.Equal(got, tt.want) {
				t.Errorf("PTRs %v, want %v", got, tt.want)
			}
		})
	}
}

// The PTR follows every slice sync the way a full reconcile computes it: it
// appears, goes when a second cluster claims the address, and comes back
// when that claim goes. After each step a full reconcile writes nothing.
func TestReverseFollowsSliceSyncs(t *testing.T) {
	_, cli := testfixture.StartEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	cidrs := cidr.MustParse("192.0.2.0/24")
	s, factory := New(Config{
		Client:    fake.NewClientset(testfixture.IPv4Slice("gw-a", gwA, "192.0.2.10"), testfixture.IPv4Slice("gw-out", gwB, "198.51.100.1")),
		Namespace: DefaultNamespace, Domain: skydnsrecord.DefaultDomain,
		Store:        store.New(cli, skydnsrecord.DefaultDomain).WithNames(reverseZones(cidrs)...),
		Metrics:      NewMetrics(prometheus.NewRegistry()),
		ReverseCIDRs: cidrs,
	})
	factory.Start(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(ctx.Done(), s.synced) {
		t.Fatal("EndpointSlice cache did not sync")
	}
	indexer := factory.Discovery().V1().EndpointSlices().Informer().GetIndexer()
	const key = "/skydns/arpa/in-addr/192/0/2/10"
	ptrIn := func(step string, want string) {
		t.Helper()
		resp, err := cli.Get(ctx, "/skydns/arpa/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, kv := range resp.Kvs {
			r, err := skydnsrecord.Unmarshal(kv.Value)
			if err != nil {
				t.Fatal(err)
			}
			got[string(kv.Key)] = r.Host
		}
		wantSet := map[string]string{}
		if want != "" {
			wantSet[key] = want
		}
		if !maps.Equal(got, wantSet) {
			t.Fatalf("%s: PTRs in etcd %v, want %v", step, got, wantSet)
		}
		before := s.store.Owned()
		if err := s.reconcileAll(ctx); err != nil {
			t.Fatal(err)
		}
		if after := s.store.Owned(); !maps.Equal(before, after) {
			t.Fatalf("%s: a full reconcile changed the records the slice syncs left: the two paths disagree", step)
		}
	}
	sync := func(name string) {
		t.Helper()
		if err := s.syncHandler(ctx, DefaultNamespace+"/"+name); err != nil {
			t.Fatal(err)
		}
	}

	if err := s.reconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	ptrIn("first reconcile", "gateway.cluster-a.dev-team.clusters.xcc.test")

	claim := testfixture.IPv4Slice("api-b", apiB, "192.0.2.10")
	if err := indexer.Add(claim); err != nil {
		t.Fatal(err)
	}
	sync("api-b")
	ptrIn("cluster-b claims the address too", "")

	if err := indexer.Delete(claim); err != nil {
		t.Fatal(err)
	}
	sync("api-b")
	ptrIn("cluster-b's claim gone", "gateway.cluster-a.dev-team.clusters.xcc.test")

	moved := testfixture.IPv4Slice("gw-a", gwA, "198.51.100.7")
	if err := indexer.Update(moved); err != nil {
		t.Fatal(err)
	}
	sync("gw-a")
	ptrIn("cluster-a's gateway moved outside the reverse CIDRs", "")
}
