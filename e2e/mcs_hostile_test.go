package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// Settings of testMCSHostileRefusals.
const (
	// hostileRefusalBytes is the size of each refusal's message.
	hostileRefusalBytes = 2 << 20
	// hostileRefusedExports are the exports the member refuses at each
	// write, besides the troubled set's own.
	hostileRefusedExports = 150
	// hostileHeapBudget is the most the controller's live heap may grow
	// while the member refuses.
	hostileHeapBudget = 50 << 20
)

// testMCSHostileRefusals: as MCSRefusingMember, with cluster-h's API
// server calling an admission webhook that refuses every create and
// update of the controller's objects with a 2 MiB message full of
// escape sequences (what a member's admin can do), and 150 more exports
// for it to refuse at each write. The controller keeps of each refusal
// its cut text only: its live heap grows by less than 50 MiB over
// several refused writes, the member's status entry is short and free of
// escapes, and the other members get exports and unexports within twice
// their healthy times.
func testMCSHostileRefusals(t *testing.T) {
	const config = "hostile-xcc-dns"
	s := newTroubledSet(t, "hostile", "hostile", "xcc-hostile-test", "cluster-h")
	healthyIn, healthyOut := s.healthy()
	s.gatewayDNSResolves()
	heapBefore, _, err := controllerMemory(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := lab.StartSlowWebhook(filepath.Join(theLab.Dir, "hostile-webhook"), 0)
	if err != nil {
		t.Fatal(err)
	}
	hook.RefuseBytes = hostileRefusalBytes
	t.Cleanup(hook.Close)
	// MCSRefusingMember shows a member holding its imports again once
	// it stops refusing; here that would wait out 150 imports' backoffs.
	s.registerWebhook(hook, config, 10, admissionregistrationv1.Fail, false)
	// The member is to hold an import of each: every write asks it
	// again, each import on its own backoff.
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for i := range hostileRefusedExports {
			if err := lab.DeleteExportedService(ctx, s.a, s.ns, fmt.Sprint("bulk", i)); err != nil {
				t.Error(err)
			}
		}
	})
	for i := range hostileRefusedExports {
		e := lab.ExportedService{Namespace: s.ns, Name: fmt.Sprint("bulk", i), Ports: httpPort,
			Pods: []lab.HeadlessPod{{Address: fmt.Sprintf("198.51.100.%d", 10+i%200), Ready: true}}}
		if err := lab.CreateExportedService(s.ctx, s.a, e); err != nil {
			t.Fatal(err)
		}
	}
	s.troubled("refusing with 2 MiB messages", healthyIn, healthyOut, func() {
		// Past 64 KiB the API server's answer is not read at all
		// (workload.MaxErrorBody): the entry says so, with its code.
		entry, _ := s.waitMemberStatus("the cut refusal", func(entry, ready string) bool {
			return strings.Contains(entry, "write failed") && strings.Contains(entry, "HTTP 403 with a body of more than")
		})
		if len(entry) > 8<<10 || strings.Contains(entry, "\x1b") {
			t.Errorf("%s's status entry is %d bytes, escapes in it: %.300q", s.m.Name, len(entry), entry)
		}
		began := len(hook.Calls())
		deadline := time.Now().Add(3 * time.Minute)
		for len(hook.Calls())-began < 2*hostileRefusedExports && time.Now().Before(deadline) {
			time.Sleep(time.Second)
		}
		heapAfter, rss, err := controllerMemory(s.ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d refusals of %d bytes: controller live heap %d MiB -> %d MiB, resident %d MiB",
			len(hook.Calls())-began, hostileRefusalBytes, heapBefore>>20, heapAfter>>20, rss>>20)
		if len(hook.Calls())-began < 2*hostileRefusedExports {
			t.Errorf("the webhook refused %d writes in 3 minutes, want %d", len(hook.Calls())-began, 2*hostileRefusedExports)
		}
		if heapAfter-heapBefore > hostileHeapBudget {
			t.Errorf("the controller's live heap grew by %d MiB while %s refused with %d-byte messages, want under %d MiB",
				(heapAfter-heapBefore)>>20, s.m.Name, hostileRefusalBytes, hostileHeapBudget>>20)
		}
	})
}
