package corefile

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const readVersion = "7"

func corednsConfigMap(corefile string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: DefaultConfigMap, ResourceVersion: readVersion},
		Data:       map[string]string{CorefileKey: corefile},
	}
}

// updates returns the ConfigMaps the client was asked to write.
func updates(client *fake.Clientset) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == "configmaps" {
			out = append(out, u.GetObject().(*corev1.ConfigMap))
		}
	}
	return out
}

func currentCorefile(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(DefaultNamespace).Get(context.Background(), DefaultConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data[CorefileKey]
}

func TestApplyToConfigMap(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(corednsConfigMap(kubeadmCorefile))
	opts := Options{ForwardTo: forwardTo}

	action, err := ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, opts)
	if err != nil || action != Added {
		t.Fatalf("first run: %q, %v; want %q", action, err, Added)
	}
	if got := currentCorefile(t, client); got != kubeadmCorefile+"\n"+blockFor {
		t.Errorf("Corefile after the first run:\n%s", got)
	}
	ups := updates(client)
	if len(ups) != 1 {
		t.Fatalf("first run wrote %d times, want 1", len(ups))
	}
	if ups[0].ResourceVersion != readVersion {
		t.Errorf("update sent resourceVersion %q, want the one read (%q)", ups[0].ResourceVersion, readVersion)
	}

	client.ClearActions()
	action, err = ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, opts)
	if err != nil || action != Unchanged {
		t.Fatalf("second run: %q, %v; want %q", action, err, Unchanged)
	}
	if n := len(updates(client)); n != 0 {
		t.Errorf("second run wrote %d times, want no API write", n)
	}

	action, err = ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, Options{Remove: true})
	if err != nil || action != Removed {
		t.Fatalf("remove: %q, %v; want %q", action, err, Removed)
	}
	if got := currentCorefile(t, client); got != kubeadmCorefile {
		t.Errorf("Corefile after remove:\n%s\nwant the original", got)
	}
}

// TestApplyToConfigMapConflict: someone edits the Corefile between our read
// and our write; the write conflicts, and the retry patches their text
// instead of overwriting it.
func TestApplyToConfigMapConflict(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(corednsConfigMap(kubeadmCorefile))
	const theirEdit = "# added by someone else\n"
	conflicts := 0
	client.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		// Their edit lands first, with a new resourceVersion.
		theirs := corednsConfigMap(theirEdit + kubeadmCorefile)
		theirs.ResourceVersion = "8"
		if err := client.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, theirs, DefaultNamespace); err != nil {
			t.Errorf("concurrent edit: %v", err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, DefaultConfigMap, nil)
	})
	action, err := ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, Options{ForwardTo: forwardTo})
	if err != nil || action != Added {
		t.Fatalf("ApplyToConfigMap: %q, %v", action, err)
	}
	if want := theirEdit + kubeadmCorefile + "\n" + blockFor; currentCorefile(t, client) != want {
		t.Errorf("Corefile:\n%s\nwant their edit kept and the block added:\n%s", currentCorefile(t, client), want)
	}
	ups := updates(client)
	if len(ups) != 2 || ups[1].ResourceVersion != "8" {
		t.Errorf("writes: %d (want 2, the second with resourceVersion 8)", len(ups))
	}
}

func TestApplyToConfigMapRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("broken Corefile is not written", func(t *testing.T) {
		broken := strings.TrimSuffix(kubeadmCorefile, "}\n")
		client := fake.NewClientset(corednsConfigMap(broken))
		if _, err := ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, Options{ForwardTo: forwardTo}); err == nil {
			t.Fatal("patched a Corefile with a missing brace")
		}
		if n := len(updates(client)); n != 0 {
			t.Errorf("wrote %d times", n)
		}
	})
	t.Run("missing ConfigMap", func(t *testing.T) {
		client := fake.NewClientset()
		if _, err := ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, Options{ForwardTo: forwardTo}); err == nil || !apierrors.IsNotFound(err) {
			t.Errorf("add to a missing ConfigMap: %v, want not found", err)
		}
		if a, err := ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, Options{Remove: true}); err != nil || a != Unchanged {
			t.Errorf("remove from a missing ConfigMap: %q, %v; want nothing to do", a, err)
		}
	})
	t.Run("no Corefile key", func(t *testing.T) {
		cm := corednsConfigMap("")
		cm.Data = map[string]string{"other": "x"}
		client := fake.NewClientset(cm)
		if _, err := ApplyToConfigMap(ctx, client, DefaultNamespace, DefaultConfigMap, Options{ForwardTo: forwardTo}); err == nil {
			t.Error("patched a ConfigMap without a Corefile key")
		}
	})
}

func TestServiceAddress(t *testing.T) {
	svc := func(name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: name},
			Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
		}
	}
	client := fake.NewClientset(
		svc("named", "10.96.0.20", corev1.ServicePort{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP}, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}),
		svc("udp", "fd00::20", corev1.ServicePort{Name: "tcp", Port: 5300, Protocol: corev1.ProtocolTCP}, corev1.ServicePort{Name: "udp", Port: 5353, Protocol: corev1.ProtocolUDP}),
		svc("headless", corev1.ClusterIPNone, corev1.ServicePort{Name: "dns", Port: 53}),
		svc("noports", "10.96.0.21"),
	)
	tests := []struct{ ref, want, wantErr string }{
		{ref: "xcc-dns/named", want: "10.96.0.20:53"},
		{ref: "xcc-dns/udp", want: "[fd00::20]:5353"},
		{ref: "xcc-dns/headless", wantErr: "no ClusterIP"},
		{ref: "xcc-dns/noports", wantErr: "no ports"},
		{ref: "xcc-dns/absent", wantErr: "not found"},
		{ref: "named", wantErr: "namespace/name"},
	}
	for _, tt := range tests {
		got, err := ServiceAddress(context.Background(), client, tt.ref)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ServiceAddress(%q) = %q, %v; want error %q", tt.ref, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ServiceAddress(%q) = %q, %v; want %q", tt.ref, got, err, tt.want)
		}
	}
}

// A dual-stack Service may be forwarded to at each of its ClusterIPs.
func TestServiceAddresses(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "xcc-dns", Name: "xcc-dns"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.53", ClusterIPs: []string{"10.96.0.53", "fd00::53"},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	got, err := ServiceAddresses(svc)
	if want := []string{"10.96.0.53:53", "[fd00::53]:53"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ServiceAddresses = %v, %v; want %v", got, err, want)
	}
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	if got, err := ServiceAddresses(svc); err == nil || !strings.Contains(err.Error(), "no ClusterIP") {
		t.Errorf("headless: %v, %v; want no ClusterIP", got, err)
	}
}
