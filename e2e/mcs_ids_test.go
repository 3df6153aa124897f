package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// idChangeWait bounds how long a changed ClusterProperty takes to be
// seen: the controller reads it again at a sync once its last read is a
// minute old (workload.PropertyRefresh).
const idChangeWait = 3 * time.Minute

// testMCSClusterIDs: a ClusterSet of cluster-a (the older Cluster) and
// cluster-b, each exporting a Service. cluster-a's ClusterProperty then
// asks for cluster-b's id: cluster-a is refused (ClusterIDConflict),
// cluster-b keeps its id and imports, and nothing of cluster-a's stays
// in either. Given back its own id, cluster-a is a member again; then
// cluster-b asks for cluster-a's, and is refused the same way. Deleting
// the ClusterSet leaves no import in either member.
func testMCSClusterIDs(t *testing.T) {
	ctx := ctxFor(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	const set, ns, label = "ids", "ids", "xcc-ids-test"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		for _, w := range []*lab.Cluster{a, b} {
			if err := lab.SetClusterIDProperty(ctx, w, ""); err != nil {
				t.Error(err)
			}
			if err := lab.LabelCluster(ctx, mgmt, w.Name, label, ""); err != nil {
				t.Error(err)
			}
		}
		for w, name := range map[*lab.Cluster]string{a: "api", b: "web"} {
			if err := lab.DeleteExportedService(ctx, w, ns, name); err != nil {
				t.Error(err)
			}
		}
	})
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	for w, s := range map[*lab.Cluster]lab.ExportedService{
		a: {Namespace: ns, Name: "api", Ports: httpPort, Pods: []lab.HeadlessPod{{Address: "198.51.100.161", Ready: true}}},
		b: {Namespace: ns, Name: "web", Ports: httpPort, Pods: []lab.HeadlessPod{{Address: "198.51.100.162", Ready: true}}},
	} {
		if err := lab.CreateExportedService(ctx, w, s); err != nil {
			t.Fatal(err)
		}
		if err := lab.LabelCluster(ctx, mgmt, w.Name, label, "true"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetSelecting(set, label, "true")); err != nil {
		t.Fatal(err)
	}
	importsFrom := func(from string) func(*lab.Import) bool {
		return func(i *lab.Import) bool { return len(i.Clusters) == 1 && i.Clusters[0] == from }
	}
	bothMembers := func() {
		waitImport(t, a, ns, "web", importsFrom(lab.ClusterB))
		waitImport(t, b, ns, "api", importsFrom(lab.ClusterA))
	}
	bothMembers()

	for _, tc := range []struct{ thief, owner *lab.Cluster }{{a, b}, {b, a}} {
		if err := lab.SetClusterIDProperty(ctx, tc.thief, tc.owner.Name); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		waitMembers(t, set, map[string]string{tc.thief.Name: "ClusterIDConflict:" + tc.owner.Name, tc.owner.Name: "Member:" + tc.owner.Name})
		t.Logf("%s asked for %s's id: refused after %s", tc.thief.Name, tc.owner.Name, time.Since(began).Round(time.Second))
		// The thief's export leaves the owner, the owner's import the thief.
		thiefExport := map[*lab.Cluster]string{a: "api", b: "web"}
		waitImport(t, tc.owner, ns, thiefExport[tc.thief], nil)
		waitImport(t, tc.thief, ns, thiefExport[tc.owner], nil)

		if err := lab.SetClusterIDProperty(ctx, tc.thief, ""); err != nil {
			t.Fatal(err)
		}
		waitMembers(t, set, map[string]string{tc.thief.Name: "Member:" + tc.thief.Name, tc.owner.Name: "Member:" + tc.owner.Name})
		bothMembers()
	}

	if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*lab.Cluster{a, b} {
		for _, name := range []string{"api", "web"} {
			waitImport(t, w, ns, name, nil)
		}
	}
}

// waitMembers waits until the ClusterSet's status gives each Cluster of
// want its "reason:clusterID", touching the ClusterSet every few seconds:
// a ClusterProperty is read again only at a sync.
func waitMembers(t *testing.T, set string, want map[string]string) {
	t.Helper()
	ctx := ctxFor(t)
	sets := theLab.Management.Dynamic.Resource(lab.ClusterSetGVR).Namespace(lab.ClusterNamespace)
	var got map[string]string
	for end, n := time.Now().Add(idChangeWait), 0; ; n++ {
		got = map[string]string{}
		u, err := sets.Get(ctx, set, metav1.GetOptions{})
		if err == nil {
			entries, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
			for _, e := range entries {
				m, _ := e.(map[string]any)
				name, _ := m["name"].(string)
				got[name] = fmt.Sprintf("%v:%v", m["reason"], m["clusterID"])
			}
		}
		done := true
		for c, w := range want {
			done = done && got[c] == w
		}
		if done {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("ClusterSet %s members %v, want %v within %s", set, got, want, idChangeWait)
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"xcc-dns.io/e2e-nudge":"%d"}}}`, n)
		if _, err := sets.Patch(ctx, set, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
	}
}
