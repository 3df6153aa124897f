package overview

import (
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

// The text view of a GatewayDNS one of whose targets is unreachable.
func ExampleReport_WriteText() {
	since := metav1.NewTime(t0)
	r := Build([]v1alpha1.GatewayDNS{gatewayDNS("dev-team-gateway-dns", 1, v1alpha1.GatewayDNSStatus{
		ObservedGeneration: 1, SelectedClusters: 2, ReadyClusters: 1, HealthyClusters: 2,
		Conditions: cond(metav1.ConditionFalse, "TargetUnreachable", "targets not answering"),
		Clusters: []v1alpha1.ClusterStatus{
			{Name: "cluster-a", Ready: true, Reason: "Published"},
			{Name: "cluster-b", Reason: "ClusterUnreachable", Message: "the API server has not answered since 2026-11-26T12:00:00Z", Since: &since},
		},
		Targets: []v1alpha1.TargetStatus{{Name: "cluster-b", Reason: "TargetUnreachable", Since: since}}})}, nil)
	_ = r.WriteText(os.Stdout, now)
	// Output:
	// GATEWAYDNS                     READY  STATUS             PUBLISHED  HEALTHY  BEHIND
	// dev-team/dev-team-gateway-dns  false  TargetUnreachable  1/2        2        2
	// dev-team/dev-team-gateway-dns:
	//   cluster cluster-b: ClusterUnreachable for 1m30s (since 2026-11-26T12:00:00Z)
	//     the API server has not answered since 2026-11-26T12:00:00Z
	//   target cluster-b: TargetUnreachable for 1m30s (since 2026-11-26T12:00:00Z)
	//
	// CLUSTERSET  READY  STATUS  MEMBERS  EXPORTS/IMPORTS  BEHIND
	//
	// 1 not Ready: GatewayDNS dev-team/dev-team-gateway-dns
}
