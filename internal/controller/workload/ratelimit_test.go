package workload

import (
	"maps"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/kubeconfig"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// The clients of one workload cluster share one rate limiter: the
// cluster gets at most clientQPS requests a second of every kind
// together, and a write that goes kind by kind gets all of it.
func TestClientsShareOneRateLimiter(t *testing.T) {
	c, err := NewClientFromKubeconfig(testfixture.NewHostileAPIServer(t, testfixture.HangingWatch).Kubeconfig, kubeconfig.Policy{}, 0, Requests{})
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*typedClient)
	core := tc.core.RESTClient().GetRateLimiter()
	if core == nil || tc.discovery.RESTClient().GetRateLimiter() != core || tc.mcs.RESTClient().GetRateLimiter() != core {
		t.Error("the cluster's clients have limiters of their own")
	}
	if got := core.QPS(); got != clientQPS {
		t.Errorf("limiter at %v requests/s, want %d", got, clientQPS)
	}
}

// Every request of a workload client is reported with its answer's
// class, and so is its wait for the cluster's limiter.
func TestClientReportsRequests(t *testing.T) {
	var mu sync.Mutex
	answers := map[string]int{}
	waits := 0
	obs := Requests{
		Done: func(method, class string) {
			mu.Lock()
			defer mu.Unlock()
			answers[method+" "+class]++
		},
		Throttled: func(time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			waits++
		},
	}
	c, err := NewClientFromKubeconfig(testfixture.NewHostileAPIServer(t, testfixture.HangingWatch).Kubeconfig, kubeconfig.Policy{}, 0, obs)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.CoreV1().Services("a").List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]int{"GET 2xx": 3}; !maps.Equal(answers, want) {
		t.Errorf("answers %v, want %v", answers, want)
	}
	if waits != 3 {
		t.Errorf("%d waits for the limiter reported, want 3", waits)
	}
}

func TestAnswerClass(t *testing.T) {
	for code, want := range map[int]string{200: AnswerOK, 201: AnswerOK, 304: AnswerRedirect, 404: AnswerRefused, 409: AnswerRefused,
		429: AnswerThrottled, 500: AnswerFailed, 503: AnswerFailed, 0: AnswerNone, 99: AnswerNone, 600: AnswerNone, 999: AnswerNone} {
		if got := AnswerClass(code); got != want {
			t.Errorf("AnswerClass(%d) = %s, want %s", code, got, want)
		}
	}
}
