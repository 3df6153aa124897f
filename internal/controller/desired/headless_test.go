package desired

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// pgSlice is an EndpointSlice of databases/postgres holding eps.
func pgSlice(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := testfixture.ServiceEndpoints("databases", "postgres", "postgres-abcde", eps...)
	s.Ports = testfixture.PostgresPorts()
	return s
}

func headlessIn(name string, eps ...discoveryv1.Endpoint) Input {
	return Input{Name: name, Selected: true, ServiceSynced: true, Service: testfixture.HeadlessService(), APIHost: "192.0.2.99",
		EndpointsSynced: true, Endpoints: []*discoveryv1.EndpointSlice{pgSlice(eps...)}}
}

// headlessView is the headless slices of d as serve reads them: per
// source cluster its pods (label=address, "unready" when unhealthy), the
// ports and TTL.
func headlessView(t *testing.T, d Result) []string {
	t.Helper()
	var out []string
	for _, s := range d.Slices {
		if s.Labels[contract.LabelRecord] != string(contract.KindHeadless) {
			t.Errorf("slice %s of kind %q: a headless export publishes only headless slices", s.Name, s.Labels[contract.LabelRecord])
			continue
		}
		p, ok, problems := contract.Parse(s, "xcc.test")
		if !ok || len(problems) > 0 {
			t.Errorf("serve refuses %s: %v", s.Name, problems)
			continue
		}
		for _, pd := range p.Pods {
			v := fmt.Sprintf("%s %s %s=%s ttl=%d", p.Source, p.Name, pd.Label, pd.Host, p.TTL)
			for _, port := range p.Ports {
				v += fmt.Sprintf(" %s/%s/%d", port.Name, port.Protocol, port.Port)
			}
			if !pd.Ready {
				v += " unready"
			}
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// TestComputeHeadless checks what Compute publishes of a headless export.
// It is long for its table, one row per case, and one loop over it.
func TestComputeHeadless(t *testing.T) {
	const x = "db.dev-team.services.xcc.test"
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	row := func(cluster, pod, addr string, extra ...string) string {
		return strings.Join(append([]string{cluster, x, pod + "=" + addr, "ttl=5", "pg/TCP/5432"}, extra...), " ")
	}
	lastA := &contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{{
		Ports: []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}},
		IPv4:  []contract.Endpoint{{Address: "10.1.0.5", Hostname: "db-0"}},
	}}}
	many := make([]discoveryv1.Endpoint, contract.MaxAddressesPerSlice+1)
	for i := range many {
		many[i] = testfixture.PodEndpoint(fmt.Sprintf("10.1.%d.%d", i/200, i%200+1), "", true)
	}
	tests := []struct {
		name     string
		allowed  string
		last     []v1alpha1.ClusterStatus
		clusters []Input
		want     []string
		// reason, pods and healthReason per cluster
		status map[string]string
		msg    map[string]string // a part of the message, per cluster
	}{
		{
			name: "ready pods of two clusters, by hostname",
			clusters: []Input{
				headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "db-0", true), testfixture.PodEndpoint("10.1.0.6", "db-1", true)),
				headlessIn("cluster-b", testfixture.PodEndpoint("10.2.0.5", "db-0", true)),
			},
			want:   []string{row("cluster-a", "db-0", "10.1.0.5"), row("cluster-a", "db-1", "10.1.0.6"), row("cluster-b", "db-0", "10.2.0.5")},
			status: map[string]string{"cluster-a": "Published 2 Healthy", "cluster-b": "Published 1 Healthy"},
		},
		{
			name: "not-ready and terminating pods are left out; no hostname: dashed address",
			clusters: []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "", true), testfixture.PodEndpoint("10.1.0.6", "db-1", false), func() discoveryv1.Endpoint {
				e := testfixture.PodEndpoint("10.1.0.7", "db-2", true)
				e.Conditions.Terminating = ptr.To(true)
				return e
			}())},
			want:   []string{row("cluster-a", "10-1-0-5", "10.1.0.5")},
			status: map[string]string{"cluster-a": "Published 1 Healthy"},
		},
		{
			name:     "no ready pod: published, no slices, not healthy",
			clusters: []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.6", "db-1", false)), headlessIn("cluster-b", testfixture.PodEndpoint("10.2.0.5", "db-0", true))},
			want:     []string{row("cluster-b", "db-0", "10.2.0.5")},
			status:   map[string]string{"cluster-a": "Published 0 NoReadyEndpoints", "cluster-b": "Published 1 Healthy"},
		},
		{
			name:     "allowed CIDRs apply to pod addresses, refusals named",
			allowed:  "10.1.0.0/16",
			clusters: []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "db-0", true), testfixture.PodEndpoint("10.9.0.6", "db-1", true))},
			want:     []string{row("cluster-a", "db-0", "10.1.0.5")},
			status:   map[string]string{"cluster-a": "Published 1 Healthy"},
			msg:      map[string]string{"cluster-a": "refused: address 10.9.0.6: outside the allowed CIDRs"},
		},
		{
			name:     "every pod refused",
			allowed:  "10.1.0.0/16",
			clusters: []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.9.0.6", "db-1", true))},
			status:   map[string]string{"cluster-a": "NoValidAddresses 0 NoReadyEndpoints"},
			msg:      map[string]string{"cluster-a": "10.9.0.6"},
		},
		{
			name: "a Service that is not headless is refused",
			clusters: []Input{with(headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "db-0", true)), func(i *Input) {
				i.Service = testfixture.HeadlessService()
				i.Service.Spec.ClusterIP = "10.96.0.10"
			})},
			status: map[string]string{"cluster-a": "ServiceNotHeadless 0 NoReadyEndpoints"},
			msg:    map[string]string{"cluster-a": `clusterIP "10.96.0.10", not None`},
		},
		{
			name:     "a missing Service",
			clusters: []Input{with(headlessIn("cluster-a"), func(i *Input) { i.Service = nil })},
			status:   map[string]string{"cluster-a": "ServiceNotFound 0 NoReadyEndpoints"},
		},
		{
			name:     "an unavailable Cluster's pods are published unready",
			clusters: []Input{with(headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "db-0", true)), func(i *Input) { i.Unavailable = "condition Available is False" })},
			want:     []string{row("cluster-a", "db-0", "10.1.0.5", "unready")},
			status:   map[string]string{"cluster-a": "Published 1 ClusterNotAvailable"},
		},
		{
			name:     "a Cluster being deleted publishes nothing",
			clusters: []Input{with(headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "db-0", true)), func(i *Input) { i.Deleting = true; i.LastHeadless = lastA })},
			status:   map[string]string{"cluster-a": "ClusterDeleting 0 ClusterDeleting"},
		},
		{
			name:     "too many endpoints: the last ones stay",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{with(headlessIn("cluster-a", many...), func(i *Input) { i.LastHeadless = lastA })},
			want:     []string{row("cluster-a", "db-0", "10.1.0.5")},
			status:   map[string]string{"cluster-a": "TooManyEndpoints 1 Healthy"},
			msg:      map[string]string{"cluster-a": "1001 ready endpoints"},
		},
		{
			name:     "too many endpoints, nothing published before",
			clusters: []Input{headlessIn("cluster-a", many...)},
			status:   map[string]string{"cluster-a": "TooManyEndpoints 0 NoReadyEndpoints"},
		},
		{
			name:     "unreachable cluster keeps its last pods and health",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{{Name: "cluster-a", Selected: true, LastHeadless: lastA}},
			want:     []string{row("cluster-a", "db-0", "10.1.0.5")},
			status:   map[string]string{"cluster-a": "ClusterUnreachable 1 Healthy"},
		},
		{
			name:     "unreachable cluster that Cluster API says is unavailable turns unready",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{{Name: "cluster-a", Selected: true, LastHeadless: lastA, Unavailable: "condition Available is False"}},
			want:     []string{row("cluster-a", "db-0", "10.1.0.5", "unready")},
			status:   map[string]string{"cluster-a": "ClusterUnreachable 1 ClusterNotAvailable"},
		},
		{
			name:     "no kubeconfig keeps the last pods",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{{Name: "cluster-a", Selected: true, LastHeadless: lastA, AccessReason: ReasonKubeconfigMissing, AccessMessage: "gone"}},
			want:     []string{row("cluster-a", "db-0", "10.1.0.5")},
			status:   map[string]string{"cluster-a": "KubeconfigMissing 1 Healthy"},
		},
		{
			name:    "kept pods pass the checks of live ones: outside the allowed CIDRs or with a bad hostname they go",
			allowed: "10.1.0.0/16",
			last:    []v1alpha1.ClusterStatus{{Name: "cluster-a", Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{{Name: "cluster-a", Selected: true, LastHeadless: &contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{{
				Ports: []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}},
				IPv4:  []contract.Endpoint{{Address: "10.1.0.5", Hostname: "db-0"}, {Address: "10.9.0.5", Hostname: "db-1"}, {Address: "10.1.0.7", Hostname: "a/b"}},
			}}}}},
			want:   []string{row("cluster-a", "db-0", "10.1.0.5")},
			status: map[string]string{"cluster-a": "ClusterUnreachable 1 Healthy"},
		},
		{
			name: "EndpointSlices not listed: the last pods stay",
			last: []v1alpha1.ClusterStatus{{Name: "cluster-a", Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{with(headlessIn("cluster-a"), func(i *Input) {
				i.EndpointsSynced, i.Endpoints, i.LastHeadless = false, nil, lastA
			})},
			want:   []string{row("cluster-a", "db-0", "10.1.0.5")},
			status: map[string]string{"cluster-a": "ClusterUnreachable 1 Healthy"},
			msg:    map[string]string{"cluster-a": "list and watch on EndpointSlices"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gd := testfixture.HeadlessGatewayDNS("db")
			gd.Status.Clusters = tt.last
			var allowed cidr.List
			if tt.allowed != "" {
				var err error
				if allowed, err = cidr.Parse(tt.allowed); err != nil {
					t.Fatal(err)
				}
			}
			d := Compute(gd, "xcc.test", allowed, tt.clusters)
			got := headlessView(t, d)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("slices:\n got %q\nwant %q", got, want)
			}
			if len(d.Clusters) != len(tt.status) {
				t.Errorf("status entries %+v, want %v", d.Clusters, tt.status)
			}
			for _, st := range d.Clusters {
				gotSt := fmt.Sprintf("%s %d %s", st.Reason, st.Pods, st.HealthReason)
				if gotSt != tt.status[st.Name] || st.Healthy != (st.HealthReason == v1alpha1.HealthReasonHealthy) || st.Ready != (st.Reason == ReasonPublished) {
					t.Errorf("cluster %s: %q healthy %v ready %v, want %q", st.Name, gotSt, st.Healthy, st.Ready, tt.status[st.Name])
				}
				if len(st.Addresses)+len(st.APIAddresses) > 0 {
					t.Errorf("cluster %s: a headless export lists no addresses in status: %+v", st.Name, st)
				}
				if m := tt.msg[st.Name]; !strings.Contains(st.Message, m) {
					t.Errorf("cluster %s: message %q, want it to say %q", st.Name, st.Message, m)
				}
			}
			if len(d.ConflictOwners) > 0 {
				t.Errorf("conflict owners %v", d.ConflictOwners)
			}
			// What was published is the next sync's last: a kept cluster
			// publishes the same again.
			next := slices.Clone(tt.clusters)
			for i := range next {
				if eps, ok := d.Headless[next[i].Name]; ok {
					next[i].LastHeadless = &eps
				} else {
					next[i].LastHeadless = nil
				}
			}
			gd2 := gd.DeepCopy()
			gd2.Status.Clusters = d.Clusters
			if got2 := headlessView(t, Compute(gd2, "xcc.test", allowed, next)); !slices.Equal(got2, got) {
				t.Errorf("second sync from the first's state: %q, want %q", got2, got)
			}
		})
	}
}

func TestComputeHeadlessTTLAndLocality(t *testing.T) {
	gd := testfixture.HeadlessGatewayDNS("db")
	gd.Spec.TTL = ptr.To(int32(30))
	gd.Spec.Locality = &v1alpha1.Locality{Policy: v1alpha1.LocalityLocal}
	d := Compute(gd, "xcc.test", nil, []Input{headlessIn("cluster-a", testfixture.PodEndpoint("10.1.0.5", "db-0", true)), headlessIn("cluster-b", testfixture.PodEndpoint("10.2.0.5", "db-0", true))})
	if len(d.Slices) != 2 {
		t.Fatalf("slices %d, want one per cluster", len(d.Slices))
	}
	for _, s := range d.Slices {
		p, ok, _ := contract.Parse(s, "xcc.test")
		if !ok || p.TTL != 30 || p.Locality.Policy != contract.PolicyLocal || s.Annotations[contract.AnnotationHostname] != "db.dev-team.services.xcc.test" {
			t.Errorf("slice %s: ttl %d locality %+v annotations %v", s.Name, p.TTL, p.Locality, s.Annotations)
		}
	}
	if len(d.Sources) != 2 || !slices.Equal(d.Sources[0].Ready, []string{"10.1.0.5"}) {
		t.Errorf("sources %+v", d.Sources)
	}
	// Status says, as for gateways, which clusters some DNS answers:
	// with Local and a self marker per cluster, each answers its own.
	answered := contract.Answered(d.Locality, d.Sources, [][]string{{"cluster-a"}, {"cluster-b"}})
	if !answered["cluster-a"] || !answered["cluster-b"] {
		t.Errorf("answered %v", answered)
	}
}
