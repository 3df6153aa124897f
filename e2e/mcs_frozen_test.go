package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testMCSFrozenMember: a ClusterSet of cluster-a, cluster-b and a third
// member whose API server is frozen (SIGSTOP: it accepts connections and
// answers nothing). A new export of cluster-a reaches cluster-b, and an
// unexport leaves it, within twice the time they take with every member
// healthy (and a few seconds, the resolution of the poll and of the
// cluster DNS's negative cache); the frozen member gets the import once
// it is thawed.
func testMCSFrozenMember(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	mgmt := theLab.Management
	a, b := theLab.Workload(lab.ClusterA), theLab.Workload(lab.ClusterB)
	dnsB := theLab.DNS[lab.ClusterB].ClusterDNSAddr
	const set, ns, label = "frozen", "frozen", "xcc-frozen-test"
	f, err := theLab.AddMember(ctx, "cluster-f", label, "true")
	if f != nil {
		t.Cleanup(func() {
			f.Thaw()
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
			for _, n := range []string{"one", "two"} {
				if err := lab.DeleteExportedService(ctx, a, ns, n); err != nil {
					t.Error(err)
				}
			}
			if err := theLab.RemoveMember(ctx, f); err != nil {
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
	for _, w := range []*lab.Cluster{b, f} {
		if _, err := w.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if _, err := lab.ApplyYAML(ctx, mgmt, lab.ClusterSetGVR, lab.ClusterSetSelecting(set, label, "true")); err != nil {
		t.Fatal(err)
	}
	httpPort := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	export := func(name, addr string) time.Time {
		s := lab.ExportedService{Namespace: ns, Name: name, Ports: httpPort, Pods: []lab.HeadlessPod{{Address: addr, Ready: true}}}
		if err := lab.CreateExportedService(ctx, a, s); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	// arrives is how long after since the import reaches cluster-b and
	// cluster-b's cluster DNS answers its ClusterSetIP.
	arrives := func(name string, since time.Time) time.Duration {
		imp := waitImport(t, b, ns, name, func(i *lab.Import) bool { return len(i.IPs) > 0 })
		expect(t, dnsB, lab.ClusterSetHost(ns, name), dns.TypeA, dns.RcodeSuccess, imp.IPs...)
		return time.Since(since)
	}
	leaves := func(name string) time.Duration {
		began := time.Now()
		if err := lab.Unexport(ctx, a, ns, name); err != nil {
			t.Fatal(err)
		}
		waitImport(t, b, ns, name, nil)
		expect(t, dnsB, lab.ClusterSetHost(ns, name), dns.TypeA, dns.RcodeNameError)
		return time.Since(began)
	}

	healthyIn := arrives("one", export("one", "198.51.100.151"))
	waitImport(t, f, ns, "one", func(i *lab.Import) bool { return len(i.IPs) > 0 })
	healthyOut := leaves("one")
	t.Logf("every member healthy: an export reached cluster-b in %s, an unexport left it in %s", healthyIn.Round(10*time.Millisecond), healthyOut.Round(10*time.Millisecond))

	if err := f.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozenIn := arrives("two", export("two", "198.51.100.152"))
	// Export one again (its Service is still there), then take it away
	// again, with the member frozen.
	if err := lab.Export(ctx, a, ns, "one"); err != nil {
		t.Fatal(err)
	}
	arrives("one", time.Now())
	frozenOut := leaves("one")
	t.Logf("cluster-f frozen: an export reached cluster-b in %s, an unexport left it in %s", frozenIn.Round(10*time.Millisecond), frozenOut.Round(10*time.Millisecond))
	// The poll and the cluster DNS's 5 s negative cache give each figure
	// a few seconds of noise on its own.
	const slack = 6 * time.Second
	if frozenIn > 2*healthyIn+slack {
		t.Errorf("with a member frozen an export took %s to reach cluster-b, healthy %s", frozenIn, healthyIn)
	}
	if frozenOut > 2*healthyOut+slack {
		t.Errorf("with a member frozen an unexport took %s to leave cluster-b, healthy %s", frozenOut, healthyOut)
	}

	f.Thaw()
	waitImport(t, f, ns, "two", func(i *lab.Import) bool { return len(i.IPs) > 0 })
}
