package clusterset

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// A member that refuses every ServiceImport (an admission policy) is
// said to have failed, with the refusal, for as long as it refuses: also
// while the refused import waits out its own backoff (apply.Settled),
// when no write of it runs. It is never said to be "writing", which names
// a member whose API server has not answered yet.
func TestControllerClusterSetRefusingMemberSaysWhy(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	const refusal = "denied request: this member refuses the controller's objects"
	b.MCS.PrependReactor("create", "serviceimports", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "multicluster.x-k8s.io", Resource: "serviceimports"}, "web", errorString(refusal))
	})
	e := twoMembers(t, a, b)
	entry := func() (string, string) {
		st := clusterSetStatusOf(e.ctx, t, e, "prod")
		var msg string
		for _, c := range st.Clusters {
			if c.Name == "cluster-b" {
				msg = c.Message
			}
		}
		reason := ""
		if cond := meta.FindStatusCondition(st.Conditions, "Ready"); cond != nil {
			reason = cond.Reason
		}
		return msg, reason
	}
	testfixture.Eventually(t, "the ClusterSet says cluster-b refused", func() bool {
		msg, reason := entry()
		return strings.HasPrefix(msg, "write failed") && strings.Contains(msg, refusal) && reason == ReasonWriteFailed
	})
	// The lane's backoff grows from 1 s: the status is read across a few
	// writes and the waits between them.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if msg, reason := entry(); !strings.Contains(msg, refusal) || reason != ReasonWriteFailed {
			t.Fatalf("the ClusterSet says of cluster-b %q, Ready reason %s; want the refusal and %s", msg, reason, ReasonWriteFailed)
		}
	}
}

// A member that refuses the clusterset's DNS slices (a quota on
// EndpointSlices in the slice namespace) answered: the refusal is its
// status, and its lane is not backed off, so the next sync writes it
// again at once instead of after a backoff. Only a member that does not
// answer (or fails itself) is backed off.
func TestControllerClusterSetRefusalDoesNotBackOff(t *testing.T) {
	a, b := testfixture.NewMember(true, "10.244.1.5"), testfixture.NewMember(false, "")
	const refusal = "exceeded quota: endpointslices"
	var tries atomic.Int32
	b.PrependReactor("create", "endpointslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != testfixture.SliceNamespace {
			return false, nil, nil
		}
		tries.Add(1)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "x", errorString(refusal))
	})
	e := twoMembers(t, a, b)
	testfixture.Eventually(t, "the ClusterSet says cluster-b refused its slices", func() bool {
		for _, c := range clusterSetStatusOf(e.ctx, t, e, "prod").Clusters {
			if c.Name == "cluster-b" && strings.Contains(c.Message, refusal) {
				return true
			}
		}
		return false
	})
	// Syncs in a row, well within the lane's first backoff (1 s): each
	// writes cluster-b again.
	before := tries.Load()
	for i := 0; i < 5; i++ {
		e.rec.Add("dev-team/prod")
		time.Sleep(100 * time.Millisecond)
	}
	if n := tries.Load() - before; n < 3 {
		t.Errorf("cluster-b's slices tried %d times in 5 syncs: its lane was backed off for a refusal", n)
	}
}

// errorString is an error of a fixed text.
type errorString string

func (e errorString) Error() string { return string(e) }
