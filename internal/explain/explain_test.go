package explain

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

var (
	t0  = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now = t0.Add(90 * time.Second)
)

func testConfig(t *testing.T) Config {
	t.Helper()
	grants, err := contract.ParseGrants("dev-team=shop.xcc.test", "xcc.test")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Zone: "xcc.test", ClusterSetZone: contract.DefaultClusterSetZone, Grants: grants}
}

func ready(reason string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: reason}}
}

// walkthrough is the GatewayDNS of the walkthrough: cluster-a published,
// cluster-b unreachable, cluster-c not selected.
func walkthrough() v1alpha1.GatewayDNS {
	since := metav1.NewTime(t0)
	return v1alpha1.GatewayDNS{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "dev-team-gateway-dns", Generation: 1},
		Spec:       v1alpha1.GatewayDNSSpec{Service: "projectcontour/envoy", Names: &v1alpha1.Names{Enabled: true}},
		Status: v1alpha1.GatewayDNSStatus{ObservedGeneration: 1, SelectedClusters: 2, ReadyClusters: 1, HealthyClusters: 2,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ClusterUnreachable"}},
			Clusters: []v1alpha1.ClusterStatus{
				{Name: "cluster-b", Reason: "ClusterUnreachable", Message: "the API server has not answered since 2026-11-26T11:59:40Z", Since: &since,
					Healthy: true, Answered: true, Addresses: []string{"172.18.255.201"}},
				{Name: "cluster-a", Ready: true, Reason: "Published", Healthy: true, Answered: true,
					Addresses: []string{"172.18.255.200"}, APIAddresses: []string{"172.18.0.3"}},
			},
			Names: []v1alpha1.NameStatus{
				{Name: "kuard.dev-team.names.xcc.test", Reason: "Published", Sources: []string{"cluster-a/default/kuard"}, HealthySources: 1},
				{Name: "cart.shop.xcc.test", Reason: "NoAddresses", Message: "no Service claiming it has a load-balancer address"},
			},
		}}
}

func headlessDB() v1alpha1.GatewayDNS {
	return v1alpha1.GatewayDNS{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "db", Generation: 1},
		Spec:       v1alpha1.GatewayDNSSpec{Service: "databases/postgres", ResolutionType: v1alpha1.ResolutionTypeHeadless},
		Status: v1alpha1.GatewayDNSStatus{ObservedGeneration: 1, Conditions: ready("Published"),
			Clusters: []v1alpha1.ClusterStatus{{Name: "cluster-a", Ready: true, Reason: "Published", Pods: 2, Healthy: true, Answered: true}}}}
}

func prodSet() xccv1alpha1.ClusterSet {
	return xccv1alpha1.ClusterSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "prod", Generation: 1},
		Status: xccv1alpha1.ClusterSetStatus{ObservedGeneration: 1, Conditions: ready("Written"),
			Clusters: []xccv1alpha1.MemberStatus{
				{Name: "cluster-a", ClusterID: "cluster-a", Reason: xccv1alpha1.ReasonMember},
				{Name: "cluster-b", ClusterID: "west", Reason: xccv1alpha1.ReasonMember},
			}}}
}

// Each kind of name gets the one reason an operator can act on.
func TestBuild(t *testing.T) {
	cfg := testConfig(t)
	gds := []v1alpha1.GatewayDNS{walkthrough(), headlessDB()}
	sets := []xccv1alpha1.ClusterSet{prodSet()}
	for _, tt := range []struct {
		name, qtype string
		facts       Facts
		answer      string
		reason      string // the reason line, "Reason: why", by prefix
		key         string
	}{
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerRecords,
			reason: "Published: cluster-a is published in every target: 172.18.255.200",
			key:    "/skydns/test/xcc/clusters/dev-team/cluster-a/gateway/"},
		{name: "Kuard.Gateway.Cluster-B.dev-team.clusters.xcc.test.", facts: Facts{GatewayDNS: gds}, answer: AnswerRecords,
			reason: "ClusterUnreachable: cluster-b: ClusterUnreachable for 1m30s (since 2026-11-26T12:00:00Z): serving last known records"},
		{name: "kuard.gateway.cluster-c.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerNXDomain,
			reason: "NotSelected: cluster-c is not selected by any GatewayDNS of dev-team (dev-team-gateway-dns)"},
		{name: "kuard.gateway.cluster-a.ops.clusters.xcc.test", answer: AnswerNXDomain,
			reason: "NoGatewayDNS: no GatewayDNS of namespace ops publishes gateways"},
		{name: "api.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerRecords,
			reason: "Published: cluster-a is published in every target: 172.18.0.3", key: "/skydns/test/xcc/clusters/dev-team/cluster-a/api/"},
		{name: "kuard.gateway.any.dev-team.clusters.xcc.test", answer: AnswerNXDomain,
			reason: `Refused: name refused: a label "any"`},
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", qtype: "srv", answer: AnswerNoData,
			reason: "TypeNotAnswered: SRV NODATA: SRV is answered only at _<port>._<proto> names"},
		{name: "_all.db.dev-team.services.xcc.test", answer: AnswerNXDomain,
			reason: "Refused: name refused: where the records of another name are stored"},
		{name: "cluster-a.dev-team.clusters.xcc.test", answer: AnswerNoData, reason: "EmptyNonTerminal: "},
		{name: "www.foo.dev-team.gateways.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerNXDomain,
			reason: "NoGatewayDNS: no GatewayDNS dev-team/foo"},
		{name: "www.dev-team-gateway-dns.dev-team.gateways.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerRecords,
			reason: "Published: answers the healthy clusters the locality policy picks: cluster-b, cluster-a",
			key:    "/skydns/test/xcc/gateways/dev-team/dev-team-gateway-dns/"},
		{name: "www.db.dev-team.gateways.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerNXDomain,
			reason: "HeadlessExport: GatewayDNS dev-team/db exports a headless Service"},
		{name: "db.dev-team.services.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerRecords,
			reason: "Published: answers the healthy clusters the locality policy picks: cluster-a",
			key:    "/skydns/test/xcc/services/dev-team/db/_all/"},
		{name: "postgres-0.cluster-b.db.dev-team.services.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerNXDomain,
			reason: "NotSelected: cluster-b is not selected by GatewayDNS dev-team/db"},
		{name: "kuard.dev-team.names.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerRecords,
			reason: "Published: claimed by sources cluster-a/default/kuard, 1 healthy, published by GatewayDNS dev-team/dev-team-gateway-dns"},
		{name: "cart.shop.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerNXDomain,
			reason: "NoAddresses: GatewayDNS dev-team/dev-team-gateway-dns: NoAddresses: no Service claiming it"},
		{name: "other.dev-team.names.xcc.test", facts: Facts{GatewayDNS: gds}, answer: AnswerNXDomain,
			reason: "NotClaimed: no Service of a cluster selected by dev-team-gateway-dns claims it"},
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{Unread: []string{"list GatewayDNS in dev-team: forbidden"}, ListFailed: true}, answer: AnswerUnknown,
			reason: "Unread: could not read the GatewayDNS of namespace dev-team: list GatewayDNS in dev-team: forbidden"},
		{name: "web.shop.svc.clusterset.local", facts: Facts{ClusterSets: sets}, answer: AnswerUnknown,
			reason: "SeeMembers: the management cluster does not list imports: ServiceImport shop/web exists in the members of dev-team/prod",
			key:    "/skydns/local/clusterset/svc/shop/web/_all/"},
		{name: "web.shop.svc.clusterset.local", answer: AnswerNXDomain,
			reason: "NoClusterSet: no ClusterSet on the management cluster: nothing is imported into clusterset.local"},
		{name: "_http._tcp.web.shop.svc.clusterset.local", facts: Facts{ClusterSets: sets, From: "cluster-a",
			Slices: []Slice{{Name: "web-ip-clusterset-ipv4-1", Hostname: "web.shop.svc.clusterset.local"}}}, answer: AnswerRecords,
			reason: "Imported: 1 slice(s) of ServiceImport shop/web in cluster-a publish it"},
		{name: "web.shop.svc.clusterset.local", facts: Facts{ClusterSets: sets, From: "cluster-a"}, answer: AnswerNXDomain,
			reason: "NotImported: no slice of ServiceImport shop/web in cluster-a"},
		// With the member's ServiceImport read: the members behind it.
		{name: "web.shop.svc.clusterset.local", facts: Facts{ClusterSets: sets, From: "cluster-a",
			Slices: []Slice{{Name: "web-ip-clusterset-ipv4-1", Hostname: "web.shop.svc.clusterset.local"}},
			Import: &Import{Name: "shop/web", Type: "ClusterSetIP", IPs: []string{"10.96.7.101"}, Ports: []string{"http/TCP/80"}, Clusters: []string{"cluster-a", "west"}}},
			answer: AnswerRecords,
			reason: "Imported: ServiceImport shop/web of ClusterSet dev-team/prod in cluster-a: ClusterSetIP 10.96.7.101, ports http/TCP/80, exported by cluster-a, cluster-b (id west); 1 slice(s) publish it"},
		{name: "web.shop.svc.clusterset.local", facts: Facts{ClusterSets: sets, From: "cluster-a",
			Import: &Import{Name: "shop/web", Type: "Headless", Clusters: []string{"cluster-a"}}},
			answer: AnswerNXDomain,
			reason: "NotImported: ServiceImport shop/web of ClusterSet dev-team/prod in cluster-a: Headless, exported by cluster-a; but no slice of it in cluster-a publishes the name"},
		// Asked from a cluster whose DNS does not forward the zone: it
		// never reaches xcc-dns, whatever is published.
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds, From: "cluster-c",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test"}}, answer: AnswerUnknown,
			reason: "NotForwarded: the cluster DNS of cluster-c (ConfigMap kube-system/coredns) has no server block for xcc.test"},
		{name: "web.shop.svc.clusterset.local", facts: Facts{ClusterSets: sets, From: "cluster-a",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "clusterset.local"}}, answer: AnswerUnknown,
			reason: "NotForwarded: the cluster DNS of cluster-a (ConfigMap kube-system/coredns) has no server block for clusterset.local"},
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds, From: "cluster-c",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53"}}},
			answer: AnswerRecords, reason: "Published: cluster-a is published in every target"},
		// The cluster DNS answers the clusterset zone itself (the chart's
		// mcs.dnsServer=coredns): no forward to look for.
		{name: "web.shop.svc.clusterset.local", facts: Facts{ClusterSets: sets, From: "cluster-a",
			Slices: []Slice{{Name: "web-ip-clusterset-ipv4-1", Hostname: "web.shop.svc.clusterset.local"}},
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "clusterset.local", Found: true, Key: ".:53", Kubernetes: true,
				Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53"}}},
			answer: AnswerRecords, reason: "Imported: 1 slice(s) of ServiceImport shop/web in cluster-a publish it"},
		// The block forwards, but not to the xcc-dns Service: pods there
		// get what that server answers.
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds, From: "cluster-c",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.99:53"},
				Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53"}}},
			answer: AnswerUnknown, reason: "ForwardsElsewhere: the block xcc.test:53 of the cluster DNS of cluster-c (ConfigMap kube-system/coredns) forwards xcc.test to 10.96.0.99:53, not to the xcc-dns Service xcc-dns/xcc-dns (10.96.0.53:53): pods there get what that server answers; patch-corefile's block: helm upgrade of the workload chart (its patch-corefile job) writes it again with the Service's address; xcc-dns itself answers records (Published: cluster-a is published in every target: 172.18.255.200)"},
		// One target of several elsewhere: the forward plugin spreads
		// queries over them all; a user's block is the user's to fix.
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds, From: "cluster-c",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "test:53", ForwardTo: []string{"dns://10.96.0.53", "192.0.2.53"},
				Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53", "[fd00::53]:53"}}},
			answer: AnswerUnknown, reason: "ForwardsElsewhere: the block test:53 of the cluster DNS of cluster-c (ConfigMap kube-system/coredns) forwards xcc.test to dns://10.96.0.53 192.0.2.53, not only to the xcc-dns Service xcc-dns/xcc-dns (10.96.0.53:53, [fd00::53]:53): 192.0.2.53 is not it, and the forward plugin sends some queries there; a block of the user's: point its forward at the Service, or remove it; xcc-dns itself answers records (Published: "},
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds, From: "cluster-c",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53",
				Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53"}}},
			answer: AnswerUnknown, reason: "ForwardsElsewhere: the block xcc.test:53 of the cluster DNS of cluster-c (ConfigMap kube-system/coredns) forwards xcc.test nowhere, not to the xcc-dns Service xcc-dns/xcc-dns (10.96.0.53:53): pods there get what that block answers itself; xcc-dns itself answers records (Published: "},
		// The Service's address, with the port written or not, any of
		// its ClusterIPs.
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds, From: "cluster-c",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53", "dns://[fd00::53]:53"},
				Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53", "[fd00::53]:53"}}},
			answer: AnswerRecords, reason: "Published: cluster-a is published in every target"},
		// Another port of the Service's address is not the Service.
		{name: "kuard.gateway.cluster-a.dev-team.clusters.xcc.test", facts: Facts{GatewayDNS: gds, From: "cluster-c",
			Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53:5353"},
				Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53"}}},
			answer: AnswerUnknown, reason: "ForwardsElsewhere: the block xcc.test:53 of the cluster DNS of cluster-c (ConfigMap kube-system/coredns) forwards xcc.test to 10.96.0.53:5353, not to the xcc-dns Service"},
		// The guard's refusal stands wherever the name is asked.
		{name: "kuard.gateway.any.dev-team.clusters.xcc.test", facts: Facts{From: "cluster-c", Forward: &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test"}},
			answer: AnswerNXDomain, reason: `Refused: name refused: a label "any"`},
		// Slices that could not be read say nothing of the GatewayDNS.
		{name: "kuard.gateway.cluster-a.ops.clusters.xcc.test", facts: Facts{From: "cluster-a", Unread: []string{"slices of ops/cluster-a: forbidden"}, SlicesFailed: true},
			answer: AnswerNXDomain, reason: "NoGatewayDNS: "},
		{name: "xcc.test.", answer: AnswerNoData, reason: "Apex: "},
		{name: "db.custom.xcc.test", answer: AnswerUnknown, reason: "ByHand: ", key: "/skydns/test/xcc/custom/db/"},
		{name: "example.com", answer: AnswerNotOurs, reason: "NotInZone: "},
	} {
		r := Build(Classify(tt.name, tt.qtype, cfg), tt.facts, now)
		line := r.Reason + ": " + r.Why
		if r.Answer != tt.answer || !strings.HasPrefix(line, tt.reason) {
			t.Errorf("%s %s: answer %s, reason %q; want %s, %q", tt.name, tt.qtype, r.Answer, line, tt.answer, tt.reason)
		}
		if tt.key != "" && r.Key != tt.key {
			t.Errorf("%s: key %q, want %q", tt.name, r.Key, tt.key)
		}
		if (r.Reason == ReasonRefused || r.Reason == ReasonEmptyNonTerminal || r.Reason == ReasonTypeNotAnswered) && r.Key != "" {
			t.Errorf("%s: key %q for a name the guard answers before etcd", tt.name, r.Key)
		}
	}
}

// The owner of a name is read from its labels, per kind.
func TestClassifyOwner(t *testing.T) {
	cfg := testConfig(t)
	for _, tt := range []struct {
		name string
		want Owner
	}{
		{"a.b.gateway.cluster-a.dev-team.clusters.xcc.test", Owner{Namespace: "dev-team", Cluster: "cluster-a"}},
		{"x.web.dev-team.gateways.xcc.test", Owner{Namespace: "dev-team", GatewayDNS: "web"}},
		{"postgres-0.cluster-a.db.dev-team.services.xcc.test", Owner{Namespace: "dev-team", Cluster: "cluster-a", GatewayDNS: "db", Pod: "postgres-0"}},
		{"cart.shop.xcc.test", Owner{Namespace: "dev-team"}},
		{"web-0.east.web.shop.svc.clusterset.local", Owner{ServiceImport: "shop/web", ClusterID: "east", Hostname: "web-0"}},
	} {
		if got := Classify(tt.name, "", cfg).Owner; got != tt.want {
			t.Errorf("%s: owner %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

type fakeReader struct {
	gds    []v1alpha1.GatewayDNS
	gdErr  error
	sets   []xccv1alpha1.ClusterSet
	setErr error
	asked  []string
}

func (f *fakeReader) GatewayDNS(_ context.Context, ns string) ([]v1alpha1.GatewayDNS, error) {
	f.asked = append(f.asked, "GatewayDNS "+ns)
	return f.gds, f.gdErr
}

func (f *fakeReader) ClusterSets(context.Context) ([]xccv1alpha1.ClusterSet, error) {
	f.asked = append(f.asked, "ClusterSets")
	return f.sets, f.setErr
}

type fakeSlices struct {
	slices []Slice
	err    error
}

func (f fakeSlices) Slices(context.Context, string, string) ([]Slice, error) {
	return f.slices, f.err
}

// Read asks only for what can publish the name, and a fact it cannot
// read is reported, not fatal.
func TestRead(t *testing.T) {
	cfg := testConfig(t)
	ctx := context.Background()
	forbidden := errors.New(`gatewaydns.connectivity.tanzu.vmware.com is forbidden: User "u" cannot list resource "gatewaydns"`)
	r := &fakeReader{gdErr: forbidden, sets: []xccv1alpha1.ClusterSet{prodSet()}}
	f := Read(ctx, Classify("kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "", cfg), r)
	if len(f.Unread) != 1 || !strings.Contains(f.Unread[0], "list GatewayDNS in dev-team: ") || !strings.Contains(f.Unread[0], "forbidden") {
		t.Errorf("unread %v, want the forbidden list", f.Unread)
	}
	f = Read(ctx, Classify("kuard.gateway.any.dev-team.clusters.xcc.test", "", cfg), r)
	if len(r.asked) != 1 || len(f.Unread) != 0 {
		t.Errorf("a refused name read %v (unread %v), want nothing read", r.asked, f.Unread)
	}

	sr := fakeSlices{slices: []Slice{
		{Name: "a", Hostname: "web.shop.svc.clusterset.local"},
		{Name: "b", Hostname: "db.shop.svc.clusterset.local"},
		{Name: "c", Hostname: "*.gateway.cluster-a.dev-team.clusters.xcc.test"},
	}}
	n := Classify("web-0.east.web.shop.svc.clusterset.local", "", cfg)
	f = Read(ctx, n, r)
	if ns := FromNamespace(n, f, "cluster-a"); ns != "dev-team" {
		t.Errorf("--from cluster-a of a clusterset name: namespace %q, want the ClusterSet's", ns)
	}
	ReadSlices(ctx, n, sr, "dev-team", "cluster-a", &f)
	if len(f.Slices) != 1 || f.Slices[0].Name != "a" || len(f.ClusterSets) != 1 || f.From != "cluster-a" {
		t.Errorf("facts %+v, want slice a and the ClusterSet", f)
	}
	n = Classify("www.gateway.cluster-a.dev-team.clusters.xcc.test", "", cfg)
	f = Read(ctx, n, r)
	ReadSlices(ctx, n, fakeSlices{slices: sr.slices}, "dev-team", "cluster-a", &f)
	if len(f.Slices) != 1 || f.Slices[0].Name != "c" {
		t.Errorf("slices %+v, want c, whose wildcard makes the name", f.Slices)
	}
	ReadSlices(ctx, n, fakeSlices{err: forbidden}, "dev-team", "cluster-a", &f)
	if len(f.Unread) != 2 || !strings.Contains(f.Unread[1], "slices of dev-team/cluster-a") {
		t.Errorf("unread %v, want the GatewayDNS and the slices", f.Unread)
	}
	if rep := Build(Classify("web.shop.svc.clusterset.local", "", cfg), Facts{From: "cluster-a", Unread: []string{"slices of dev-team/cluster-a: forbidden"}, SlicesFailed: true}, now); rep.Reason == ReasonNotImported {
		t.Errorf("unread slices explained as %s: %s", rep.Reason, rep.Why)
	}
}

// With --from, the text says what the cluster's DNS does with the zone.
func TestWriteTextForward(t *testing.T) {
	cfg := testConfig(t)
	n := Classify("kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "", cfg)
	for _, tt := range []struct {
		fw   Forward
		want string
	}{
		{Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53"}},
			"cluster DNS of cluster-c (kube-system/coredns): forwards xcc.test to 10.96.0.53 (block xcc.test:53, patch-corefile's)\n"},
		{Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "test:53", ForwardTo: []string{"192.0.2.53"}},
			"cluster DNS of cluster-c (kube-system/coredns): forwards xcc.test to 192.0.2.53 (block test:53, not patch-corefile's)\n"},
		{Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test"},
			"cluster DNS of cluster-c (kube-system/coredns): no server block for xcc.test\n"},
		{Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: ".:53", Kubernetes: true},
			"cluster DNS of cluster-c (kube-system/coredns): answers xcc.test itself from the ServiceImports there, with its kubernetes plugin's multicluster option"},
		{Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.53:53"},
			Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53"}},
			"cluster DNS of cluster-c (kube-system/coredns): forwards xcc.test to 10.96.0.53:53 (block xcc.test:53, patch-corefile's): the xcc-dns Service xcc-dns/xcc-dns\n"},
		{Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", Managed: true, ForwardTo: []string{"10.96.0.99:53"},
			Service: "xcc-dns/xcc-dns", ServiceAddresses: []string{"10.96.0.53:53"}},
			"cluster DNS of cluster-c (kube-system/coredns): forwards xcc.test to 10.96.0.99:53 (block xcc.test:53, patch-corefile's): not the xcc-dns Service xcc-dns/xcc-dns (10.96.0.53:53)\n"},
	} {
		fw := tt.fw
		var out strings.Builder
		if err := Build(n, Facts{GatewayDNS: []v1alpha1.GatewayDNS{walkthrough()}, From: "cluster-c", Forward: &fw}, now).WriteText(&out, now); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("text lacks %q:\n%s", tt.want, out.String())
		}
	}
}
