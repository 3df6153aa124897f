package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	// failoverNamespace holds, on the management cluster, the failover
	// test's Clusters and GatewayDNS objects and, on every workload
	// cluster, its gateway Service failoverService.
	failoverNamespace = "xcc-failover"
	failoverService   = "envoy"
	// failoverLabel selects a phase's Clusters; its value names the
	// phase's GatewayDNS.
	failoverLabel = "xcc-failover"
	// failoverClusters is how many Clusters each phase adds at once, their
	// kubeconfigs reaching the three workload API servers in turn: enough
	// slices (550 per workload cluster) that the leader is still
	// writing them when it is stopped.
	failoverClusters = 150

	// The replicas' leader election flags (lab.LeaseDuration,
	// lab.RetryPeriod) and client-go's: a standby tries every retryPeriod
	// stretched by up to jitterFactor, and counts a Lease as expired
	// leaseDuration after it last saw the Lease change, by its own clock.
	leaseDuration = lab.LeaseDuration
	retryPeriod   = lab.RetryPeriod
	jitterFactor  = 1.2
	// maxRetryWait is the longest a standby waits between two tries.
	maxRetryWait = time.Duration((1 + jitterFactor) * float64(retryPeriod))
	// takeoverBound is the bound docs/reliability.md states (the
	// controller's TakeoverBound): after a SIGKILL, the standby may have
	// seen the last renewal up to one retry wait after it was written,
	// counts leaseDuration from then, and tries again up to one retry
	// wait later: leaseDuration + 2 x maxRetryWait.
	takeoverBound = leaseDuration + 2*maxRetryWait
	// apiAllowance is added to each bound for the Lease reads and writes
	// of a loaded machine and the test's own 50 ms polling.
	apiAllowance = time.Second
	// killTakeoverBound is what the test allows after a SIGKILL.
	killTakeoverBound = takeoverBound + apiAllowance
	// termHandoverBound: after a SIGTERM the leader releases the Lease
	// (ReleaseOnCancel) once its controller stopped, so the standby takes
	// it at its next try.
	termHandoverBound = maxRetryWait + apiAllowance
	// failoverConvergeTimeout bounds the wait for every target to hold
	// exactly the desired slices.
	failoverConvergeTimeout = 3 * time.Minute
)

// failoverGateways are the load-balancer statuses of failoverService in
// each workload cluster: an IPv4 gateway, a dual-stack one and a hostname,
// so every address type is written. 198.18.0.0/15 is for benchmarks.
var failoverGateways = map[string]lab.Gateway{
	lab.ClusterA: {IPs: []string{"198.18.250.1"}},
	lab.ClusterB: {IPs: []string{"198.18.250.2", "2001:db8:250::2"}},
	lab.ClusterC: {Hostname: "envoy.failover.example.net"},
}

// sliceKey is what one slice publishes: at most one slice may exist per
// key in a target.
type sliceKey struct {
	cluster, record string
	family          discoveryv1.AddressType
}

func (k sliceKey) String() string { return k.cluster + "/" + k.record + "/" + string(k.family) }

// wantSlice is the content the slice of a key must have.
type wantSlice struct {
	hostname string
	addrs    []string // canonical, sorted
}

// failoverCluster is one Cluster the test adds.
type failoverCluster struct {
	name string
	w    *lab.Cluster
}

func failoverPhaseClusters(phase string, n int) []failoverCluster {
	out := make([]failoverCluster, n)
	for i := range out {
		out[i] = failoverCluster{name: fmt.Sprintf("%s-%03d", phase, i), w: theLab.Workloads[i%len(theLab.Workloads)]}
	}
	return out
}

// desiredSlices is what GatewayDNS failoverNamespace/phase must publish
// in every target: per Cluster, one gateway slice and one slice of the
// multi-cluster name per address family of its workload cluster's
// failoverService, and one api slice (the control plane host is a name:
// FQDN).
func desiredSlices(phase string, clusters []failoverCluster) map[sliceKey]wantSlice {
	out := map[sliceKey]wantSlice{}
	gateways := fmt.Sprintf("*.%s.%s.gateways.%s", phase, failoverNamespace, lab.Zone)
	for _, c := range clusters {
		base := fmt.Sprintf("%s.%s.clusters.%s", c.name, failoverNamespace, lab.Zone)
		gw := failoverGateways[c.w.Name]
		var v4, v6 []string
		for _, ip := range gw.IPs {
			a := netip.MustParseAddr(ip)
			if a.Is4() {
				v4 = append(v4, a.String())
			} else {
				v6 = append(v6, a.String())
			}
		}
		for _, f := range []struct {
			t     discoveryv1.AddressType
			addrs []string
		}{{discoveryv1.AddressTypeIPv4, v4}, {discoveryv1.AddressTypeIPv6, v6}, {discoveryv1.AddressTypeFQDN, nonEmpty(gw.Hostname)}} {
			if len(f.addrs) > 0 {
				out[sliceKey{c.name, "gateway", f.t}] = wantSlice{hostname: "*.gateway." + base, addrs: f.addrs}
				out[sliceKey{c.name, "gateways", f.t}] = wantSlice{hostname: gateways, addrs: f.addrs}
			}
		}
		out[sliceKey{c.name, "api", discoveryv1.AddressTypeFQDN}] = wantSlice{
			hostname: "api." + base, addrs: []string{theLab.ControlPlaneHostOf(c.w.Name)}}
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// targetState is what one target holds of one GatewayDNS.
type targetState struct {
	slices map[sliceKey][]discoveryv1.EndpointSlice
	total  int
}

// failoverTargetSlices lists the controller's slices of GatewayDNS
// failoverNamespace/gdns in the slice namespace of w.
func failoverTargetSlices(ctx context.Context, w *lab.Cluster, gdns string) (targetState, error) {
	list, err := w.Client.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "endpointslice.kubernetes.io/managed-by=xcc-dns-controller"})
	if err != nil {
		return targetState{}, fmt.Errorf("list slices of %s: %w", w.Name, err)
	}
	st := targetState{slices: map[sliceKey][]discoveryv1.EndpointSlice{}}
	for _, s := range list.Items {
		if s.Annotations["connectivity.tanzu.vmware.com/gateway-dns-ref"] != failoverNamespace+"/"+gdns {
			continue
		}
		k := sliceKey{s.Labels["xcc-dns.io/source-cluster"], s.Labels["xcc-dns.io/record"], s.AddressType}
		st.slices[k] = append(st.slices[k], s)
		st.total++
	}
	return st, nil
}

// compareSlices says how a target's slices differ from want: missing,
// duplicated (two slices for one key), extra (no such key wanted) or
// wrong content. nil when they are equal.
func compareSlices(st targetState, want map[sliceKey]wantSlice) error {
	var missing, dup, extra, wrong []string
	for k, w := range want {
		got := st.slices[k]
		switch {
		case len(got) == 0:
			missing = append(missing, k.String())
		case len(got) > 1:
			names := make([]string, len(got))
			for i, s := range got {
				names[i] = s.Name
			}
			dup = append(dup, k.String()+" "+strings.Join(names, ","))
		default:
			s := got[0]
			var addrs []string
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					if ip, err := netip.ParseAddr(a); err == nil {
						a = ip.String()
					}
					addrs = append(addrs, strings.TrimSuffix(strings.ToLower(a), "."))
				}
			}
			sort.Strings(addrs)
			if h := s.Annotations["connectivity.tanzu.vmware.com/dns-hostname"]; h != w.hostname || !slices.Equal(addrs, w.addrs) {
				wrong = append(wrong, fmt.Sprintf("%s %s: %s %v, want %s %v", k, s.Name, h, addrs, w.hostname, w.addrs))
			}
		}
	}
	for k, got := range st.slices {
		if _, ok := want[k]; !ok {
			extra = append(extra, fmt.Sprintf("%s (%d)", k, len(got)))
		}
	}
	if len(missing)+len(dup)+len(extra)+len(wrong) == 0 {
		return nil
	}
	first := func(l []string) []string {
		sort.Strings(l)
		return l[:min(len(l), 3)]
	}
	return fmt.Errorf("%d slices, want %d: %d missing %v, %d duplicated %v, %d extra %v, %d wrong %v",
		st.total, len(want), len(missing), first(missing), len(dup), first(dup), len(extra), first(extra), len(wrong), first(wrong))
}

// checkFailoverTargets compares every target with the desired slices of
// every GatewayDNS in want (by name).
func checkFailoverTargets(ctx context.Context, want map[string]map[sliceKey]wantSlice) error {
	var errs []error
	for _, w := range theLab.Workloads {
		for gdns, ws := range want {
			st, err := failoverTargetSlices(ctx, w, gdns)
			if err == nil {
				err = compareSlices(st, ws)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s, GatewayDNS %s: %w", w.Name, gdns, err))
			}
		}
	}
	return errors.Join(errs...)
}

// waitFailoverTargets polls checkFailoverTargets until it passes; it
// returns when that was.
func waitFailoverTargets(ctx context.Context, want map[string]map[sliceKey]wantSlice) (time.Time, error) {
	at, err := pollUntil(ctx, 250*time.Millisecond, failoverConvergeTimeout, func() error { return checkFailoverTargets(ctx, want) })
	if err != nil {
		return time.Time{}, fmt.Errorf("targets not equal to the desired slices: %w", err)
	}
	return at, nil
}

// waitFirstSlice returns as soon as any target holds a slice of GatewayDNS
// gdns: the leader is writing them.
func waitFirstSlice(ctx context.Context, gdns string, timeout time.Duration) error {
	_, err := pollUntil(ctx, 20*time.Millisecond, timeout, func() error {
		for _, w := range theLab.Workloads {
			list, err := w.Client.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{
				LabelSelector: "kubernetes.io/service-name=" + gdns + ".x", Limit: 1})
			if err == nil && len(list.Items) > 0 {
				return nil
			}
		}
		return fmt.Errorf("no slice of GatewayDNS %s in any target", gdns)
	})
	return err
}

// waitLeader polls the Lease every 50 ms until its holder is id; it
// returns the Lease and when it was seen.
func waitLeader(ctx context.Context, id string, timeout time.Duration) (lab.Lease, time.Time, error) {
	var last lab.Lease
	at, err := pollUntil(ctx, 50*time.Millisecond, timeout, func() error {
		l, err := theLab.ControllerLease(ctx)
		if err != nil {
			return err
		}
		last = l
		if l.Holder != id {
			return fmt.Errorf("holder %q", l.Holder)
		}
		return nil
	})
	if err != nil {
		return last, time.Time{}, fmt.Errorf("lease not held by %s: %w", id, err)
	}
	return last, at, nil
}

// writtenAt counts, right after a leader stopped, what its sync had
// written: the test must stop it in the middle of its writes.
func writtenAt(ctx context.Context, t *testing.T, gdns string, want map[sliceKey]wantSlice) {
	t.Helper()
	total, complete := 0, 0
	var per []string
	for _, w := range theLab.Workloads {
		st, err := failoverTargetSlices(ctx, w, gdns)
		if err != nil {
			t.Fatal(err)
		}
		total += st.total
		if compareSlices(st, want) == nil {
			complete++
		}
		per = append(per, fmt.Sprintf("%s %d", w.Name, st.total))
	}
	t.Logf("when the leader stopped, targets held %s of %d slices each of GatewayDNS %s", strings.Join(per, ", "), len(want), gdns)
	if complete == len(theLab.Workloads) || total == 0 {
		t.Fatalf("the leader was not stopped in the middle of its sync of %s (%d of %d slices written): make the change larger",
			gdns, total, len(want)*len(theLab.Workloads))
	}
}

// testControllerFailover runs two controller replicas with leader election
// (one Lease, each its own identity) in place of the lab's single
// controller. A GatewayDNS selecting 150 new Clusters is created and the
// leader gets SIGKILL while it writes their slices: the standby must
// take the Lease within killTakeoverBound, and every target then hold
// exactly the desired slices (none missing, none twice, none extra, each
// with the right addresses). Then the killed replica is restarted as the
// standby, a second GatewayDNS with 150 more Clusters is created, and the
// new leader gets SIGTERM mid-sync: it releases the Lease, so the standby
// takes over within termHandoverBound, and both GatewayDNS converge.
func testControllerFailover(t *testing.T) {
	requireDNS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	mgmt, err := newBenchClients(theLab.Management)
	if err != nil {
		t.Fatal(err)
	}
	phases := map[string][]failoverCluster{
		"kill": failoverPhaseClusters("kill", failoverClusters),
		"term": failoverPhaseClusters("term", failoverClusters),
	}
	t.Cleanup(func() { removeFailover(t, mgmt, phases) })
	if err := createFailoverGateways(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.ensureNamespace(ctx, failoverNamespace); err != nil {
		t.Fatal(err)
	}

	// Two replicas in place of the lab's controller; the Cleanup above
	// runs after this one, with the lab's controller back.
	theLab.StopController()
	var replicas []*lab.ControllerReplica
	t.Cleanup(func() {
		for _, r := range replicas {
			r.Process.Stop()
		}
		if err := theLab.StartController(context.Background()); err != nil {
			t.Errorf("restart the lab's controller: %v", err)
		}
	})
	ids := map[*lab.ControllerReplica]string{}
	for _, name := range []string{"0", "1"} {
		r, err := theLab.StartControllerReplica(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, r)
		if ids[r], err = r.Identity(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The first replica takes the Lease (a Lease left by a lab controller
	// of an earlier run expires first).
	leader, standby := replicas[0], replicas[1]
	if _, _, err := waitLeader(ctx, ids[leader], killTakeoverBound); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s leads (%s), %s stands by (%s)", leader.Name, ids[leader], standby.Name, ids[standby])

	want := map[string]map[sliceKey]wantSlice{}
	for _, phase := range []string{"kill", "term"} {
		// The change in flight: Clusters first, then the GatewayDNS that
		// selects them all, so one sync writes every slice.
		err := inParallel(failoverClusters, func(i int) error {
			c := phases[phase][i]
			return mgmt.createCluster(ctx, benchCluster{namespace: failoverNamespace, name: c.name,
				labels: map[string]any{failoverLabel: phase}, w: c.w})
		})
		if err != nil {
			t.Fatal(err)
		}
		want[phase] = desiredSlices(phase, phases[phase])
		created := time.Now()
		if err := createFailoverGatewayDNS(ctx, mgmt, phase); err != nil {
			t.Fatal(err)
		}
		if err := waitFirstSlice(ctx, phase, time.Minute); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: first slice written %s after the GatewayDNS was created", phase, time.Since(created).Round(10*time.Millisecond))
		before, err := theLab.ControllerLease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		var bound time.Duration
		if phase == "kill" {
			leader.Kill()
			bound = killTakeoverBound
			t.Logf("%s: leader %s killed (SIGKILL) mid-sync", phase, leader.Name)
		} else {
			leader.Terminate()
			bound = termHandoverBound
			t.Logf("%s: leader %s sent SIGTERM mid-sync", phase, leader.Name)
			if err := leader.Wait(15 * time.Second); err != nil {
				t.Error(err)
			}
		}
		writtenAt(ctx, t, phase, want[phase])
		lease, took, err := waitLeader(ctx, ids[standby], bound+30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		takeover := took.Sub(stopped)
		if lease.Transitions != before.Transitions+1 {
			t.Errorf("%s: Lease transitions %d -> %d, want one more", phase, before.Transitions, lease.Transitions)
		}
		converged, err := waitFailoverTargets(ctx, want)
		if err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		t.Logf("%s: %s took the Lease %s after the leader was stopped (bound %s, Lease duration %s); "+
			"every target held exactly the desired slices %s after it",
			phase, standby.Name, takeover.Round(10*time.Millisecond), bound, leaseDuration, converged.Sub(stopped).Round(10*time.Millisecond))
		if takeover > bound {
			t.Errorf("%s: takeover took %s, more than %s", phase, takeover.Round(10*time.Millisecond), bound)
		}

		// The stopped replica comes back, as its Deployment would restart
		// it, and stands by.
		if err := leader.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if ids[leader], err = leader.Identity(ctx); err != nil {
			t.Fatal(err)
		}
		leader, standby = standby, leader
	}
	// Nothing more arrives later: still exact, and the current leader
	// still holds the Lease.
	time.Sleep(5 * time.Second)
	if err := checkFailoverTargets(ctx, want); err != nil {
		t.Errorf("a while after convergence: %v", err)
	}
	if l, err := theLab.ControllerLease(ctx); err != nil || l.Holder != ids[leader] {
		t.Errorf("Lease holder %q (%v), want %s", l.Holder, err, ids[leader])
	}
}

// createFailoverGateways creates failoverService, a LoadBalancer Service,
// in every workload cluster and sets its status as a load balancer would.
func createFailoverGateways(ctx context.Context) error {
	for _, w := range theLab.Workloads {
		c, err := newBenchClients(w)
		if err != nil {
			return err
		}
		if err := c.ensureNamespace(ctx, failoverNamespace); err != nil {
			return fmt.Errorf("on %s: %w", w.Name, err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: failoverService, Namespace: failoverNamespace},
			Spec: corev1.ServiceSpec{
				Type:                          corev1.ServiceTypeLoadBalancer,
				AllocateLoadBalancerNodePorts: new(false),
				Ports:                         []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			},
		}
		if _, err := c.kube.CoreV1().Services(failoverNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Service %s/%s on %s: %w", failoverNamespace, failoverService, w.Name, err)
		}
		gw := failoverGateways[w.Name]
		var ingress []map[string]any
		for _, ip := range gw.IPs {
			ingress = append(ingress, map[string]any{"ip": ip, "ipMode": "VIP"})
		}
		if gw.Hostname != "" {
			ingress = append(ingress, map[string]any{"hostname": gw.Hostname})
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": ingress}}})
		if err != nil {
			return err
		}
		if _, err := c.kube.CoreV1().Services(failoverNamespace).Patch(ctx, failoverService, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("set load-balancer status of %s/%s on %s: %w", failoverNamespace, failoverService, w.Name, err)
		}
	}
	return nil
}

// createFailoverGatewayDNS creates GatewayDNS failoverNamespace/phase,
// selecting the phase's Clusters.
func createFailoverGatewayDNS(ctx context.Context, mgmt benchClients, phase string) error {
	gd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": lab.GatewayDNSGVR.GroupVersion().String(),
		"kind":       "GatewayDNS",
		"metadata":   map[string]any{"name": phase, "namespace": failoverNamespace},
		"spec": map[string]any{
			"clusterSelector": map[string]any{"matchLabels": map[string]any{failoverLabel: phase}},
			"service":         failoverNamespace + "/" + failoverService,
			"resolutionType":  "loadBalancer",
		},
	}}
	if _, err := mgmt.dyn.Resource(lab.GatewayDNSGVR).Namespace(failoverNamespace).Create(ctx, gd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create GatewayDNS %s/%s: %w", failoverNamespace, phase, err)
	}
	return nil
}

// removeFailover deletes the GatewayDNS objects and waits until the
// controller has removed their slices (its finalizer), then the Clusters,
// their Secrets and the gateway Services.
func removeFailover(t *testing.T, mgmt benchClients, phases map[string][]failoverCluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for phase := range phases {
		if err := lab.DeleteGatewayDNS(ctx, theLab.Management, failoverNamespace, phase); err != nil {
			t.Error(err)
		}
	}
	for phase := range phases {
		if err := waitGatewayDNSGone(ctx, mgmt, failoverNamespace, phase, 5*time.Minute); err != nil {
			t.Error(err)
		}
	}
	for _, cs := range phases {
		err := inParallel(len(cs), func(i int) error { return mgmt.deleteCluster(ctx, failoverNamespace, cs[i].name) })
		if err != nil {
			t.Error(err)
		}
	}
	for _, w := range theLab.Workloads {
		err := w.Client.CoreV1().Services(failoverNamespace).Delete(ctx, failoverService, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}
