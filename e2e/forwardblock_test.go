package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	chartFinalizer = "xcc-dns.io/cluster-dns-forward"
	keepPeriod     = time.Second
	repairTimeout  = 30 * time.Second
)

// testForwardBlockFollowsTheService: a serve replica run as the workload
// chart runs it (--cluster-dns-configmap, --cluster-dns-service, the
// chart's ServiceAccount) keeps cluster-a's forward block pointing at the
// chart's Service's ClusterIP: a dropped block comes back, a block pointed
// elsewhere is pointed back. Deleting the Service without any hook (as
// helm uninstall --no-hooks, or a deleted namespace, does) takes the block
// out before the Service, and so its ClusterIP, goes: at no moment does
// the block forward to an address another Service could claim. The
// chart's pre-delete hook (patch-corefile --remove --forward-to-service)
// removes the block for good: the replicas, seeing no finalizer, do not
// put it back.
func testForwardBlockFollowsTheService(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	a := theLab.DNS[lab.ClusterA]
	w := a.Cluster
	svcs := w.Client.CoreV1().Services(lab.SliceNamespace)
	svc, err := svcs.Get(ctx, lab.ReleaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasFinalizer(svc) {
		t.Fatalf("the chart's Service has finalizers %v, want %s", svc.Finalizers, chartFinalizer)
	}
	target := svc.Spec.ClusterIP + ":53"
	original, err := lab.ClusterCorefile(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := a.AddReplica(ctx, 1,
		"--cluster-dns-configmap", "kube-system/coredns",
		"--cluster-dns-service", lab.SliceNamespace+"/"+lab.ReleaseName,
		"--cluster-dns-period", keepPeriod.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keeper.Stop(false)
		// The lab's state back: the Service as the chart made it, the
		// Corefile as the lab patched it.
		ctx := context.Background()
		if _, err := svcs.Get(ctx, lab.ReleaseName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			again := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
				Name: svc.Name, Namespace: svc.Namespace, Labels: svc.Labels, Annotations: svc.Annotations, Finalizers: svc.Finalizers,
			}, Spec: corev1.ServiceSpec{Type: svc.Spec.Type, Selector: svc.Spec.Selector, Ports: svc.Spec.Ports}}
			if _, err := svcs.Create(ctx, again, metav1.CreateOptions{}); err != nil {
				t.Errorf("create the chart's Service again: %v", err)
			}
		}
		if err := setCorefile(ctx, w.Client, original); err != nil {
			t.Errorf("restore kube-system/coredns: %v", err)
		}
	})

	waitBlock := func(what string, ok func(string) bool) {
		t.Helper()
		began := time.Now()
		for {
			cf, err := lab.ClusterCorefile(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			if ok(cf) {
				t.Logf("%s after %s", what, time.Since(began).Round(10*time.Millisecond))
				return
			}
			if time.Since(began) > repairTimeout {
				t.Fatalf("%s: not within %s; Corefile:\n%s", what, repairTimeout, cf)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	kept := func(cf string) bool {
		return strings.Contains(cf, "forward . "+target+"\n") &&
			strings.Contains(cf, "; service "+lab.SliceNamespace+"/"+lab.ReleaseName+"\n")
	}
	waitBlock("block forwards to the Service's ClusterIP "+target, kept)

	// An addon manager puts back the Corefile it knows.
	if err := setCorefile(ctx, w.Client, lab.ClusterDNSCorefile); err != nil {
		t.Fatal(err)
	}
	waitBlock("dropped block re-added", kept)

	// Someone points the block elsewhere.
	cf, _ := lab.ClusterCorefile(ctx, w)
	if err := setCorefile(ctx, w.Client, strings.Replace(cf, "forward . "+target, "forward . 192.0.2.53:53", 1)); err != nil {
		t.Fatal(err)
	}
	waitBlock("block pointed back at the Service", kept)

	// The pre-delete hook: the finalizer goes first, so the replicas do
	// not put back the block it then removes.
	out, err := exec.CommandContext(ctx, theLab.Bin("xcc-syncer"), "patch-corefile", "--kubeconfig", w.Kubeconfig,
		"--remove", "--forward-to-service", lab.SliceNamespace+"/"+lab.ReleaseName).CombinedOutput()
	if err != nil {
		t.Fatalf("patch-corefile --remove --forward-to-service: %v\n%s", err, out)
	}
	for end := time.Now().Add(3 * keepPeriod); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		cf, err := lab.ClusterCorefile(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(cf, lab.Zone+":") {
			t.Fatalf("the block is back after the pre-delete hook removed it:\n%s", cf)
		}
	}
	now, err := svcs.Get(ctx, lab.ReleaseName, metav1.GetOptions{})
	if err != nil || hasFinalizer(now) {
		t.Fatalf("after the pre-delete hook the Service has finalizers %v (%v)", now.Finalizers, err)
	}
	// An upgrade puts the finalizer back (the chart renders it): kept again.
	now.Finalizers = append(now.Finalizers, chartFinalizer)
	if _, err := svcs.Update(ctx, now, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBlock("block back with the finalizer", kept)

	// Delete the Service as an uninstall without hooks does. Until the
	// block is out, the Service must still exist (holding its ClusterIP).
	if err := svcs.Delete(ctx, lab.ReleaseName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for {
		// The Service first: once it is gone, the block must be too.
		_, getErr := svcs.Get(ctx, lab.ReleaseName, metav1.GetOptions{})
		cf, err := lab.ClusterCorefile(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		blockIn := strings.Contains(cf, lab.Zone+":")
		if blockIn && apierrors.IsNotFound(getErr) {
			t.Fatalf("the Service is gone but the block still forwards to %s:\n%s", target, cf)
		}
		if !blockIn && apierrors.IsNotFound(getErr) {
			t.Logf("block out and Service gone %s after the delete", time.Since(began).Round(10*time.Millisecond))
			if strings.TrimSpace(cf) != strings.TrimSpace(lab.ClusterDNSCorefile) {
				t.Errorf("Corefile after the block went:\n%s\nwant the original:\n%s", cf, lab.ClusterDNSCorefile)
			}
			break
		}
		if time.Since(began) > repairTimeout {
			t.Fatalf("block present %v, Service get: %v, %s after the delete", blockIn, getErr, repairTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The address is free again, and only now: another Service may take
	// it, and no block forwards to it.
	squatter := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "squatter", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: svc.Spec.ClusterIP, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
	}
	if _, err := w.Client.CoreV1().Services("default").Create(ctx, squatter, metav1.CreateOptions{}); err != nil {
		t.Errorf("the released ClusterIP %s cannot be taken: %v", svc.Spec.ClusterIP, err)
	} else {
		_ = w.Client.CoreV1().Services("default").Delete(ctx, "squatter", metav1.DeleteOptions{})
	}
}

// testForwardBlockHoldsTheAddress: while the block is in, a deleted
// Service keeps its ClusterIP (the finalizer): another Service asking for
// that address is refused.
func testForwardBlockHoldsTheAddress(t *testing.T) {
	requireDNS(t)
	ctx := ctxFor(t)
	w := theLab.DNS[lab.ClusterA].Cluster
	svcs := w.Client.CoreV1().Services("default")
	held := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "default", Finalizers: []string{chartFinalizer}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
	}
	held, err := svcs.Create(ctx, held, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if s, err := svcs.Get(context.Background(), "held", metav1.GetOptions{}); err == nil {
			s.Finalizers = nil
			_, _ = svcs.Update(context.Background(), s, metav1.UpdateOptions{})
		}
	}()
	if err := svcs.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "default"},
		Spec:       corev1.ServiceSpec{ClusterIP: held.Spec.ClusterIP, Ports: held.Spec.Ports},
	}
	if _, err := svcs.Create(ctx, claim, metav1.CreateOptions{}); err == nil {
		_ = svcs.Delete(ctx, "claim", metav1.DeleteOptions{})
		t.Fatalf("a Service took %s while the deleted Service holding it still had its finalizer", held.Spec.ClusterIP)
	} else {
		t.Logf("claiming %s while the finalizer holds it: %v", held.Spec.ClusterIP, err)
	}
}

func hasFinalizer(s *corev1.Service) bool {
	for _, f := range s.Finalizers {
		if f == chartFinalizer {
			return true
		}
	}
	return false
}

func setCorefile(ctx context.Context, c kubernetes.Interface, corefile string) error {
	cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data["Corefile"] = corefile
	_, err = c.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
