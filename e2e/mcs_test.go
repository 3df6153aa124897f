package e2e

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testMCS runs the Multi-Cluster Services API on the lab's API servers: a
// ClusterSet of cluster-a and cluster-b; a ClusterSetIP Service exported
// from both, a headless one from cluster-a. Each member gets a
// ServiceImport with its own ClusterSetIP (its API server allocates the
// derived Service's address) and answers the names of the MCS DNS
// specification from its cluster DNS. A newer export with other ports is
// in Conflict; unexport from every member removes the import and its
// name. Everything it makes is removed at the end.
func testMCS(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsA, dnsB := theLab.DNS[lab.ClusterA].ClusterDNSAddr, theLab.DNS[lab.ClusterB].ClusterDNSAddr
	const set, ns, web, db = "prod", "market", "web", "db"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lab.DeleteClusterSet(ctx, mgmt, lab.ClusterNamespace, set); err != nil {
			t.Error(err)
		}
		for _, w := range []*lab.Cluster{a, b} {
			for _, n := range []string{web, db} {
				if err := lab.DeleteExportedService(ctx, w, ns, n); err != nil {
					t.Error(err)
				}
			}
		}
	})
	if err := theLab.ApplyWalkthrough(ctx); err != nil { // labels the Clusters
		t.Fatal(err)
	}
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	podsA := []lab.HeadlessPod{{Address: "198.51.100.121", Ready: true}}
	podsB := []lab.HeadlessPod{{Address: "198.51.100.131", Ready: true}}
	for w, pods := range map[*lab.Cluster][]lab.HeadlessPod{a: podsA, b: podsB} {
		if err := lab.CreateExportedService(ctx, w, lab.ExportedService{Namespace: ns, Name: web, Ports: httpPort, Pods: pods}); err != nil {
			t.Fatal(err)
		}
	}
	dbPods := []lab.HeadlessPod{{Name: "db-0", Address: "198.51.100.141", Ready: true}, {Name: "db-1", Address: "198.51.100.142", Ready: true}}
	pg := []corev1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)}}
	if err := lab.CreateExportedService(ctx, a, lab.ExportedService{Namespace: ns, Name: db, Headless: true, Ports: pg, Pods: dbPods}); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetYAML(set)); err != nil {
		t.Fatal(err)
	}

	// Each member's import holds its own ClusterSetIP, and its DNS
	// answers it.
	impA := waitImport(t, a, ns, web, func(i *lab.Import) bool { return len(i.IPs) > 0 && len(i.Clusters) == 2 })
	impB := waitImport(t, b, ns, web, func(i *lab.Import) bool { return len(i.IPs) > 0 && len(i.Clusters) == 2 })
	if impA.Type != "ClusterSetIP" || !reflect.DeepEqual(impA.Ports, []string{"http/TCP/80"}) || !reflect.DeepEqual(impA.Clusters, []string{lab.ClusterA, lab.ClusterB}) {
		t.Errorf("import in cluster-a: %+v", impA)
	}
	x := lab.ClusterSetHost(ns, web)
	expect(t, dnsB, x, dns.TypeA, dns.RcodeSuccess, impB.IPs...)
	t.Logf("mcs: cluster-b resolves %s to its ClusterSetIP %v %s after the ClusterSet was applied", x, impB.IPs, time.Since(applied).Round(10*time.Millisecond))
	expect(t, dnsA, x, dns.TypeA, dns.RcodeSuccess, impA.IPs...)
	expect(t, dnsB, "_http._tcp."+x, dns.TypeSRV, dns.RcodeSuccess, "10 100 80 "+x+".")
	// SRV of the name itself: every port's.
	expect(t, dnsB, x, dns.TypeSRV, dns.RcodeSuccess, "10 100 80 "+x+".")
	// The specification's names that must not exist, and its version.
	expect(t, dnsB, lab.ClusterA+"."+x, dns.TypeA, dns.RcodeNameError)
	expect(t, dnsB, "dns-version."+lab.ClusterSetZone, dns.TypeTXT, dns.RcodeSuccess, `"1.0.0"`)
	waitExportConditions(t, a, ns, web, map[string]string{"Valid": "True", "Ready": "True", "Conflict": "False"})

	// Exported labels reach the import in every member; a reserved one
	// does not, and the other export, which has none, is in conflict.
	if err := lab.SetExportedLabels(ctx, a, ns, web, map[string]string{"tier": "web", "xcc-dns.io/record": "x"}); err != nil {
		t.Fatal(err)
	}
	waitImport(t, b, ns, web, func(i *lab.Import) bool { return i.Labels["tier"] == "web" && i.Labels["xcc-dns.io/record"] == "" })
	waitExportConditions(t, b, ns, web, map[string]string{"Valid": "True", "Conflict": "True/LabelsConflict"})
	if err := lab.SetExportedLabels(ctx, a, ns, web, nil); err != nil {
		t.Fatal(err)
	}
	waitImport(t, b, ns, web, func(i *lab.Import) bool { return i.Labels["tier"] == "" })

	// The headless import: every ready pod, and each by hostname and id.
	waitImport(t, b, ns, db, func(i *lab.Import) bool { return i.Type == "Headless" })
	y := lab.ClusterSetHost(ns, db)
	expect(t, dnsB, y, dns.TypeA, dns.RcodeSuccess, dbPods[0].Address, dbPods[1].Address)
	expect(t, dnsB, "db-1."+lab.ClusterA+"."+y, dns.TypeA, dns.RcodeSuccess, dbPods[1].Address)

	// A newer export of other ports: the import keeps the older one's
	// ports and adds the new, and both exports say Conflict.
	if err := lab.Unexport(ctx, b, ns, web); err != nil {
		t.Fatal(err)
	}
	if err := lab.DeleteExportedService(ctx, b, ns, web); err != nil {
		t.Fatal(err)
	}
	other := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8000, TargetPort: intstr.FromInt32(8080)}}
	if err := lab.CreateExportedService(ctx, b, lab.ExportedService{Namespace: ns, Name: web, Ports: other, Pods: podsB}); err != nil {
		t.Fatal(err)
	}
	waitExportConditions(t, b, ns, web, map[string]string{"Valid": "True", "Conflict": "True"})
	waitImport(t, b, ns, web, func(i *lab.Import) bool { return reflect.DeepEqual(i.Ports, []string{"http/TCP/80"}) })

	// Unexport from every member: the import and its name go.
	for _, w := range []*lab.Cluster{a, b} {
		if err := lab.Unexport(ctx, w, ns, web); err != nil {
			t.Fatal(err)
		}
	}
	unexported := time.Now()
	waitImport(t, b, ns, web, nil)
	expect(t, dnsB, x, dns.TypeA, dns.RcodeNameError)
	t.Logf("mcs: %s gone from cluster-b's DNS %s after unexport", x, time.Since(unexported).Round(10*time.Millisecond))
}

// waitImport waits until the ServiceImport namespace/name of w satisfies
// ok, or, with ok nil, until there is none; it returns the last read.
func waitImport(t *testing.T, w *lab.Cluster, namespace, name string, ok func(*lab.Import) bool) *lab.Import {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		imp, err := lab.GetImport(ctx, w, namespace, name)
		if err == nil && ((ok == nil && imp == nil) || (ok != nil && imp != nil && ok(imp))) {
			return imp
		}
		if time.Now().After(deadline) {
			t.Fatalf("ServiceImport %s/%s in %s: %+v (err %v), not as wanted after %s", namespace, name, w.Name, imp, err, answerTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExportConditions waits until the ServiceExport's conditions have
// the statuses of want (type -> status, or status/reason).
func waitExportConditions(t *testing.T, w *lab.Cluster, namespace, name string, want map[string]string) {
	t.Helper()
	ctx := ctxFor(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		got, err := lab.ExportConditions(ctx, w, namespace, name)
		match := err == nil
		for typ, status := range want {
			s := got[typ]
			if !strings.Contains(status, "/") {
				s, _, _ = strings.Cut(s, "/")
			}
			if s != status {
				match = false
			}
		}
		if match {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ServiceExport %s/%s in %s: conditions %v (err %v), want %v", namespace, name, w.Name, got, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
