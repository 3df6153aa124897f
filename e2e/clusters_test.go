package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const apiTimeout = 30 * time.Second

// testLabClusters checks the lab itself: the objects Cluster API and a load
// balancer would have made are there, and a kubeconfig read from a
// <cluster>-kubeconfig Secret reaches its workload cluster.
func testLabClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	mgmt := theLab.Management
	for _, w := range theLab.Workloads {
		c, err := mgmt.Dynamic.Resource(lab.ClusterGVR).Namespace(lab.ClusterNamespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Cluster %s: %v", w.Name, err)
		}
		port, _, _ := unstructured.NestedInt64(c.Object, "spec", "controlPlaneEndpoint", "port")
		if int(port) != w.Port {
			t.Errorf("Cluster %s: controlPlaneEndpoint.port %d, want %d", w.Name, port, w.Port)
		}

		data, err := lab.KubeconfigFromSecret(ctx, mgmt, w.Name)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			t.Fatalf("kubeconfig Secret of %s: %v", w.Name, err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatalf("client from kubeconfig Secret of %s: %v", w.Name, err)
		}
		svc, err := cs.CoreV1().Services(lab.GatewayNamespace).Get(ctx, lab.GatewayName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("envoy Service of %s through its kubeconfig Secret: %v", w.Name, err)
		}
		gw := theLab.Gateways[w.Name]
		if got, want := len(svc.Status.LoadBalancer.Ingress), len(gw.IPs)+boolInt(gw.Hostname != ""); got != want {
			t.Errorf("envoy Service of %s: %d load-balancer ingress entries, want %d", w.Name, got, want)
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, lab.SliceNamespace, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s in %s: %v", lab.SliceNamespace, w.Name, err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
