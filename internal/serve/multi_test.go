package serve

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

const gwName = "web.dev-team.gateways.xcc.test"

// gatewaysSlices are the slices the controller writes, alike into every
// cluster, for GatewayDNS dev-team/web and the source cluster's gateway.
func gatewaysSlices(cluster string, loc contract.Locality, healthy bool, ips ...string) []*discoveryv1.EndpointSlice {
	out := contract.Build(contract.Source{Namespace: "dev-team", GatewayDNS: "web", Cluster: cluster, Kind: contract.KindGateways,
		Hostname: contract.GatewaysHostname("web", "dev-team", "xcc.test"), Locality: loc, Unhealthy: !healthy},
		contract.Classify(ips, nil, "xcc.test"))
	for _, s := range out {
		s.Namespace = DefaultNamespace
	}
	return out
}

func selfMarker(clusters ...string) *discoveryv1.EndpointSlice {
	s := contract.BuildSelf(contract.Self{Namespace: "dev-team", Clusters: clusters})
	s.Namespace = DefaultNamespace
	return s
}

type running struct {
	s    *Syncer
	kube *fake.Clientset
	etcd *clientv3.Client
}

// runSyncer runs a whole syncer (informer, queue, workers) on a real etcd
// with reverse CIDRs 192.0.2.0/24, until the test ends.
func runSyncer(t *testing.T, slices ...*discoveryv1.EndpointSlice) *running {
	t.Helper()
	return runSyncerIn(t, "", slices...)
}

// runSyncerIn is runSyncer with the clusterset zone clusterSetZone ("":
// none).
func runSyncerIn(t *testing.T, clusterSetZone string, slices ...*discoveryv1.EndpointSlice) *running {
	t.Helper()
	_, cli := testfixture.StartEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	kube := fake.NewClientset()
	for _, s := range slices {
		if _, err := kube.DiscoveryV1().EndpointSlices(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cidrs := cidr.MustParse("192.0.2.0/24")
	s, factory := New(Config{
		Client: kube, Namespace: DefaultNamespace, Domain: skydnsrecord.DefaultDomain,
		Store:   store.New(cli, skydnsrecord.DefaultDomain).WithNames(ownedZones(Options{ReverseCIDRs: cidrs, ClusterSetZone: clusterSetZone})...),
		Metrics: NewMetrics(prometheus.NewRegistry()), ReverseCIDRs: cidrs, ClusterSetZone: clusterSetZone,
	})
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	deadline := time.Now().Add(20 * time.Second)
	for !s.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("syncer not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &running{s: s, kube: kube, etcd: cli}
}

// hosts reads the hosts of the records of name from etcd, sorted.
func (r *running) hosts(t *testing.T, name string) []string {
	t.Helper()
	resp, err := r.etcd.Get(context.Background(), skydnsrecord.Key(name)+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		rec, err := skydnsrecord.Unmarshal(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Host)
	}
	slices.Sort(out)
	return out
}

// expect waits until name's records are want, then checks that a full
// reconcile agrees with what the incremental syncs left.
func (r *running) expect(t *testing.T, step string, name string, want ...string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(10 * time.Second)
	for got := r.hosts(t, name); !slices.Equal(got, want); got = r.hosts(t, name) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: records of %s are %v, want %v", step, name, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let queued syncs finish
	before := r.s.store.Owned()
	if err := r.s.reconcileAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := r.s.store.Owned(); !maps.Equal(before, after) {
		t.Fatalf("%s: a full reconcile changed what the syncs left: the two paths disagree", step)
	}
}

func (r *running) put(t *testing.T, slices ...*discoveryv1.EndpointSlice) {
	t.Helper()
	for _, s := range slices {
		if _, err := r.kube.DiscoveryV1().EndpointSlices(s.Namespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
			if _, err := r.kube.DiscoveryV1().EndpointSlices(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (r *running) del(t *testing.T, slices ...*discoveryv1.EndpointSlice) {
	t.Helper()
	for _, s := range slices {
		if err := r.kube.DiscoveryV1().EndpointSlices(s.Namespace).Delete(context.Background(), s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// The same slices in two clusters, told by their self markers that they
// are cluster-a and cluster-b, give each its own gateway; when a cluster's
// gateway goes unhealthy its DNS answers the others, and its own again
// when it is back.
func TestLocalPolicyAnswersPerCluster(t *testing.T) {
	local := contract.Locality{Policy: contract.PolicyLocal}
	world := func(aHealthy bool) []*discoveryv1.EndpointSlice {
		return slices.Concat(
			gatewaysSlices("cluster-a", local, aHealthy, "192.0.2.10", "2001:db8::a"),
			gatewaysSlices("cluster-b", local, true, "192.0.2.20"),
			gatewaysSlices("cluster-c", local, true, "192.0.2.30"))
	}
	inA := runSyncer(t, append(world(true), selfMarker("cluster-a"))...)
	inB := runSyncer(t, append(world(true), selfMarker("cluster-b"))...)
	inA.expect(t, "cluster-a's DNS", gwName, "192.0.2.10", "2001:db8::a")
	inB.expect(t, "cluster-b's DNS", gwName, "192.0.2.20")

	inA.put(t, world(false)...)
	inB.put(t, world(false)...)
	inA.expect(t, "cluster-a's gateway unhealthy, in cluster-a", gwName, "192.0.2.20", "192.0.2.30")
	inB.expect(t, "cluster-a's gateway unhealthy, in cluster-b", gwName, "192.0.2.20")

	inA.put(t, world(true)...)
	inA.expect(t, "cluster-a's gateway back", gwName, "192.0.2.10", "2001:db8::a")

	// Without its marker a cluster is none of the sources: every healthy one.
	inA.del(t, selfMarker("cluster-a"))
	inA.expect(t, "cluster-a's marker gone", gwName, "192.0.2.10", "192.0.2.20", "192.0.2.30", "2001:db8::a")
	// Twins: one place that is two Clusters answers both their gateways.
	inA.put(t, selfMarker("cluster-a", "cluster-c"))
	inA.expect(t, "twins", gwName, "192.0.2.10", "192.0.2.30", "2001:db8::a")
}

// When no source is healthy, every published gateway is answered.
func TestNoHealthyGatewayAnswersAll(t *testing.T) {
	all := contract.Locality{Policy: contract.PolicyAll}
	r := runSyncer(t, slices.Concat(
		gatewaysSlices("cluster-a", all, false, "192.0.2.10"),
		gatewaysSlices("cluster-b", all, false, "192.0.2.20"))...)
	r.expect(t, "none healthy", gwName, "192.0.2.10", "192.0.2.20")
	r.put(t, gatewaysSlices("cluster-b", all, true, "192.0.2.20")...)
	r.expect(t, "cluster-b healthy", gwName, "192.0.2.20")
	// A source that is gone is no longer answered at all.
	r.del(t, gatewaysSlices("cluster-b", all, true, "192.0.2.20")...)
	r.expect(t, "cluster-b's slice deleted", gwName, "192.0.2.10")
	r.del(t, gatewaysSlices("cluster-a", all, true, "192.0.2.10")...)
	r.expect(t, "every slice deleted", gwName)
}

// Failover answers the first healthy cluster of the order, in every
// cluster alike, and moves down the order and back.
func TestFailoverOrder(t *testing.T) {
	failover := contract.Locality{Policy: contract.PolicyFailover, Order: []string{"cluster-b", "cluster-a"}}
	world := func(aHealthy, bHealthy bool) []*discoveryv1.EndpointSlice {
		return slices.Concat(
			gatewaysSlices("cluster-a", failover, aHealthy, "192.0.2.10"),
			gatewaysSlices("cluster-b", failover, bHealthy, "192.0.2.20"),
			gatewaysSlices("cluster-c", failover, true, "192.0.2.30"))
	}
	r := runSyncer(t, append(world(true, true), selfMarker("cluster-a"))...)
	r.expect(t, "first of the order", gwName, "192.0.2.20")
	r.put(t, world(true, false)...)
	r.expect(t, "first unhealthy", gwName, "192.0.2.10")
	r.put(t, world(false, false)...)
	r.expect(t, "none of the order healthy", gwName, "192.0.2.30")
	r.put(t, world(true, true)...)
	r.expect(t, "back", gwName, "192.0.2.20")
}

// The gateways name never claims a PTR: the gateway's own name keeps it.
// Slices that publish the name for another GatewayDNS or namespace, or with
// a policy serve cannot read, publish nothing.
func TestGatewaysNameClaimsNoPTRAndHostileSlicesPublishNothing(t *testing.T) {
	all := contract.Locality{Policy: contract.PolicyAll}
	own := testfixture.IPv4Slice("gw-a", "*.gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")
	otherGD := gatewaysSlices("cluster-x", all, true, "192.0.2.66")[0]
	otherGD.Name = "other-gd"
	otherGD.Annotations[contract.AnnotationGatewayRef] = "dev-team/other"
	badPolicy := gatewaysSlices("cluster-y", all, true, "192.0.2.67")[0]
	badPolicy.Name = "bad-policy"
	badPolicy.Annotations[contract.AnnotationLocality] = "nearest"
	r := runSyncer(t, slices.Concat([]*discoveryv1.EndpointSlice{own, otherGD, badPolicy}, gatewaysSlices("cluster-a", all, true, "192.0.2.10"))...)
	r.expect(t, "gateways name", gwName, "192.0.2.10")
	resp, err := r.etcd.Get(context.Background(), "/skydns/arpa/in-addr/192/0/2/10")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("PTR of 192.0.2.10: %v %v", resp, err)
	}
	if rec, _ := skydnsrecord.Unmarshal(resp.Kvs[0].Value); rec.Host != "gateway.cluster-a.dev-team.clusters.xcc.test" {
		t.Errorf("PTR of 192.0.2.10 names %s", rec.Host)
	}
}

func TestMultiRecordsPolicyDisagreement(t *testing.T) {
	parse := func(s *discoveryv1.EndpointSlice) contract.Parsed {
		p, ok, problems := contract.Parse(s, "xcc.test")
		if !ok || len(problems) > 0 {
			t.Fatal(problems)
		}
		return p
	}
	a := parse(gatewaysSlices("cluster-a", contract.Locality{Policy: contract.PolicyLocal}, true, "192.0.2.10")[0])
	b := parse(gatewaysSlices("cluster-b", contract.Locality{Policy: contract.PolicyFailover, Order: []string{"cluster-b"}}, true, "192.0.2.20")[0])
	b.TTL = 60
	records, answer, problems := MultiRecords(gwName, []contract.Parsed{a, b}, []string{"cluster-a"})
	if len(problems) != 1 || len(records) != 2 || !slices.Equal(answer.Selected, []string{"cluster-a", "cluster-b"}) {
		t.Fatalf("disagreeing policies: %v %+v %v, want every healthy source and one problem", records, answer, problems)
	}
	for _, rec := range records {
		if rec.TTL != contract.DefaultGatewaysTTL || rec.Owner != MultiOwner(gwName) {
			t.Errorf("record %+v: want the shortest TTL and the name's owner", rec)
		}
	}
}
