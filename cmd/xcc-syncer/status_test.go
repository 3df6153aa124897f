package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/state"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/overview"
)

// chartBinding is the management chart's ClusterRoleBinding of release
// name, installed in namespace: it binds the controller's
// ServiceAccount there.
func chartBinding(name, namespace string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-controller", Labels: map[string]string{"app.kubernetes.io/name": "xcc-dns-management", "app.kubernetes.io/instance": name}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name + "-controller"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: namespace}},
	}
}

// prodSet is a ClusterSet with two members, and what the controller
// keeps of it: one export in conflict in each member.
func prodSet(t *testing.T, client *fake.Clientset, stateNamespace string) xccv1alpha1.ClusterSet {
	t.Helper()
	svc := func(port int32) *aggregate.Service {
		return &aggregate.Service{Type: aggregate.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: []aggregate.Port{{Name: "http", Protocol: "TCP", Port: port}}}
	}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	kept := state.ClusterSet{Members: map[string]state.MemberRead{
		"east": {Exports: []state.Export{{Namespace: "shop", Name: "web", Created: t0, Service: svc(80)}}},
		"west": {Exports: []state.Export{{Namespace: "shop", Name: "web", Created: t0.Add(time.Minute), Service: svc(8080)}}},
	}}
	if _, err := (&state.ConfigMaps{Client: client, Namespace: stateNamespace}).SaveClusterSet(context.Background(), "dev-team/prod", kept); err != nil {
		t.Fatal(err)
	}
	return xccv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "prod", Generation: 1},
		Status: xccv1alpha1.ClusterSetStatus{ObservedGeneration: 1, Members: 2, Exports: 2, Imports: 1,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Written"}},
			Clusters: []xccv1alpha1.MemberStatus{
				{Name: "cluster-a", ClusterID: "east", Reason: xccv1alpha1.ReasonMember},
				{Name: "cluster-b", ClusterID: "west", Reason: xccv1alpha1.ReasonMember},
			}}}
}

// status finds the controller's state where the management chart put
// it, the release namespace, which its ClusterRoleBinding names; and
// when the state is in no namespace it looks in, it fails naming the
// namespace instead of reporting no export problem.
func TestStatusFindsTheState(t *testing.T) {
	for _, tc := range []struct {
		name     string
		objects  []runtime.Object
		flag     string
		forbid   bool
		state    string // where the controller keeps it
		err      string // of finding the namespace or reading the state
		conflict bool   // the export problems read
	}{
		{name: "chart in its release namespace", objects: []runtime.Object{chartBinding("mgmt", "platform-dns")}, state: "platform-dns", conflict: true},
		{name: "the flag wins", objects: []runtime.Object{chartBinding("mgmt", "platform-dns")}, flag: "other", state: "other", conflict: true},
		{name: "no chart: the default", state: "xcc-dns", conflict: true},
		{name: "state elsewhere, flag given", flag: "xcc-dns", state: "platform-dns",
			err: "no state of the 1 ClusterSets with members in namespace xcc-dns (--state-namespace)"},
		{name: "state elsewhere, bindings unreadable", forbid: true, state: "platform-dns",
			err: "no state of the 1 ClusterSets with members in namespace xcc-dns (the default: the management chart's ClusterRoleBinding could not be read: "},
		{name: "two charts", objects: []runtime.Object{chartBinding("a", "ns-a"), chartBinding("b", "ns-b")}, state: "ns-a",
			err: "the management chart's controller runs in several namespaces (ns-a, ns-b): pass --state-namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objects...)
			if tc.forbid {
				client.PrependReactor("list", "clusterrolebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errForbidden("clusterrolebindings")
				})
			}
			sets := []xccv1alpha1.ClusterSet{prodSet(t, client, tc.state)}
			report := overview.Build(nil, sets)
			err := readStateExports(context.Background(), &report, sets, client, tc.flag)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(report.Unread) > 0 {
				t.Fatalf("err %v, unread %q", err, report.Unread)
			}
			if got := report.ClusterSets[0].ExportProblems; tc.conflict && (len(got) != 2 || got[0].Conflict != 1) {
				t.Errorf("export problems %+v, want one conflict in each member", got)
			}
		})
	}
}

// A ClusterSet without members keeps no state: none found is no error,
// and one set of several without its state is said on its own line.
func TestStatusStateMissingForOneSet(t *testing.T) {
	client := fake.NewClientset(chartBinding("mgmt", "platform-dns"))
	prod := prodSet(t, client, "platform-dns")
	lost := prod
	lost.Name = "lost"
	empty := xccv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "empty"}}
	sets := []xccv1alpha1.ClusterSet{prod, lost, empty}
	report := overview.Build(nil, sets)
	if err := readStateExports(context.Background(), &report, sets, client, ""); err != nil {
		t.Fatal(err)
	}
	want := "the exports of ClusterSet dev-team/lost: no state kept in namespace platform-dns (the namespace of the management chart's controller, from its ClusterRoleBinding)"
	if got := strings.Join(report.Unread, "\n"); got != want {
		t.Errorf("unread %q, want %q", got, want)
	}
}

func errForbidden(resource string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: resource}, "", errors.New("not allowed"))
}
