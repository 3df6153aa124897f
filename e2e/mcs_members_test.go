package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// What the controller holds to, as the tests below rely on it.
const (
	// controllerRequestTimeout is the controller's deadline of one call
	// into a member (workload.RequestTimeout).
	controllerRequestTimeout = 10 * time.Second
	// controllerMaxBackoff is the longest a member's lane waits after a
	// failed write (lane.DefaultMaxBackoff): a member that refused for a
	// while holds its imports again at most that long after it stops.
	controllerMaxBackoff = 2 * time.Minute
	// notAnswering is the start of apply.ErrNotAnswering's text.
	notAnswering = "the member's API server did not answer in time"
	// podGracePeriod is how long the kubelet waits after SIGTERM before
	// SIGKILL: the management chart sets no terminationGracePeriodSeconds,
	// so Kubernetes' default.
	podGracePeriod = 30 * time.Second
	// memberSlack is the noise of one timing of an export or unexport
	// seen in cluster-b's DNS: the poll and the zone's 5 s negative cache.
	memberSlack = 6 * time.Second
	// importSlack is the noise of one timing of the ServiceImport in
	// cluster-b: the 100 ms poll and a sync's wait of 500 ms for its
	// writes. Far less than the controller's deadline of a call: a sync
	// that waited for a slow member would show.
	importSlack = 2 * time.Second
)

// timing is how long a change took to show in cluster-b: its
// ServiceImport, and its cluster DNS's answer.
type timing struct{ imp, dns time.Duration }

func (t timing) String() string {
	return fmt.Sprintf("%s (ServiceImport %s)", t.dns.Round(10*time.Millisecond), t.imp.Round(10*time.Millisecond))
}

// within reports whether t took at most twice healthy, and the slack of
// each figure.
func (t timing) within(healthy timing) bool {
	return t.imp <= 2*healthy.imp+importSlack && t.dns <= 2*healthy.dns+memberSlack
}

// troubledSet is a ClusterSet of cluster-a, cluster-b and a third member
// (an API server AddMember starts) that a test makes misbehave; exports
// are made in cluster-a and timed in cluster-b.
type troubledSet struct {
	t               *testing.T
	ctx             context.Context
	name, ns, label string
	a, b, m         *lab.Cluster
	dnsB            string
}

// newTroubledSet starts the member and makes the set; its cleanup takes
// both away (cleanups a test adds after run first).
func newTroubledSet(t *testing.T, set, ns, label, member string) *troubledSet {
	t.Helper()
	requireDNS(t)
	ctx := ctxFor(t)
	// The GatewayDNS path is checked to go on meanwhile, also when the
	// test runs alone.
	if err := theLab.ApplyWalkthrough(ctx); err != nil {
		t.Fatalf("apply the walkthrough: %v", err)
	}
	s := &troubledSet{t: t, ctx: ctx, name: set, ns: ns, label: label,
		a: theLab.Workload(lab.ClusterA), b: theLab.Workload(lab.ClusterB), dnsB: theLab.DNS[lab.ClusterB].ClusterDNSAddr}
	mgmt := theLab.Management
	m, err := theLab.AddMember(ctx, member, label, "true")
	if m != nil {
		s.m = m
		t.Cleanup(func() {
			m.Thaw()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
				t.Error(err)
			}
			for _, c := range []string{lab.ClusterA, lab.ClusterB} {
				if err := lab.LabelCluster(ctx, mgmt, c, label, ""); err != nil {
					t.Error(err)
				}
			}
			for _, n := range []string{"one", "two", "three"} {
				if err := lab.DeleteExportedService(ctx, s.a, ns, n); err != nil {
					t.Error(err)
				}
			}
			if err := theLab.RemoveMember(ctx, m); err != nil {
				t.Error(err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{lab.ClusterA, lab.ClusterB} {
		if err := lab.LabelCluster(ctx, mgmt, c, label, "true"); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []*lab.Cluster{s.b, m} {
		if err := lab.EnsureNamespace(ctx, w, ns); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetSelecting(set, label, "true")); err != nil {
		t.Fatal(err)
	}
	return s
}

// export creates the exported Service name in cluster-a and returns when.
func (s *troubledSet) export(name, addr string) time.Time {
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	e := lab.ExportedService{Namespace: s.ns, Name: name, Ports: httpPort, Pods: []lab.HeadlessPod{{Address: addr, Ready: true}}}
	if err := lab.CreateExportedService(s.ctx, s.a, e); err != nil {
		s.t.Fatal(err)
	}
	return time.Now()
}

// arrives is how long after since the import name reaches cluster-b and
// its cluster DNS answers the ClusterSetIP.
func (s *troubledSet) arrives(name string, since time.Time) timing {
	imp := waitImport(s.t, s.b, s.ns, name, func(i *lab.Import) bool { return len(i.IPs) > 0 })
	t := timing{imp: time.Since(since)}
	expect(s.t, s.dnsB, lab.ClusterSetHost(s.ns, name), dns.TypeA, dns.RcodeSuccess, imp.IPs...)
	t.dns = time.Since(since)
	return t
}

// leaves unexports name and returns how long until cluster-b has no
// import of it and its DNS says the name does not exist.
func (s *troubledSet) leaves(name string) timing {
	began := time.Now()
	if err := lab.Unexport(s.ctx, s.a, s.ns, name); err != nil {
		s.t.Fatal(err)
	}
	waitImport(s.t, s.b, s.ns, name, nil)
	t := timing{imp: time.Since(began)}
	expect(s.t, s.dnsB, lab.ClusterSetHost(s.ns, name), dns.TypeA, dns.RcodeNameError)
	t.dns = time.Since(began)
	return t
}

// healthy times an export ("one") and its unexport with every member
// healthy, the third member holding the import in between.
func (s *troubledSet) healthy() (in, out timing) {
	in = s.arrives("one", s.export("one", "198.51.100.161"))
	waitImport(s.t, s.m, s.ns, "one", func(i *lab.Import) bool { return len(i.IPs) > 0 })
	out = s.leaves("one")
	s.t.Logf("every member healthy: an export reached cluster-b in %s, an unexport left it in %s", in, out)
	return in, out
}

// troubled times a new export ("two"), then exports "one" again and
// times its unexport, and fails if either took more than twice its
// healthy time and the slack (importSlack for the ServiceImport,
// memberSlack for the DNS answer). check runs between, while the member
// still misbehaves.
func (s *troubledSet) troubled(what string, healthyIn, healthyOut timing, check func()) {
	in := s.arrives("two", s.export("two", "198.51.100.162"))
	if err := lab.Export(s.ctx, s.a, s.ns, "one"); err != nil {
		s.t.Fatal(err)
	}
	s.arrives("one", time.Now())
	check()
	out := s.leaves("one")
	s.t.Logf("%s %s: an export reached cluster-b in %s, an unexport left it in %s", s.m.Name, what, in, out)
	if !in.within(healthyIn) {
		s.t.Errorf("with %s %s an export took %s to reach cluster-b, healthy %s", s.m.Name, what, in, healthyIn)
	}
	if !out.within(healthyOut) {
		s.t.Errorf("with %s %s an unexport took %s to leave cluster-b, healthy %s", s.m.Name, what, out, healthyOut)
	}
}

// gatewayDNSResolves checks that cluster-b's DNS answers the
// walkthrough's name of cluster-a's gateway.
func (s *troubledSet) gatewayDNSResolves() {
	expect(s.t, s.dnsB, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess, theLab.Gateways[lab.ClusterA].IPs...)
}

// memberStatus is the ClusterSet's entry of the member and its Ready
// condition, as "reason: message".
func (s *troubledSet) memberStatus() (entry, ready string, err error) {
	u, err := theLab.Management.Dynamic.Resource(lab.ClusterSetGVR).Namespace(lab.ClusterNamespace).Get(s.ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if m["name"] == s.m.Name {
			entry = fmt.Sprintf("%v", m["message"])
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			ready = fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return entry, ready, nil
}

// waitMemberStatus waits until the member's entry in the ClusterSet's
// status and its Ready condition satisfy ok, and returns them.
func (s *troubledSet) waitMemberStatus(what string, ok func(entry, ready string) bool) (string, string) {
	s.t.Helper()
	deadline := time.Now().Add(answerTimeout)
	for {
		entry, ready, err := s.memberStatus()
		if err == nil && ok(entry, ready) {
			s.t.Logf("ClusterSet %s: %s: %q; Ready %q", s.name, s.m.Name, entry, ready)
			return entry, ready
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ClusterSet %s: %s: %q, Ready %q (err %v): does not say %s within %s", s.name, s.m.Name, entry, ready, err, what, answerTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// registerWebhook registers hook in the member as config; at the test's
// end it is unregistered and, with recovers, the member is waited for to
// hold its import again.
func (s *troubledSet) registerWebhook(hook *lab.SlowWebhook, config string, timeoutSeconds int32,
	policy admissionregistrationv1.FailurePolicyType, recovers bool) {
	s.t.Helper()
	if err := hook.Register(s.ctx, s.m, config, timeoutSeconds, policy); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), controllerMaxBackoff+2*time.Minute)
		defer cancel()
		if err := hook.Unregister(ctx, s.m, config); err != nil {
			s.t.Error(err)
			return
		}
		if !recovers {
			return
		}
		if err := s.waitMemberHolds(ctx); err != nil {
			s.t.Error(err)
		}
	})
}

// waitMemberHolds waits until the member holds the import "two" again,
// syncing the set every few seconds (a nudge), at most the lane's longest
// backoff and a minute.
func (s *troubledSet) waitMemberHolds(ctx context.Context) error {
	sets := theLab.Management.Dynamic.Resource(lab.ClusterSetGVR).Namespace(lab.ClusterNamespace)
	began := time.Now()
	limit := controllerMaxBackoff + time.Minute
	for n := 0; ; n++ {
		imp, err := lab.GetImport(ctx, s.m, s.ns, "two")
		if err == nil && imp != nil && len(imp.IPs) > 0 {
			s.t.Logf("%s holds the import again %s after it stopped misbehaving", s.m.Name, time.Since(began).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(began) > limit {
			if err != nil {
				return fmt.Errorf("%s holds no import %s/two %s after it stopped misbehaving: %w", s.m.Name, s.ns, limit, err)
			}
			return fmt.Errorf("%s holds no import %s/two %s after it stopped misbehaving (last %+v)", s.m.Name, s.ns, limit, imp)
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"xcc-dns.io/e2e-nudge":"%d"}}}`, n)
		if _, err := sets.Patch(ctx, s.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
}

// testMCSRefusingMember: a ClusterSet of cluster-a, cluster-b and
// cluster-r, whose API server refuses every create and update of the
// controller's objects (a ValidatingAdmissionPolicy, no webhook). A new
// export of cluster-a reaches cluster-b, and an unexport leaves it,
// within twice the time they take with every member healthy (and
// memberSlack); the ClusterSet's status says why cluster-r has nothing,
// the walkthrough's GatewayDNS name resolves meanwhile, and once the
// policy is gone cluster-r gets its imports.
func testMCSRefusingMember(t *testing.T) {
	const policy = "refuse-xcc-dns"
	if err := theLab.ApplyWalkthrough(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	s := newTroubledSet(t, "refusing", "refusing", "xcc-refusing-test", "cluster-r")
	healthyIn, healthyOut := s.healthy()
	s.gatewayDNSResolves()

	if err := lab.RefuseControllerWrites(s.ctx, s.m, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), controllerMaxBackoff+2*time.Minute)
		defer cancel()
		if err := lab.AllowControllerWrites(ctx, s.m, policy); err != nil {
			t.Error(err)
			return
		}
		if err := s.waitMemberHolds(ctx); err != nil {
			t.Error(err)
		}
	})
	s.troubled("refusing the controller's objects", healthyIn, healthyOut, func() {
		// The write of cluster-r failed, and its entry says why: the
		// policy's own message, not that it is being written.
		s.waitMemberStatus("the refusal", func(entry, ready string) bool {
			return strings.Contains(entry, "write failed") && strings.Contains(entry, lab.RefusalMessage) &&
				strings.HasPrefix(ready, "WriteFailed:") && strings.Contains(ready, s.m.Name)
		})
		if imp, err := lab.GetImport(s.ctx, s.m, s.ns, "two"); err != nil || imp != nil {
			t.Errorf("%s holds the import %s/two (%+v, %v) although it refuses it", s.m.Name, s.ns, imp, err)
		}
		s.gatewayDNSResolves()
	})
}

// Settings of the slow member's webhook.
const (
	// slowWebhookDelay is how long the webhook takes per review: the
	// longest timeout a kube-apiserver allows a webhook.
	slowWebhookDelay   = 30 * time.Second
	slowWebhookTimeout = int32(30)
)

// testMCSSlowMember: as MCSRefusingMember, with cluster-s's API server
// calling an admission webhook that takes 30 s per create or update of
// the controller's objects (timeoutSeconds 30, the most it allows;
// failurePolicy Ignore, so the webhook only delays a write and never
// refuses it: the member is slow, not refusing). The controller gives
// each call 10 s, so its own deadline comes first: the call trips
// apply.ErrNotAnswering and the rest of that write is not sent. The
// webhook is called once per write at most (the calls are at least the
// deadline apart: one write at a time, one call of it), the status says
// the member is being written or did not answer, the other members get
// exports and unexports within twice their healthy times, and the
// walkthrough's GatewayDNS name resolves meanwhile.
func testMCSSlowMember(t *testing.T) {
	const config = "slow-xcc-dns"
	if err := theLab.ApplyWalkthrough(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	s := newTroubledSet(t, "slow", "slow", "xcc-slow-test", "cluster-s")
	healthyIn, healthyOut := s.healthy()
	s.gatewayDNSResolves()

	hook, err := lab.StartSlowWebhook(filepath.Join(theLab.Dir, "slow-webhook"), slowWebhookDelay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hook.Close)
	s.registerWebhook(hook, config, slowWebhookTimeout, admissionregistrationv1.Ignore, true)
	registered := time.Now()
	s.troubled("slow (a 30 s webhook)", healthyIn, healthyOut, func() {
		s.waitMemberStatus("a write running or not answered", func(entry, ready string) bool {
			return (strings.HasPrefix(entry, "writing") && strings.HasPrefix(ready, "Writing:")) ||
				(strings.Contains(entry, notAnswering) && strings.HasPrefix(ready, "WriteFailed:"))
		})
		// The API server drops a create when its client gives up, so
		// nothing of the write is stored.
		if imp, err := lab.GetImport(s.ctx, s.m, s.ns, "two"); err != nil || imp != nil {
			t.Errorf("%s holds the import %s/two (%+v, %v) while its webhook takes %s", s.m.Name, s.ns, imp, err, slowWebhookDelay)
		}
		s.gatewayDNSResolves()
	})
	// Long enough for a few writes into cluster-s.
	if wait := 3*controllerRequestTimeout - time.Since(registered); wait > 0 {
		time.Sleep(wait)
	}
	var calls []lab.WebhookCall
	for _, c := range hook.Calls() {
		if c.Namespace == s.ns {
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		t.Fatalf("the webhook of %s saw no write of the controller in %s", s.m.Name, s.ns)
	}
	for i, c := range calls {
		took := "running"
		if !c.Ended.IsZero() {
			took = c.Ended.Sub(c.Began).Round(10 * time.Millisecond).String()
		}
		t.Logf("webhook call %d: %s %s %s/%s at +%s, %s (cancelled by the API server: %v)", i, c.Operation, c.Kind, c.Namespace, c.Name,
			c.Began.Sub(registered).Round(10*time.Millisecond), took, c.Cancelled)
		// The controller's deadline comes first: the API server ends the
		// webhook's call with it, long before the webhook would answer.
		if !c.Ended.IsZero() && (!c.Cancelled || c.Ended.Sub(c.Began) > controllerRequestTimeout+5*time.Second) {
			t.Errorf("webhook call %d ran %s (cancelled %v): want it ended by the API server once the controller's deadline of %s passed",
				i, c.Ended.Sub(c.Began), c.Cancelled, controllerRequestTimeout)
		}
		if i == 0 {
			continue
		}
		// One write at a time, and none of it after the call that
		// passed the deadline: the next call comes a deadline later at
		// the earliest (less a little for the two clocks' start).
		if gap := c.Began.Sub(calls[i-1].Began); gap < controllerRequestTimeout-time.Second {
			t.Errorf("webhook call %d came %s after the one before: the controller sent another call into %s before its deadline of %s passed", i, gap, s.m.Name, controllerRequestTimeout)
		}
	}
}

// testMCSShutdownFrozenMember: a controller replica (leader election on,
// as in the chart's Deployment) leads and writes a ClusterSet of
// cluster-a, cluster-b and cluster-z; cluster-z's API server is frozen
// (SIGSTOP) and a new export makes the replica write into it. The
// replica gets SIGTERM while cluster-z's write hangs and must exit within
// the pod's grace period (the kubelet's SIGKILL after it), having
// released the Lease. The lab's default controller runs again after.
func testMCSShutdownFrozenMember(t *testing.T) {
	ctx := ctxFor(t)
	s := newTroubledSet(t, "shutdown", "shutdown", "xcc-shutdown-test", "cluster-z")
	s.arrives("one", s.export("one", "198.51.100.163"))
	waitImport(t, s.m, s.ns, "one", func(i *lab.Import) bool { return len(i.IPs) > 0 })

	replaceController(t)
	r, err := theLab.StartControllerReplica(ctx, "shutdown")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if exited, _ := r.Process.Exited(); !exited {
			r.Kill()
		}
	})
	id, err := r.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(answerTimeout)
	for {
		l, err := theLab.ControllerLease(ctx)
		if err == nil && l.Holder == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not lead within %s: Lease %+v, %v", r.Name, answerTimeout, l, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The replica has read and written cluster-z before it freezes.
	s.arrives("two", s.export("two", "198.51.100.164"))
	waitImport(t, s.m, s.ns, "two", func(i *lab.Import) bool { return len(i.IPs) > 0 })
	if err := s.m.Freeze(); err != nil {
		t.Fatal(err)
	}
	s.export("three", "198.51.100.165")
	waitImport(t, s.b, s.ns, "three", func(i *lab.Import) bool { return len(i.IPs) > 0 })
	// The status says cluster-z's write still runs: it hangs on the
	// frozen API server now.
	s.waitMemberStatus("a write running", func(entry, ready string) bool {
		return strings.HasPrefix(entry, "writing") && strings.HasPrefix(ready, "Writing:")
	})
	signalled := time.Now()
	r.Terminate()
	if err := r.Wait(podGracePeriod); err != nil {
		t.Fatalf("%s with %s frozen: %v (the kubelet sends SIGKILL after the pod's grace period, %s)", r.Name, s.m.Name, err, podGracePeriod)
	}
	exited := time.Since(signalled)
	t.Logf("%s exited %s after SIGTERM with %s frozen mid-write (grace period %s)", r.Name, exited.Round(10*time.Millisecond), s.m.Name, podGracePeriod)
	// The write in flight is cancelled, not waited out to its deadline.
	if exited > controllerRequestTimeout {
		t.Errorf("%s took %s to exit: it waited for its write into the frozen %s (deadline %s) rather than cancel it", r.Name, exited, s.m.Name, controllerRequestTimeout)
	}
	if l, err := theLab.ControllerLease(ctx); err != nil || l.Holder != "" {
		t.Errorf("the Lease after %s exited: %+v (%v), want released", r.Name, l, err)
	}
}
