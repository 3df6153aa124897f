package corefile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

const (
	// DefaultNamespace and DefaultConfigMap name the cluster DNS ConfigMap
	// kubeadm and most distributions create.
	DefaultNamespace = "kube-system"
	DefaultConfigMap = "coredns"
	// CorefileKey is the ConfigMap data key CoreDNS reads.
	CorefileKey = "Corefile"
	// dnsPortName is the Service port the chart names for DNS.
	dnsPortName = "dns"
)

// ApplyToConfigMap patches the Corefile in ConfigMap namespace/name. It
// reads the ConfigMap, computes the new text with Patch and writes only when
// the text changes, with the resourceVersion it read: a concurrent change
// (kubectl edit, an addon manager) makes the write conflict, and the whole
// read-patch-write is retried on the fresh object rather than overwriting
// it. A missing ConfigMap is an error, except with Remove (nothing left to
// take out, so an uninstall is not blocked).
func ApplyToConfigMap(ctx context.Context, client kubernetes.Interface, namespace, name string, o Options) (Action, error) {
	action := Unchanged
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if o.Remove && apierrors.IsNotFound(err) {
			action = Unchanged
			return nil
		}
		if err != nil {
			return fmt.Errorf("get ConfigMap %s/%s: %w", namespace, name, err)
		}
		old, ok := cm.Data[CorefileKey]
		if !ok {
			return fmt.Errorf("ConfigMap %s/%s has no %q key", namespace, name, CorefileKey)
		}
		next, a, err := Patch(old, o)
		if err != nil {
			return fmt.Errorf("ConfigMap %s/%s: %w", namespace, name, err)
		}
		action = a
		if next == old {
			return nil
		}
		cm = cm.DeepCopy()
		cm.Data[CorefileKey] = next
		if _, err := client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			// Returned unwrapped so RetryOnConflict sees a conflict.
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("update ConfigMap %s/%s: %w", namespace, name, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return action, nil
}

// ServiceAddress returns the address cluster DNS forwards to for the Service
// ref ("namespace/name"): its ClusterIP and its DNS port (the port named
// "dns", else the first UDP port, else the first port). Reading it here
// rather than templating it into the hook keeps the hook right even when the
// Service got its ClusterIP after the chart rendered.
func ServiceAddress(ctx context.Context, client kubernetes.Interface, ref string) (string, error) {
	namespace, name, err := SplitRef(ref)
	if err != nil {
		return "", fmt.Errorf("service: %w", err)
	}
	svc, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get Service %s: %w", ref, err)
	}
	return serviceAddress(svc)
}

// serviceAddress is ServiceAddress of a Service already read.
func serviceAddress(svc *corev1.Service) (string, error) {
	ref := svc.Namespace + "/" + svc.Name
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		return "", fmt.Errorf("service %s has no ClusterIP (%q): cluster DNS needs one to forward to", ref, svc.Spec.ClusterIP)
	}
	port, err := dnsPort(svc.Spec.Ports)
	if err != nil {
		return "", fmt.Errorf("service %s: %w", ref, err)
	}
	return netip.AddrPortFrom(ip, uint16(port)).String(), nil
}

// ServiceAddresses are the addresses a forward to svc may name: its
// address as ServiceAddress gives it, then each other ClusterIP of a
// dual-stack Service with the same port.
func ServiceAddresses(svc *corev1.Service) ([]string, error) {
	first, err := serviceAddress(svc)
	if err != nil {
		return nil, err
	}
	out := []string{first}
	ap := netip.MustParseAddrPort(first)
	for _, s := range svc.Spec.ClusterIPs {
		if ip, err := netip.ParseAddr(s); err == nil && ip != ap.Addr() {
			out = append(out, netip.AddrPortFrom(ip, ap.Port()).String())
		}
	}
	return out, nil
}

// dnsPort picks the Service port DNS is served on.
func dnsPort(ports []corev1.ServicePort) (int32, error) {
	if len(ports) == 0 {
		return 0, errors.New("no ports")
	}
	for _, p := range ports {
		if p.Name == dnsPortName {
			return p.Port, nil
		}
	}
	for _, p := range ports {
		if p.Protocol == corev1.ProtocolUDP {
			return p.Port, nil
		}
	}
	return ports[0].Port, nil
}

// String makes an Action print as a word in logs.
func (a Action) String() string { return string(a) }
