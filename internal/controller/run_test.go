package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDiscoverClusterResource(t *testing.T) {
	tests := []struct {
		name    string
		served  []string
		want    string
		wantErr bool
	}{
		{name: "both served: v1beta2", served: []string{"v1beta1", "v1beta2"}, want: "v1beta2"},
		{name: "only v1beta1", served: []string{"v1beta1"}, want: "v1beta1"},
		{name: "no Cluster API", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
			for _, v := range tt.served {
				d.Resources = append(d.Resources, &metav1.APIResourceList{
					GroupVersion: clusterAPIGroup + "/" + v,
					APIResources: []metav1.APIResource{{Name: "clusters", Namespaced: true, Kind: "Cluster"}},
				})
			}
			gvr, err := discoverClusterResource(d)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && (gvr.Version != tt.want || gvr.Resource != "clusters" || gvr.Group != clusterAPIGroup) {
				t.Errorf("got %v, want version %s", gvr, tt.want)
			}
		})
	}
}

func TestLeaderElectionNamespaceFromPod(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "xcc-system")
	if got := DefaultLeaderElectionNamespaceFromPod(); got != "xcc-system" {
		t.Errorf("got %q, want the pod's namespace", got)
	}
}
