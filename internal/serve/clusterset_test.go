package serve

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

const (
	csZone = contract.DefaultClusterSetZone
	csWeb  = "web.dev-team.svc.clusterset.local"
	csDB   = "db.dev-team.svc.clusterset.local"
)

// csSlices are a gateway of the other zone, a ClusterSetIP import web and
// a Headless import db of cluster-a and cluster-b, whose addresses lie in
// the reverse CIDRs of runSyncer.
func csSlices() (gateway, web, dbA, dbB []*discoveryv1.EndpointSlice) {
	pg := []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}
	source := func(cluster, addr string) contract.ClusterSetSource {
		return contract.ClusterSetSource{Cluster: cluster, Endpoints: contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{
			{Ports: pg, IPv4: []contract.Endpoint{{Address: addr, Hostname: "pg-0"}}}}}}
	}
	build := func(imp contract.ClusterSetImport) []*discoveryv1.EndpointSlice {
		out := contract.BuildClusterSet(imp, csZone)
		for _, s := range out {
			s.Namespace = DefaultNamespace
		}
		return out
	}
	gw := testfixture.IPv4Slice("gw-a", "*.gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")
	gw.Namespace = DefaultNamespace
	return []*discoveryv1.EndpointSlice{gw},
		build(contract.ClusterSetImport{Namespace: "dev-team", Name: "web", Type: contract.ImportClusterSetIP, IPs: []string{"192.0.2.80"},
			Ports: []contract.Port{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}),
		build(contract.ClusterSetImport{Namespace: "dev-team", Name: "db", Type: contract.ImportHeadless, Sources: []contract.ClusterSetSource{source("cluster-a", "192.0.2.77")}}),
		build(contract.ClusterSetImport{Namespace: "dev-team", Name: "db", Type: contract.ImportHeadless, Sources: []contract.ClusterSetSource{source("cluster-b", "192.0.2.78")}})
}

// The clusterset zone's records live beside the zone's, in one store: a
// full reconcile keeps both (expect checks it changes nothing), a deleted
// slice takes its records, no address of the zone gets a PTR, and
// dns-version is there.
func TestClusterSetRecords(t *testing.T) {
	gw, web, dbA, dbB := csSlices()
	r := runSyncerIn(t, csZone, slices.Concat(gw, web, dbA, dbB)...)
	r.expect(t, "start", contract.HeadlessAllName(csWeb), "192.0.2.80")
	r.expect(t, "start", contract.HeadlessAllName(csDB), "192.0.2.77", "192.0.2.78")
	r.expect(t, "start", "pg-0.cluster-b."+csDB, "192.0.2.78")
	r.expect(t, "start", "gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")
	if got, want := r.srv(t, "_http._tcp."+csWeb), []string{csWeb + ":80"}; !slices.Equal(got, want) {
		t.Errorf("SRV of web: %v, want %v", got, want)
	}
	if got, want := r.srv(t, "_pg._tcp."+csDB), []string{"pg-0.cluster-a." + csDB + ":5432", "pg-0.cluster-b." + csDB + ":5432"}; !slices.Equal(got, want) {
		t.Errorf("SRV of db: %v, want %v", got, want)
	}
	version := r.get(t, skydnsrecord.Key(contract.DNSVersionName(csZone))+"/")
	if len(version) != 1 || version[0].Text != "1.0.0" || version[0].Host != "" {
		t.Errorf("dns-version records %+v, want one TXT 1.0.0", version)
	}
	for _, ptr := range []string{"/skydns/arpa/in-addr/192/0/2/77", "/skydns/arpa/in-addr/192/0/2/80"} {
		if resp, err := r.etcd.Get(context.Background(), ptr, clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
			t.Errorf("%s: %v, %v; the clusterset zone claims no PTR", ptr, resp, err)
		}
	}
	if got := r.get(t, "/skydns/arpa/in-addr/192/0/2/10"); len(got) != 1 {
		t.Errorf("the gateway's PTR: %+v", got)
	}
	if n := counted(t, r.s.metrics.RefusedInputs) + counted(t, r.s.metrics.RefusedSlices); n != 0 {
		t.Errorf("%v refused inputs or slices, want none", n)
	}

	r.del(t, dbB...)
	r.expect(t, "cluster-b gone", contract.HeadlessAllName(csDB), "192.0.2.77")
	r.expect(t, "cluster-b gone", "pg-0.cluster-b."+csDB)
	r.del(t, web...)
	r.expect(t, "web gone", contract.HeadlessAllName(csWeb))
	if got := r.srv(t, "_http._tcp."+csWeb); len(got) != 0 {
		t.Errorf("SRV of a deleted import: %v", got)
	}
	r.expect(t, "web gone", "gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")
}

// With the clusterset zone off, clusterset slices publish nothing and
// are not counted refused: the controller writes them whatever a member
// serves.
func TestClusterSetZoneOff(t *testing.T) {
	gw, web, dbA, _ := csSlices()
	r := runSyncerIn(t, "", slices.Concat(gw, web, dbA)...)
	r.expect(t, "start", "gateway.cluster-a.dev-team.clusters.xcc.test", "192.0.2.10")
	if got := r.get(t, "/skydns/local/"); len(got) != 0 {
		t.Errorf("records under the clusterset zone: %+v", got)
	}
	if n := counted(t, r.s.metrics.RefusedInputs) + counted(t, r.s.metrics.RefusedSlices); n != 0 {
		t.Errorf("%v refused inputs or slices, want none", n)
	}
}

// counted reads a counter's value.
func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A new import is one etcd transaction: its records and the name records
// of its names together. Written one after the other, 1,000 imports
// arriving at once took serve four times as long (BenchmarkClusterSetFill).
func TestNewImportIsOneTransaction(t *testing.T) {
	_, web, dbA, _ := csSlices()
	r := runSyncerIn(t, csZone)
	before := r.revision(t)
	r.put(t, web...)
	r.expect(t, "web", contract.HeadlessAllName(csWeb), "192.0.2.80")
	r.put(t, dbA...)
	r.expect(t, "db", contract.HeadlessAllName(csDB), "192.0.2.77")
	if n := r.revision(t) - before; n != 2 {
		t.Errorf("two new imports took %d etcd transactions, want 2", n)
	}
	if got, want := r.srv(t, "_http._tcp."+csWeb), []string{csWeb + ":80"}; !slices.Equal(got, want) {
		t.Errorf("SRV of web: %v, want %v", got, want)
	}
}

// revision is etcd's current revision: one more for each transaction
// that wrote.
func (r *running) revision(t *testing.T) int64 {
	t.Helper()
	resp, err := r.etcd.Get(context.Background(), "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}
