package clusterset

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// hostileWriteImports is how many imports
// TestControllerClusterSetHostileWriteErrors fills: the fake clientsets'
// watches hold 100 events at most. e2e's MCSHostileWriteErrors fills
// 1,000 on real API servers.
const hostileWriteImports = 40

// A member answering every create with HTTP 500 and a message of
// megabytes costs the controller its errors' bounded text only: with
// 60 imports, the heap once the refused member has been written a few
// times is within 50 MiB of the same set whose member refuses with a
// short message, and the healthy member holds every import in both.
func TestControllerClusterSetHostileWriteErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the imports twice")
	}
	short := fillWithRefusingMember(t, 16)
	long := fillWithRefusingMember(t, 2<<20)
	t.Logf("heap with short refusals %d MiB, with 2 MiB refusals %d MiB; the healthy member filled in %s and %s",
		short.heap>>20, long.heap>>20, short.filled.Round(time.Millisecond), long.filled.Round(time.Millisecond))
	if long.heap > short.heap+50<<20 {
		t.Errorf("2 MiB refusals hold %d MiB more heap than short ones, want under 50 MiB", (long.heap-short.heap)>>20)
	}
}

// refusingRun is what fillWithRefusingMember measured.
type refusingRun struct {
	heap   uint64
	filled time.Duration
}

// fillWithRefusingMember exports hostileWriteImports Services from
// cluster-a into cluster-b, which refuses every create with HTTP 500 and
// a fresh message of size bytes, and cluster-c, which accepts them. It
// returns the heap in use (after a collection) once cluster-b has been
// refused at least three writes' worth, and how long cluster-c took to
// hold every import.
func fillWithRefusingMember(t *testing.T, size int) refusingRun {
	a, b, c := testfixture.NewMember(false, ""), testfixture.NewMember(false, ""), testfixture.NewMember(false, "")
	for i := range hostileWriteImports {
		addExport(t, a, "shop", fmt.Sprint("svc", i), fmt.Sprintf("10.244.%d.%d", i/250, i%250+1))
	}
	var refused atomic.Int64
	refuse := func(k8stesting.Action) (bool, runtime.Object, error) {
		refused.Add(1)
		msg := strings.Repeat("\x1b[2Jrefused ", size/12+1)[:size]
		return true, nil, apierrors.NewInternalError(fmt.Errorf("%s", msg))
	}
	b.PrependReactor("create", "*", refuse)
	b.MCS.PrependReactor("create", "*", refuse)
	sel := map[string]string{"set": "prod"}
	start := time.Now()
	e := newTestEnvClients(t,
		[]runtime.Object{testfixture.KubeconfigSecret("cluster-a", "ka"), testfixture.KubeconfigSecret("cluster-b", "kb"),
			testfixture.KubeconfigSecret("cluster-c", "kc")},
		[]runtime.Object{testfixture.CAPICluster("cluster-a", sel, ""), testfixture.CAPICluster("cluster-b", sel, ""),
			testfixture.CAPICluster("cluster-c", sel, ""), testfixture.ClusterSetObject("prod")},
		nil, map[string]workload.Client{"ka": a, "kb": b, "kc": c})
	var run refusingRun
	if err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		list, err := c.MCS.MulticlusterV1beta1().ServiceImports("shop").List(e.ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == hostileWriteImports, nil
	}); err != nil {
		t.Fatalf("cluster-c does not hold every import: %v", err)
	}
	run.filled = time.Since(start)
	// Three writes of cluster-b refused whole: the lane backs it off, so
	// each further one is asked for.
	for want := refused.Load() + 3*hostileWriteImports; refused.Load() < want; {
		e.rec.Add("dev-team/prod")
		time.Sleep(200 * time.Millisecond)
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("cluster-b refused %d creates, want %d", refused.Load(), want)
		}
	}
	// Measured once no refusal is in flight: each holds its message, in
	// the reactor and the error, until its call returns.
	for last := int64(-1); last != refused.Load(); time.Sleep(time.Second) {
		last = refused.Load()
	}
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	run.heap = ms.HeapAlloc
	e.stop()
	return run
}
