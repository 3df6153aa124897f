package clusterset

import (
	"strings"
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
// while its lane waits out the backoff before the next write, when no
// write of it runs. It is never said to be "writing", which names a
// member whose API server has not answered yet.
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

// errorString is an error of a fixed text.
type errorString string

func (e errorString) Error() string { return string(e) }
