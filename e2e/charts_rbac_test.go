package e2e

import (
	"context"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// testChartRBAC checks that the charts' ServiceAccounts, which serve and
// the controller run with, cannot do more than the charts grant: every
// action here is outside their Roles and must be refused with 403 (as
// dry runs: authorization comes first, and nothing is ever changed). It
// runs before testManagementDown (suite, main_test.go), which leaves the
// management API server stopped.
func testChartRBAC(t *testing.T) {
	if theLab.Controller == nil {
		t.Skip("the lab runs no controller")
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()

	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: got %v, want 403 Forbidden", what, err)
		}
	}

	w := theLab.Workload(lab.ClusterA)
	serve := kubeClient(t, theLab.DNS[w.Name].ServeKubeconfig)
	// What serve may do: read EndpointSlices in its namespace.
	if _, err := serve.DiscoveryV1().EndpointSlices(lab.SliceNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("serve: list EndpointSlices in %s: %v", lab.SliceNamespace, err)
	}
	_, err := serve.CoreV1().Secrets(lab.SliceNamespace).List(ctx, metav1.ListOptions{})
	forbidden("serve: list Secrets in "+lab.SliceNamespace, err)
	_, err = serve.DiscoveryV1().EndpointSlices(lab.SliceNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "rbac-probe"},
		AddressType: discoveryv1.AddressTypeIPv4,
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	forbidden("serve: create an EndpointSlice in "+lab.SliceNamespace, err)
	_, err = serve.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("serve: list EndpointSlices in kube-system", err)
	// The forward block: serve may read the cluster DNS ConfigMap and its
	// own Service, and nothing else of either kind.
	if _, err := serve.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{}); err != nil {
		t.Errorf("serve: get kube-system/coredns: %v", err)
	}
	if _, err := serve.CoreV1().Services(lab.SliceNamespace).Get(ctx, lab.ReleaseName, metav1.GetOptions{}); err != nil {
		t.Errorf("serve: get its Service: %v", err)
	}
	_, err = serve.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("serve: list ConfigMaps in kube-system", err)
	_, err = serve.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	forbidden("serve: get another ConfigMap in kube-system", err)
	_, err = serve.CoreV1().Services("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("serve: list Services in kube-system", err)

	cfg, err := clientcmd.BuildConfigFromFlags("", theLab.ControllerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// What the controller may do: read Clusters.
	if _, err := dyn.Resource(lab.ClusterGVR).Namespace(lab.ClusterNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("controller: list Clusters: %v", err)
	}
	err = dyn.Resource(lab.ClusterGVR).Namespace(lab.ClusterNamespace).Delete(ctx, w.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	forbidden("controller: delete Cluster "+w.Name, err)
	// ClusterSets: the controller patches their finalizer, never deletes one.
	err = dyn.Resource(lab.ClusterSetGVR).Namespace(lab.ClusterNamespace).Delete(ctx, "rbac-probe", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	forbidden("controller: delete a ClusterSet", err)
	controller := kubeClient(t, theLab.ControllerKubeconfig)
	_, err = controller.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("controller: list ConfigMaps in kube-system", err)
}

func kubeClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
