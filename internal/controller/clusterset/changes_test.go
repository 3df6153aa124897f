package clusterset

import (
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// An import keeps its version while it and its sources' slices are the
// same objects; a slice replaced (an informer's update) or a field of
// the import changed gives it a new one, and only it.
func TestImportVersions(t *testing.T) {
	web := aggregate.Import{Key: aggregate.Key{Namespace: "shop", Name: "web"}, Clusters: []string{"cluster-a"},
		Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 80}}}
	api := aggregate.Import{Key: aggregate.Key{Namespace: "shop", Name: "api"}, Clusters: []string{"cluster-b"},
		Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 80}}}
	slice := func(name string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	}
	endpoints := map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice{
		web.Key: {"cluster-a": {slice("web-1")}},
		api.Key: {"cluster-b": {slice("api-1")}},
	}
	var iv importVersions
	first := iv.of(aggregate.Result{Imports: []aggregate.Import{web, api}}, endpoints)
	if first[web.Key] == first[api.Key] {
		t.Fatalf("two imports of one version: %v", first)
	}
	same := iv.of(aggregate.Result{Imports: []aggregate.Import{web, api}}, endpoints)
	if same[web.Key] != first[web.Key] || same[api.Key] != first[api.Key] {
		t.Errorf("versions %v, then %v of the same inputs", first, same)
	}

	// web's slice replaced by an equal object: an update all the same.
	endpoints[web.Key] = map[string][]*discoveryv1.EndpointSlice{"cluster-a": {slice("web-1")}}
	next := iv.of(aggregate.Result{Imports: []aggregate.Import{web, api}}, endpoints)
	if next[web.Key] == same[web.Key] || next[api.Key] != same[api.Key] {
		t.Errorf("after web's slice changed: versions %v, were %v; want web's only new", next, same)
	}

	api.Ports = []aggregate.Port{{Name: "http", Protocol: "TCP", Port: 8080}}
	after := iv.of(aggregate.Result{Imports: []aggregate.Import{web, api}}, endpoints)
	if after[api.Key] == next[api.Key] || after[web.Key] != next[web.Key] {
		t.Errorf("after api's port changed: versions %v, were %v; want api's only new", after, next)
	}

	iv.of(aggregate.Result{Imports: []aggregate.Import{web}}, endpoints)
	if _, ok := iv.byKey[api.Key]; ok || len(iv.byKey) != 1 {
		t.Errorf("versions kept of %v; want web's only, api being gone", iv.byKey)
	}
}

// What a member's write is computed from changes with every input of
// it, and not with what only another member's write reads: Ready of an
// import the member does not export, the status of another's export.
func TestInputOf(t *testing.T) {
	web := aggregate.Key{Namespace: "shop", Name: "web"}
	api := aggregate.Key{Namespace: "shop", Name: "api"}
	type inputs struct {
		agg        aggregate.Result
		versions   map[aggregate.Key]uint64
		written    map[aggregate.Key]written
		exports    []*mcsv1beta1.ServiceExport
		namespaces map[string]bool
	}
	base := func() inputs {
		return inputs{
			agg: aggregate.Result{
				Imports: []aggregate.Import{{Key: web, Clusters: []string{"cluster-a"}}, {Key: api, Clusters: []string{"cluster-b"}}},
				Exports: []aggregate.ExportStatus{
					{Cluster: "cluster-a", Key: web, Conditions: []aggregate.Condition{{Type: aggregate.ConditionValid, Status: aggregate.StatusTrue}}},
					{Cluster: "cluster-b", Key: api, Conditions: []aggregate.Condition{{Type: aggregate.ConditionValid, Status: aggregate.StatusTrue}}},
				},
			},
			versions:   map[aggregate.Key]uint64{web: 1, api: 2},
			written:    map[aggregate.Key]written{web: writtenNot, api: writtenNot},
			exports:    []*mcsv1beta1.ServiceExport{exportAt("web", "u1", "10")},
			namespaces: map[string]bool{"shop": true},
		}
	}
	of := func(in inputs) memberInput {
		return inputOf("cluster-a", in.agg, in.versions, in.written, in.exports, in.namespaces)
	}
	want := of(base())
	if again := of(base()); again != want {
		t.Fatalf("the same inputs give %v, then %v", want, again)
	}
	for _, tc := range []struct {
		name    string
		change  func(*inputs)
		changes bool
	}{
		{"a new version of an import", func(in *inputs) { in.versions[api] = 3 }, true},
		{"an import more", func(in *inputs) {
			in.agg.Imports = append(in.agg.Imports, aggregate.Import{Key: aggregate.Key{Namespace: "shop", Name: "db"}})
		}, true},
		{"its own export's import written everywhere", func(in *inputs) { in.written[web] = writtenAll }, true},
		{"another's export's import written everywhere", func(in *inputs) { in.written[api] = writtenAll }, false},
		{"its export written again", func(in *inputs) { in.exports = []*mcsv1beta1.ServiceExport{exportAt("web", "u1", "11")} }, true},
		{"its export made again", func(in *inputs) { in.exports = []*mcsv1beta1.ServiceExport{exportAt("web", "u2", "10")} }, true},
		{"its export's conditions", func(in *inputs) { in.agg.Exports[0].Conditions[0].Status = aggregate.StatusFalse }, true},
		{"another's export's conditions", func(in *inputs) { in.agg.Exports[1].Conditions[0].Status = aggregate.StatusFalse }, false},
		{"a namespace more", func(in *inputs) { in.namespaces["cart"] = true }, true},
	} {
		in := base()
		tc.change(&in)
		if got := of(in); (got != want) != tc.changes {
			t.Errorf("%s: input %v, was %v; want changed %v", tc.name, got, want, tc.changes)
		}
	}
}

// A sync that finds nothing of a member changed does not walk its
// imports again: its write is skipped and counted. A write of anyone's
// to the controller's objects there is a change: the member is written
// again and its import restored (TestControllerClusterSetRestoresOverwrittenImport
// is the same through a status write).
func TestControllerClusterSetUnchangedMemberSkipped(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "cluster-a's import in cluster-b", func() bool { return hasImport(e.ctx, b) })
	skipped := func() float64 {
		var m dto.Metric
		if err := e.rec.cfg.Metrics.MemberWritesUnchanged.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	before := skipped()
	testfixture.Eventually(t, "both members' writes skipped at a sync of nothing new", func() bool {
		e.rec.Add("dev-team/prod")
		return skipped() >= before+2
	})
	testfixture.Eventually(t, "the controller's ServiceImport informer watching cluster-b", func() bool {
		return slices.ContainsFunc(b.MCS.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == "serviceimports"
		})
	})
	if err := b.MCS.MulticlusterV1beta1().ServiceImports("shop").Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testfixture.Eventually(t, "cluster-a's import in cluster-b again", func() bool {
		e.rec.Add("dev-team/prod")
		return hasImport(e.ctx, b)
	})
}
