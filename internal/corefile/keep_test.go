package corefile

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const keptService = "xcc-dns/xcc-dns"

func chartService(clusterIP string, finalizers ...string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: "xcc-dns", Finalizers: finalizers},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
	}
}

func keepOpts() KeepOptions {
	return KeepOptions{Namespace: DefaultNamespace, ConfigMap: DefaultConfigMap, Service: keptService}
}

func keep(t *testing.T, client *fake.Clientset) Action {
	t.Helper()
	a, err := Keep(context.Background(), client, keepOpts())
	if err != nil {
		t.Fatalf("Keep: %v", err)
	}
	return a
}

func serviceFinalizers(t *testing.T, client *fake.Clientset) []string {
	t.Helper()
	svc, err := client.CoreV1().Services("xcc-dns").Get(context.Background(), "xcc-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Finalizers
}

// TestKeepRepairs: while the Service holds the finalizer, a dropped block
// comes back, a block forwarding elsewhere is pointed at the ClusterIP
// again, and a block already right is not written.
func TestKeepRepairs(t *testing.T) {
	client := fake.NewClientset(corednsConfigMap(kubeadmCorefile), chartService("10.96.0.20", Finalizer))
	if a := keep(t, client); a != Added {
		t.Fatalf("first Keep: %s, want %s", a, Added)
	}
	got := currentCorefile(t, client)
	if !strings.Contains(got, "forward . 10.96.0.20:53\n") || !strings.Contains(got, serviceTag+keptService+"\n") {
		t.Fatalf("kept Corefile:\n%s", got)
	}
	if svc, found, err := BlockService(got); err != nil || !found || svc != keptService {
		t.Errorf("BlockService = %q, %v, %v; want %q", svc, found, err, keptService)
	}
	if a := keep(t, client); a != Unchanged {
		t.Errorf("second Keep: %s, want %s", a, Unchanged)
	}
	if n := len(updates(client)); n != 1 {
		t.Errorf("%d writes, want 1", n)
	}

	// An addon manager puts its Corefile back: the block comes back, the
	// rest of the text is the manager's.
	cm := corednsConfigMap(kubeadmCorefile)
	if _, err := client.CoreV1().ConfigMaps(DefaultNamespace).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a := keep(t, client); a != Added {
		t.Errorf("Keep after the block was dropped: %s, want %s", a, Added)
	}
	if again := currentCorefile(t, client); again != got {
		t.Errorf("repaired Corefile:\n%s\nwant:\n%s", again, got)
	}

	// Someone points the block elsewhere: pointed back.
	moved := strings.Replace(got, "10.96.0.20:53", "10.96.0.99:53", 1)
	if _, err := client.CoreV1().ConfigMaps(DefaultNamespace).Update(context.Background(), corednsConfigMap(moved), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a := keep(t, client); a != Replaced || currentCorefile(t, client) != got {
		t.Errorf("Keep of a moved block: %s, Corefile:\n%s", a, currentCorefile(t, client))
	}
}

// TestKeepRemovesWithTheService: a Service being deleted has the block
// taken out first, then its finalizer; a Service gone has its block taken
// out; a Service without the finalizer (uninstall under way) is left alone.
func TestKeepRemovesWithTheService(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(corednsConfigMap(kubeadmCorefile), chartService("10.96.0.20", Finalizer, "other.example/keep"))
	keep(t, client)

	svc, _ := client.CoreV1().Services("xcc-dns").Get(ctx, "xcc-dns", metav1.GetOptions{})
	now := metav1.Now()
	svc.DeletionTimestamp = &now
	if _, err := client.CoreV1().Services("xcc-dns").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if a := keep(t, client); a != Removed {
		t.Errorf("Keep of a Service being deleted: %s, want %s", a, Removed)
	}
	if got := currentCorefile(t, client); got != kubeadmCorefile {
		t.Errorf("Corefile after the Service's deletion:\n%s", got)
	}
	if f := serviceFinalizers(t, client); len(f) != 1 || f[0] != "other.example/keep" {
		t.Errorf("finalizers left: %v, want only the other one", f)
	}

	// Gone: a block naming it (put back by hand) goes; one naming another
	// Service stays.
	if err := client.CoreV1().Services("xcc-dns").Delete(ctx, "xcc-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	named := func(service string) string {
		next, _, err := Patch(kubeadmCorefile, Options{ForwardTo: "10.96.0.20", Service: service})
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	for _, c := range []struct {
		corefile, want string
	}{
		{named(keptService), kubeadmCorefile},
		{named("other/xcc-dns"), named("other/xcc-dns")},
		{named(""), named("")},
	} {
		if _, err := client.CoreV1().ConfigMaps(DefaultNamespace).Update(ctx, corednsConfigMap(c.corefile), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		keep(t, client)
		if got := currentCorefile(t, client); got != c.want {
			t.Errorf("Keep with the Service gone, block %q:\n%s\nwant:\n%s", c.corefile, got, c.want)
		}
	}

	// No finalizer: an uninstall took it off; the block is not re-added.
	client = fake.NewClientset(corednsConfigMap(kubeadmCorefile), chartService("10.96.0.20"))
	if a := keep(t, client); a != Unchanged || currentCorefile(t, client) != kubeadmCorefile {
		t.Errorf("Keep without the finalizer: %s, Corefile:\n%s", a, currentCorefile(t, client))
	}
}

// TestRemoveFinalizer leaves other finalizers, and a missing Service is
// no error.
func TestRemoveFinalizer(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(chartService("10.96.0.20", "a.example/x", Finalizer))
	if err := RemoveFinalizer(ctx, client, keptService); err != nil {
		t.Fatal(err)
	}
	if f := serviceFinalizers(t, client); len(f) != 1 || f[0] != "a.example/x" {
		t.Errorf("finalizers = %v", f)
	}
	if err := RemoveFinalizer(ctx, fake.NewClientset(), keptService); err != nil {
		t.Errorf("missing Service: %v", err)
	}
	if _, err := Block("xcc.test", "10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Patch(kubeadmCorefile, Options{ForwardTo: "10.0.0.1", Service: "no-slash"}); err == nil {
		t.Error("a Service that is not namespace/name was accepted")
	}
}
