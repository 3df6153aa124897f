package mgmt

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// 200 Clusters whose writes failed keep a lane each (its backoff) while
// they exist; once they are deleted from the management cluster, none is
// left.
func TestEngineForgetsTheLanesOfDeletedClusters(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gvr := schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	var objs []runtime.Object
	for i := range 200 {
		objs = append(objs, testfixture.CAPICluster(fmt.Sprint("c", i), nil, ""))
	}
	dyn := testfixture.FakeManagement(ctx, t, gvr, objs)
	e := NewEngine(EngineConfig{Dynamic: dyn, Kube: fake.NewClientset(), ClusterResource: gvr, Resync: time.Hour,
		SliceNamespace: "xcc-dns", EnqueueIn: func(string) {}, OnService: func([]string) {}})
	e.Start(ctx)
	t.Cleanup(e.Stop)
	if !cache.WaitForCacheSync(ctx.Done(), e.Synced()...) {
		t.Fatal("caches did not sync")
	}
	var writes []*lane.Write
	for i := range 200 {
		writes = append(writes, e.Lanes.Submit(fmt.Sprint("dev-team/c", i), "set", func(context.Context) error {
			return errors.New("refused")
		}, nil))
	}
	e.Lanes.Wait(ctx, writes)
	if n := e.Lanes.Len(); n != 200 {
		t.Fatalf("%d lanes after 200 failed writes, want 200", n)
	}
	// In fifties: the fake's watch holds 100 events at most.
	for i := range 200 {
		if err := dyn.Resource(gvr).Namespace("dev-team").Delete(ctx, fmt.Sprint("c", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if left := 200 - i - 1; left%50 == 0 {
			testfixture.Eventually(t, fmt.Sprint(left, " lanes left"), func() bool { return e.Lanes.Len() == left })
		}
	}
}
