package explain

import (
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// The walkthrough's name, explained: published, and where its records are.
func ExampleReport_WriteText() {
	gd := v1alpha1.GatewayDNS{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dev-team", Name: "dev-team-gateway-dns", Generation: 1},
		Spec:       v1alpha1.GatewayDNSSpec{Service: "projectcontour/envoy"},
		Status: v1alpha1.GatewayDNSStatus{ObservedGeneration: 1, SelectedClusters: 2, ReadyClusters: 2, HealthyClusters: 2,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Published"}},
			Clusters: []v1alpha1.ClusterStatus{
				{Name: "cluster-a", Ready: true, Reason: "Published", Healthy: true, Answered: true, Addresses: []string{"172.18.255.200"}},
				{Name: "cluster-b", Ready: true, Reason: "Published", Healthy: true, Answered: true, Addresses: []string{"172.18.255.201"}},
			}}}
	cfg := Config{Zone: "xcc.test", ClusterSetZone: contract.DefaultClusterSetZone}
	n := Classify("kuard.gateway.cluster-a.dev-team.clusters.xcc.test", "", cfg)
	_ = Build(n, Facts{GatewayDNS: []v1alpha1.GatewayDNS{gd}}, now).WriteText(os.Stdout, now)
	// Output:
	// name:    kuard.gateway.cluster-a.dev-team.clusters.xcc.test
	// shape:   gateway, *.gateway.<cluster>.<ns>.clusters.xcc.test
	// owner:   namespace dev-team, cluster cluster-a
	// answer:  records
	// reason:  Published: cluster-a is published in every target: 172.18.255.200
	// GatewayDNS dev-team/dev-team-gateway-dns: Ready, Published
	//   cluster cluster-a: Published, healthy; addresses 172.18.255.200
	// records: etcd key /skydns/test/xcc/clusters/dev-team/cluster-a/gateway/ in the serve etcd of each workload cluster:
	//   kubectl -n xcc-dns port-forward statefulset/xcc-dns 2379:2379 &
	//   etcdctl --endpoints http://127.0.0.1:2379 get --prefix /skydns/test/xcc/clusters/dev-team/cluster-a/gateway/
}
