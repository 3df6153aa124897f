package overview

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

var (
	t0  = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now = t0.Add(90 * time.Second)
)

func cond(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: msg}}
}

func gatewayDNS(name string, gen int64, st v1alpha1.GatewayDNSStatus) v1alpha1.GatewayDNS {
	return v1alpha1.GatewayDNS{ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: name, Generation: gen}, Status: st}
}

func clusterSet(name string, gen int64, st xccv1alpha1.ClusterSetStatus) xccv1alpha1.ClusterSet {
	return xccv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: name, Generation: gen}, Status: st}
}

// What is behind is listed under its object, with since when; an object
// whose last change the controller has not observed is not Ready; the
// last line names every object not Ready.
func TestReport(t *testing.T) {
	since := metav1.NewTime(t0)
	gds := []v1alpha1.GatewayDNS{
		gatewayDNS("web", 1, v1alpha1.GatewayDNSStatus{ObservedGeneration: 1, SelectedClusters: 2, ReadyClusters: 0, HealthyClusters: 2,
			Conditions: cond(metav1.ConditionFalse, "TargetUnreachable", "targets not answering"),
			Clusters: []v1alpha1.ClusterStatus{
				{Name: "cluster-a", Reason: "TargetUnreachable", Message: "records not in every target yet: cluster-b", Since: &since},
				{Name: "cluster-b", Reason: "ClusterUnreachable", Message: "serving last known records", Since: &since},
				{Name: "cluster-c", Reason: "Conflict", Message: "owned by an older GatewayDNS"},
			},
			Targets: []v1alpha1.TargetStatus{{Name: "cluster-b", Reason: "TargetUnreachable", Message: "has not answered", Since: since}}}),
		gatewayDNS("api", 2, v1alpha1.GatewayDNSStatus{ObservedGeneration: 2, SelectedClusters: 1, ReadyClusters: 1,
			Conditions: cond(metav1.ConditionTrue, "Published", "1 cluster(s) published"),
			Clusters:   []v1alpha1.ClusterStatus{{Name: "cluster-a", Ready: true, Reason: "Published"}}}),
		gatewayDNS("new", 3, v1alpha1.GatewayDNSStatus{ObservedGeneration: 2, Conditions: cond(metav1.ConditionTrue, "Published", "")}),
	}
	sets := []xccv1alpha1.ClusterSet{
		clusterSet("prod", 1, xccv1alpha1.ClusterSetStatus{ObservedGeneration: 1, SelectedClusters: 3, Members: 2, Exports: 4, Imports: 3,
			Conditions: cond(metav1.ConditionFalse, "Writing", "writes still running in: cluster-f"),
			Clusters: []xccv1alpha1.MemberStatus{
				{Name: "cluster-c", ClusterID: "east", Reason: xccv1alpha1.ReasonClusterIDConflict, Message: `held by member "cluster-a"`},
				{Name: "cluster-a", ClusterID: "east", Reason: xccv1alpha1.ReasonMember},
				{Name: "cluster-f", ClusterID: "cluster-f", Reason: xccv1alpha1.ReasonMember, Message: "writing: its API server has not finished the write yet"},
			}}),
	}
	r := Build(gds, sets)

	var names []string
	for _, g := range r.GatewayDNS {
		names = append(names, g.Name)
	}
	if want := []string{"dev-team/api", "dev-team/new", "dev-team/web"}; !reflect.DeepEqual(names, want) {
		t.Errorf("GatewayDNS %v, want %v", names, want)
	}
	web := r.GatewayDNS[2]
	var behind []string
	for _, p := range web.Behind {
		behind = append(behind, p.What+"="+p.Reason)
	}
	if want := []string{"cluster cluster-a=TargetUnreachable", "cluster cluster-b=ClusterUnreachable", "target cluster-b=TargetUnreachable"}; !reflect.DeepEqual(behind, want) {
		t.Errorf("web behind %v, want %v (a Conflict is another GatewayDNS's, not behind)", behind, want)
	}
	if r.GatewayDNS[1].Ready || r.GatewayDNS[1].Reason != "NotObserved" {
		t.Errorf("new: %+v, want not Ready until its generation is observed", r.GatewayDNS[1])
	}
	if got := len(r.ClusterSets[0].Behind); got != 2 {
		t.Errorf("prod behind %+v, want the refused and the writing member", r.ClusterSets[0].Behind)
	}
	if want := []string{"GatewayDNS dev-team/new", "GatewayDNS dev-team/web", "ClusterSet dev-team/prod"}; !reflect.DeepEqual(r.NotReady(), want) {
		t.Errorf("NotReady %v, want %v", r.NotReady(), want)
	}

	textHas(t, r, now,
		"dev-team/web", "target cluster-b: TargetUnreachable for 1m30s (since 2026-11-26T12:00:00Z)",
		"member cluster-c: ClusterIDConflict", `held by member "cluster-a"`, "writes still running in: cluster-f",
		"3 not Ready: GatewayDNS dev-team/new, GatewayDNS dev-team/web, ClusterSet dev-team/prod",
	)

	all := Build(gds[1:2], nil)
	textHas(t, all, now, "all 1 GatewayDNS and 0 ClusterSets Ready")
	if len(all.NotReady()) != 0 {
		t.Errorf("all Ready: NotReady %v", all.NotReady())
	}
}

// The exports in Conflict or not Valid are counted per member, the first
// few listed with their reason, read from what the controller keeps of
// the ClusterSet; a fact status could not read is said, not fatal.
func TestExportProblems(t *testing.T) {
	svc := func(port int32) *aggregate.Service {
		return &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: port}}}
	}
	kept := &state.ClusterSet{Members: map[string]state.MemberRead{
		"east": {Exports: []state.Export{{Namespace: "shop", Name: "web", Created: t0, Service: svc(80)}}},
		"west": {Exports: []state.Export{
			{Namespace: "shop", Name: "web", Created: t0.Add(time.Minute), Service: svc(8080)},
			{Namespace: "shop", Name: "a", Created: t0},
			{Namespace: "shop", Name: "b", Created: t0},
			{Namespace: "shop", Name: "c", Created: t0},
			{Namespace: "shop", Name: "d", Created: t0},
		}},
	}}
	cs := clusterSet("prod", 1, xccv1alpha1.ClusterSetStatus{ObservedGeneration: 1, Members: 2, Exports: 2, Imports: 1,
		Conditions: cond(metav1.ConditionTrue, "Written", ""),
		Clusters: []xccv1alpha1.MemberStatus{
			{Name: "cluster-a", ClusterID: "east", Reason: xccv1alpha1.ReasonMember},
			{Name: "cluster-b", ClusterID: "west", Reason: xccv1alpha1.ReasonMember},
		}})
	got, err := ExportProblems(cs, kept)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Member != "cluster-a" || got[0].Conflict != 1 || got[0].Invalid != 0 ||
		got[1].Member != "cluster-b" || got[1].Conflict != 1 || got[1].Invalid != 4 || len(got[1].First) != maxShownExports {
		t.Fatalf("export problems %+v", got)
	}
	if p := got[1].First[0]; p.Export != "shop/a" || p.Condition != "Valid" || p.Reason != "NoService" {
		t.Errorf("first problem of cluster-b %+v, want shop/a not Valid: NoService", p)
	}

	r := Build(nil, []xccv1alpha1.ClusterSet{cs})
	r.SetExports("dev-team/prod", got)
	r.Unread = append(r.Unread, "exports of ClusterSet dev-team/other: forbidden")
	text := textHas(t, r, now,
		"exports of member cluster-a: 1 in Conflict, 0 not Valid",
		"shop/web: Conflict (PortConflict)",
		"exports of member cluster-b: 1 in Conflict, 4 not Valid",
		"shop/a: not Valid (NoService)",
		"not read: exports of ClusterSet dev-team/other: forbidden",
		"all 0 GatewayDNS and 1 ClusterSets Ready",
	)
	if strings.Contains(text, "shop/d") {
		t.Errorf("text lists more than %d problems of a member:\n%s", maxShownExports, text)
	}
	if len(r.NotReady()) != 0 {
		t.Errorf("exports in conflict made %v not Ready: they are the tenants', not behind", r.NotReady())
	}
}

// textHas writes r as text at now and fails t for each of wants it
// lacks; it returns the text.
func textHas(t *testing.T, r Report, now time.Time, wants ...string) string {
	t.Helper()
	var out strings.Builder
	if err := r.WriteText(&out, now); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	return text
}

// While the controller's API discovery fails, an object it has never
// reconciled says so (its Ready condition, with the error) rather than
// NotObserved, which would hide why.
func TestReportDiscoveryFailing(t *testing.T) {
	failing := cond(metav1.ConditionFalse, xccv1alpha1.ReasonAPIDiscoveryFailed, "the controller reconciles nothing until the API discovery answers: 503")
	r := Build([]v1alpha1.GatewayDNS{gatewayDNS("gw", 1, v1alpha1.GatewayDNSStatus{Conditions: failing})},
		[]xccv1alpha1.ClusterSet{clusterSet("prod", 1, xccv1alpha1.ClusterSetStatus{Conditions: failing})})
	if g := r.GatewayDNS[0]; g.Ready || g.Reason != xccv1alpha1.ReasonAPIDiscoveryFailed {
		t.Errorf("GatewayDNS %+v; want not Ready, %s", g, xccv1alpha1.ReasonAPIDiscoveryFailed)
	}
	if s := r.ClusterSets[0]; s.Ready || s.Reason != xccv1alpha1.ReasonAPIDiscoveryFailed {
		t.Errorf("ClusterSet %+v; want not Ready, %s", s, xccv1alpha1.ReasonAPIDiscoveryFailed)
	}
	textHas(t, r, now, xccv1alpha1.ReasonAPIDiscoveryFailed, "until the API discovery answers: 503")
}
