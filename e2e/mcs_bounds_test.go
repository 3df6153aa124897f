package e2e

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// boundsAllowedCIDRs is the --allowed-cidrs MCSAllowedCIDRs runs the
// controller with: every address the lab publishes (its gateways, its
// headless and exported pods) lies inside; boundsRefused lies outside.
const (
	boundsAllowedCIDRs = "192.0.2.0/24,198.51.100.0/24,2001:db8::/32"
	boundsRefused      = "203.0.113."
)

// The caps MCSLimitsCompose runs the controller with, small enough for a
// handful of exports to reach each.
const (
	boundsMaxExports   = 3
	boundsMaxEndpoints = 5
	boundsMaxSlices    = 2
	// boundsSteady is how long a bounded count must hold: a write the
	// controller still had to make would change it within it.
	boundsSteady = 5 * time.Second
)

// replaceController stops the lab's single controller, for a test to
// run its own, and starts the default one again when t ends, so later
// tests find the lab's controller as it was.
func replaceController(t *testing.T) {
	theLab.StopController()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		theLab.StopController()
		if err := theLab.StartController(ctx); err != nil {
			t.Errorf("start the lab's default controller again: %v", err)
		}
	})
}

// withController runs the lab's single controller with args added to its
// flags until t ends, then the default one again, so later tests find
// the lab's controller as it was.
func withController(t *testing.T, args ...string) {
	t.Helper()
	ctx := ctxFor(t)
	replaceController(t)
	if err := theLab.StartControllerWith(ctx, args...); err != nil {
		t.Fatal(err)
	}
	t.Logf("controller running with %v", args)
}

// testMCSAllowedCIDRs: the controller runs with --allowed-cidrs; cluster-a
// exports a ClusterSetIP Service and a headless one, each with one ready
// endpoint inside the allowed CIDRs and one outside. In cluster-b the
// imported EndpointSlices (what kube-proxy serves behind the ClusterSetIP)
// hold only the allowed address, and so do the clusterset DNS records of
// the headless import: its name, and each pod's, answer only the allowed
// pod. One verdict for both data paths, on real API servers.
func testMCSAllowedCIDRs(t *testing.T) {
	requireDNS(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsB := theLab.DNS[lab.ClusterB]
	const set, ns, web, db, label = "cidrs", "cidrs", "web", "db", "xcc-cidrs-test"
	withController(t, "--allowed-cidrs", boundsAllowedCIDRs)
	ctx := ctxFor(t)
	cleanupClusterSet(t, set, []*lab.Cluster{a, b}, []string{label}, a, ns, web, db)
	webAllowed, dbAllowed := "198.51.100.171", "198.51.100.172"
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	pg := []corev1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)}}
	for _, s := range []lab.ExportedService{
		{Namespace: ns, Name: web, Ports: httpPort, Pods: []lab.HeadlessPod{
			{Address: webAllowed, Ready: true}, {Address: boundsRefused + "171", Ready: true}}},
		{Namespace: ns, Name: db, Headless: true, Ports: pg, Pods: []lab.HeadlessPod{
			{Name: "db-0", Address: dbAllowed, Ready: true}, {Name: "db-1", Address: boundsRefused + "172", Ready: true}}},
	} {
		if err := lab.CreateExportedService(ctx, a, s); err != nil {
			t.Fatal(err)
		}
	}
	// The namespace must exist in cluster-b for the imports to reach it.
	if err := lab.EnsureNamespace(ctx, b, ns); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*lab.Cluster{a, b} {
		if err := lab.LabelCluster(ctx, mgmt, w.Name, label, "true"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetSelecting(set, label, "true")); err != nil {
		t.Fatal(err)
	}
	waitImport(t, b, ns, web, func(i *lab.Import) bool { return i.Type == "ClusterSetIP" && len(i.IPs) > 0 })
	waitImport(t, b, ns, db, func(i *lab.Import) bool { return i.Type == "Headless" })

	// kube-proxy's path: the imported slices hold the allowed address only.
	for svc, want := range map[string]string{web: webAllowed, db: dbAllowed} {
		got := waitImportedAddresses(t, b, ns, svc, lab.ClusterA, func(addrs []string) bool { return len(addrs) > 0 })
		if !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("imported EndpointSlices of %s/%s in %s hold %v, want only %s (the other lies outside --allowed-cidrs %s)", ns, svc, b.Name, got, want, boundsAllowedCIDRs)
		}
	}

	// DNS's path: the headless name, and each pod's, answer the allowed
	// pod only; no record of serve holds the refused addresses.
	y := lab.ClusterSetHost(ns, db)
	expect(t, dnsB.ClusterDNSAddr, y, dns.TypeA, dns.RcodeSuccess, dbAllowed)
	expect(t, dnsB.ClusterDNSAddr, "db-0."+lab.ClusterA+"."+y, dns.TypeA, dns.RcodeSuccess, dbAllowed)
	expect(t, dnsB.ClusterDNSAddr, lab.ClusterA+"."+y, dns.TypeA, dns.RcodeSuccess, dbAllowed)
	expect(t, dnsB.ClusterDNSAddr, "db-1."+lab.ClusterA+"."+y, dns.TypeA, dns.RcodeNameError)
	records, err := lab.EtcdValues(ctx, dnsB.EtcdClientURL, mcsSkyDNSPrefix+ns+"/")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) == 0 {
		t.Errorf("no record of %s in %s's serve", y, b.Name)
	}
	for _, r := range records {
		if strings.Contains(r, boundsRefused) {
			t.Errorf("a record of %s in %s's serve holds an address outside --allowed-cidrs: %s", ns, b.Name, r)
		}
	}
}

// waitImportedAddresses waits until the addresses of the EndpointSlices
// the controller imported into w for namespace/service from source
// satisfy ok, and returns them, sorted.
func waitImportedAddresses(t *testing.T, w *lab.Cluster, namespace, service, source string, ok func([]string) bool) []string {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		var addrs []string
		items, err := lab.ImportedSlices(ctx, w, namespace, service, source)
		for _, s := range items {
			for _, e := range s.Endpoints {
				addrs = append(addrs, e.Addresses...)
			}
		}
		sort.Strings(addrs)
		if err == nil && ok(addrs) {
			return addrs
		}
		if time.Now().After(deadline) {
			t.Fatalf("imported EndpointSlices of %s/%s from %s in %s: %v (err %v), not as wanted after %s", namespace, service, source, w.Name, addrs, err, answerTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// testMCSLimitsCompose: the controller runs with small caps on what one
// member may export (boundsMaxExports valid exports, boundsMaxEndpoints
// endpoints and boundsMaxSlices EndpointSlices in each member). cluster-a
// exports, in namespace crowd, first four ServiceExports without a
// Service, then four Services, then one Service in namespace quiet. The
// exports without a Service say NoService and take no place; the
// namespaces share the cap (crowd's two oldest and quiet's one are
// imported, crowd's two newest say TooManyExports); and in cluster-b and
// cluster-c what cluster-a's imports hold stays within its endpoint cap,
// then, once an export shrinks, within its slice cap, the newest import
// saying in its Ready message that it was cut.
func testMCSLimitsCompose(t *testing.T) {
	requireDNS(t)
	mgmt := theLab.Management
	a, b, c := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB), theLab.Workload(lab.ClusterC)
	const set, crowd, quiet, solo, label = "limits", "crowd", "quiet", "solo", "xcc-limits-test"
	withController(t,
		fmt.Sprintf("--max-exports-per-member=%d", boundsMaxExports),
		fmt.Sprintf("--max-endpoints-per-member=%d", boundsMaxEndpoints),
		fmt.Sprintf("--max-slices-per-member=%d", boundsMaxSlices))
	ctx := ctxFor(t)
	ghosts := []string{"ghost-0", "ghost-1", "ghost-2", "ghost-3"}
	services := []string{"svc-0", "svc-1", "svc-2", "svc-3"}
	members := []*lab.Cluster{a, b, c}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		for _, w := range members {
			if err := lab.LabelCluster(ctx, mgmt, w.Name, label, ""); err != nil {
				t.Error(err)
			}
		}
		for _, g := range ghosts {
			if err := lab.Unexport(ctx, a, crowd, g); err != nil {
				t.Error(err)
			}
		}
		for _, s := range services {
			if err := lab.DeleteExportedService(ctx, a, crowd, s); err != nil {
				t.Error(err)
			}
		}
		if err := lab.DeleteExportedService(ctx, a, quiet, solo); err != nil {
			t.Error(err)
		}
	})
	for _, w := range members {
		for _, ns := range []string{crowd, quiet} {
			if err := lab.EnsureNamespace(ctx, w, ns); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Older than every Service's export: counted by age, they would take
	// the whole cap.
	for _, g := range ghosts {
		if err := lab.Export(ctx, a, crowd, g); err != nil {
			t.Fatal(err)
		}
	}
	nextSecond() // creation times have a resolution of one second
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	pods := func(first, n int) []lab.HeadlessPod {
		var out []lab.HeadlessPod
		for i := range n {
			out = append(out, lab.HeadlessPod{Address: fmt.Sprintf("198.51.100.%d", first+i), Ready: true})
		}
		return out
	}
	exported := map[string]lab.ExportedService{
		"svc-0": {Namespace: crowd, Name: "svc-0", Ports: httpPort, Pods: pods(180, 3)},
		"svc-1": {Namespace: crowd, Name: "svc-1", Ports: httpPort, Pods: pods(183, 3)},
		"svc-2": {Namespace: crowd, Name: "svc-2", Ports: httpPort, Pods: pods(186, 1)},
		"svc-3": {Namespace: crowd, Name: "svc-3", Ports: httpPort, Pods: pods(187, 1)},
		solo:    {Namespace: quiet, Name: solo, Ports: httpPort, Pods: pods(188, 2)},
	}
	for _, s := range services {
		if err := lab.CreateExportedService(ctx, a, exported[s]); err != nil {
			t.Fatal(err)
		}
	}
	nextSecond()
	if err := lab.CreateExportedService(ctx, a, exported[solo]); err != nil {
		t.Fatal(err)
	}
	for _, w := range members {
		if err := lab.LabelCluster(ctx, mgmt, w.Name, label, "true"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetSelecting(set, label, "true")); err != nil {
		t.Fatal(err)
	}

	// The export cap: invalid exports take no place, namespaces share it.
	for _, g := range ghosts {
		waitExportConditions(t, a, crowd, g, map[string]string{"Valid": "False/NoService"})
	}
	waitExportConditions(t, a, crowd, "svc-0", map[string]string{"Valid": "True"})
	waitExportConditions(t, a, crowd, "svc-1", map[string]string{"Valid": "True"})
	waitExportConditions(t, a, quiet, solo, map[string]string{"Valid": "True"})
	waitExportConditions(t, a, crowd, "svc-2", map[string]string{"Valid": "False/TooManyExports"})
	waitExportConditions(t, a, crowd, "svc-3", map[string]string{"Valid": "False/TooManyExports"})
	fromA := func(i *lab.Import) bool { return reflect.DeepEqual(i.Clusters, []string{lab.ClusterA}) }
	for _, w := range []*lab.Cluster{b, c} {
		waitImport(t, w, crowd, "svc-0", fromA)
		waitImport(t, w, crowd, "svc-1", fromA)
		waitImport(t, w, quiet, solo, fromA)
		for _, n := range append([]string{"svc-2", "svc-3"}, ghosts...) {
			if imp, err := lab.GetImport(ctx, w, crowd, n); err != nil || imp != nil {
				t.Errorf("ServiceImport %s/%s in %s: %+v (err %v), want none: the export is past the cap or has no Service", crowd, n, w.Name, imp, err)
			}
		}
	}

	// The endpoint cap: the oldest exports keep theirs (svc-0 its 3,
	// svc-1 2 of its 3), the newest gets none, in every other member.
	cut := "not imported: past its cap"
	want := map[string]int{"crowd/svc-0": 3, "crowd/svc-1": 2, "quiet/solo": 0}
	for _, w := range []*lab.Cluster{b, c} {
		waitBounded(t, w, lab.ClusterA, want, 2, map[string]string{"crowd/svc-1": cut, "quiet/solo": cut})
	}

	// The slice cap: svc-1 shrinks to one endpoint; the endpoint cap
	// would leave solo one of its two, but svc-0 and svc-1 take both
	// slices, so solo still gets none.
	shrunk := exported["svc-1"]
	shrunk.Pods = pods(183, 1)
	_, slice := shrunk.Objects()
	if err := lab.WriteEndpointSlice(ctx, a.Client, a.Name, slice); err != nil {
		t.Fatal(err)
	}
	want = map[string]int{"crowd/svc-0": 3, "crowd/svc-1": 1, "quiet/solo": 0}
	for _, w := range []*lab.Cluster{b, c} {
		waitBounded(t, w, lab.ClusterA, want, 2, map[string]string{"quiet/solo": cut})
	}
}

// nextSecond sleeps past the next whole second, so that what is created
// next is younger than what was created before.
func nextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
}

// waitBounded waits until the EndpointSlices imported into w from source
// hold, per import (namespace/name), the endpoints of want and nSlices
// EndpointSlices in all, and until each import of notes says in its Ready message what
// notes gives; then it checks for boundsSteady that the counts stay.
func waitBounded(t *testing.T, w *lab.Cluster, source string, want map[string]int, nSlices int, notes map[string]string) {
	t.Helper()
	ctx := ctxFor(t)
	count := func() (map[string]int, int, error) {
		got := map[string]int{}
		n := 0
		for key := range want {
			ns, name, _ := strings.Cut(key, "/")
			items, err := lab.ImportedSlices(ctx, w, ns, name, source)
			if err != nil {
				return nil, 0, err
			}
			n += len(items)
			got[key] = 0 // an import cut to nothing counts too
			for _, s := range items {
				got[key] += len(s.Endpoints)
			}
		}
		return got, n, nil
	}
	deadline := time.Now().Add(answerTimeout)
	for {
		got, n, err := count()
		done := err == nil && reflect.DeepEqual(got, want) && n == nSlices
		var messages []string
		for key, note := range notes {
			ns, name, _ := strings.Cut(key, "/")
			_, msg, err := lab.ImportReady(ctx, w, ns, name)
			messages = append(messages, key+": "+msg)
			done = done && err == nil && strings.Contains(msg, note)
		}
		if done {
			t.Logf("%s holds of %s's imports %v endpoints in %d EndpointSlices (caps %d and %d)", w.Name, source, got, n, boundsMaxEndpoints, boundsMaxSlices)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: endpoints imported from %s %v in %d EndpointSlices (err %v), want %v in %d; Ready messages %q", w.Name, source, got, n, err, want, nSlices, messages)
		}
		time.Sleep(pollInterval)
	}
	for end := time.Now().Add(boundsSteady); time.Now().Before(end); time.Sleep(pollInterval) {
		got, n, err := count()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || n != nSlices {
			t.Fatalf("%s: endpoints imported from %s changed to %v in %d EndpointSlices, want %v in %d", w.Name, source, got, n, want, nSlices)
		}
	}
}
