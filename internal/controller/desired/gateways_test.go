package desired

import (
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

func conditions(path []string, conds ...map[string]any) map[string]any {
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	obj := map[string]any{}
	m := obj
	for _, p := range path[:len(path)-1] {
		next := map[string]any{}
		m[p] = next
		m = next
	}
	m[path[len(path)-1]] = list
	return obj
}

func cond(typ, status string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": "R", "message": "m"}
}

func TestAvailability(t *testing.T) {
	v1beta2 := []string{"status", "conditions"}
	v1beta1v2 := []string{"status", "v1beta2", "conditions"}
	tests := []struct {
		name      string
		cluster   map[string]any
		available bool
	}{
		{"no status yet", map[string]any{}, true},
		{"no conditions yet", conditions(v1beta2), true},
		{"v1beta2 Available True", conditions(v1beta2, cond("Available", "True")), true},
		{"v1beta2 Available False", conditions(v1beta2, cond("Available", "False")), false},
		{"v1beta2 Available Unknown", conditions(v1beta2, cond("Available", "Unknown")), true},
		{"Available wins over Ready", conditions(v1beta2, cond("Ready", "False"), cond("Available", "True")), true},
		{"v1beta1 with v1beta2 conditions Available False", conditions(v1beta1v2, cond("Available", "False")), false},
		{"v1beta1 Ready False", conditions(v1beta2, cond("Ready", "False")), false},
		{"v1beta1 Ready True", conditions(v1beta2, cond("Ready", "True")), true},
		{"other conditions only", conditions(v1beta2, cond("ControlPlaneInitialized", "False")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := Availability(tt.cluster)
			if ok != tt.available || (ok != (why == "")) {
				t.Errorf("available %v (%q), want %v", ok, why, tt.available)
			}
		})
	}
}

func TestReadyEndpoints(t *testing.T) {
	ep := func(ready, terminating *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready, Terminating: terminating}}
	}
	s := []*discoveryv1.EndpointSlice{
		{Endpoints: []discoveryv1.Endpoint{ep(nil, nil), ep(ptr.To(true), nil), ep(ptr.To(false), nil)}},
		{Endpoints: []discoveryv1.Endpoint{ep(ptr.To(true), ptr.To(true)), ep(ptr.To(true), ptr.To(false))}},
	}
	if n := ReadyEndpoints(s); n != 3 {
		t.Errorf("ready endpoints %d, want 3 (unset, true, true and not terminating)", n)
	}
	if n := ReadyEndpoints(nil); n != 0 {
		t.Errorf("no slices: %d", n)
	}
}

// gatewaysView is the multi-cluster slices of d, as testfixture.SliceView.
func gatewaysView(d Result) []string {
	var out []string
	for _, s := range d.Slices {
		if s.Labels[contract.LabelRecord] == string(contract.KindGateways) {
			out = append(out, testfixture.SliceView(s))
		}
	}
	slices.Sort(out)
	return out
}

// TestComputeGateways checks the multi-cluster gateways name Compute publishes.
// It is long for its table, one row per case, and one loop over it.
func TestComputeGateways(t *testing.T) {
	const name = "*.gw.dev-team.gateways.xcc.test"
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	tests := []struct {
		name     string
		last     []v1alpha1.ClusterStatus // the GatewayDNS's status before
		clusters []Input
		want     []string
		health   map[string]string // cluster -> healthReason
	}{
		{
			name:     "healthy clusters are ready",
			clusters: []Input{good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2", "2001:db8::2")},
			want:     []string{name + " IPv4 10.0.0.1", name + " IPv4 10.0.0.2", name + " IPv6 2001:db8::2"},
			health:   map[string]string{"cluster-a": "Healthy", "cluster-b": "Healthy"},
		},
		{
			name:     "no ready endpoint: published, not ready",
			clusters: []Input{with(good("cluster-a", "10.0.0.1"), func(i *Input) { i.ReadyEndpoints = 0 }), good("cluster-b", "10.0.0.2")},
			want:     []string{name + " IPv4 10.0.0.1 unready", name + " IPv4 10.0.0.2"},
			health:   map[string]string{"cluster-a": "NoReadyEndpoints", "cluster-b": "Healthy"},
		},
		{
			name: "unavailable Cluster is the first failure",
			clusters: []Input{with(good("cluster-a", "10.0.0.1"), func(i *Input) {
				i.ReadyEndpoints, i.Unavailable = 0, "condition Available is False"
			})},
			want:   []string{name + " IPv4 10.0.0.1 unready"},
			health: map[string]string{"cluster-a": "ClusterNotAvailable"},
		},
		{
			name:     "a Cluster being deleted publishes nothing",
			clusters: []Input{with(good("cluster-a", "10.0.0.1"), func(i *Input) { i.Deleting = true }), good("cluster-b", "10.0.0.2")},
			want:     []string{name + " IPv4 10.0.0.2"},
			health:   map[string]string{"cluster-a": "ClusterDeleting", "cluster-b": "Healthy"},
		},
		{
			name:     "no address",
			clusters: []Input{{Name: "cluster-a", Selected: true, ServiceSynced: true, Service: testfixture.GatewayService(), EndpointsSynced: true, ReadyEndpoints: 1}},
			health:   map[string]string{"cluster-a": "NoAddress"},
		},
		{
			name:     "endpoints not listed yet, never healthy before",
			clusters: []Input{with(good("cluster-a", "10.0.0.1"), func(i *Input) { i.EndpointsSynced, i.ReadyEndpoints = false, 0 })},
			want:     []string{name + " IPv4 10.0.0.1 unready"},
			health:   map[string]string{"cluster-a": "NoReadyEndpoints"},
		},
		{
			name:     "endpoints not listed yet: the last health stands",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Addresses: []string{"10.0.0.1"}, Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{with(good("cluster-a", "10.0.0.1"), func(i *Input) { i.EndpointsSynced, i.ReadyEndpoints = false, 0 })},
			want:     []string{name + " IPv4 10.0.0.1"},
			health:   map[string]string{"cluster-a": "Healthy"},
		},
		{
			name:     "unreachable cluster keeps its last addresses and health",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Addresses: []string{"10.0.0.1", "2001:db8::1"}, Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{{Name: "cluster-a", Selected: true}},
			want:     []string{name + " IPv4 10.0.0.1", name + " IPv6 2001:db8::1"},
			health:   map[string]string{"cluster-a": "Healthy"},
		},
		{
			name:     "unreachable cluster that was unhealthy stays so",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Addresses: []string{"10.0.0.1"}, HealthReason: "NoReadyEndpoints"}},
			clusters: []Input{{Name: "cluster-a", Selected: true, AccessReason: ReasonKubeconfigMissing, AccessMessage: "gone"}},
			want:     []string{name + " IPv4 10.0.0.1 unready"},
			health:   map[string]string{"cluster-a": "NoReadyEndpoints"},
		},
		{
			name:     "unreachable cluster whose Cluster says unavailable turns unhealthy",
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Addresses: []string{"10.0.0.1"}, Healthy: true, HealthReason: "Healthy"}},
			clusters: []Input{{Name: "cluster-a", Selected: true, Unavailable: "condition Available is False"}},
			want:     []string{name + " IPv4 10.0.0.1 unready"},
			health:   map[string]string{"cluster-a": "ClusterNotAvailable"},
		},
		{
			name:     "unreachable cluster never published has nothing",
			clusters: []Input{{Name: "cluster-a", Selected: true}},
			health:   map[string]string{"cluster-a": "NoAddress"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gd := testfixture.GatewayDNS("gw")
			gd.Status.Clusters = tt.last
			d := Compute(gd, "xcc.test", nil, tt.clusters)
			got := gatewaysView(d)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("slices:\n got %q\nwant %q", got, want)
			}
			for _, st := range d.Clusters {
				if st.HealthReason != tt.health[st.Name] || st.Healthy != (st.HealthReason == v1alpha1.HealthReasonHealthy) {
					t.Errorf("cluster %s: healthy %v reason %q, want %q", st.Name, st.Healthy, st.HealthReason, tt.health[st.Name])
				}
			}
			if len(d.Clusters) != len(tt.health) {
				t.Errorf("status entries %+v, want %v", d.Clusters, tt.health)
			}
			// A kept cluster's addresses stay in status for the next sync.
			d2 := Compute(func() *v1alpha1.GatewayDNS { gd := gd.DeepCopy(); gd.Status.Clusters = d.Clusters; return gd }(), "xcc.test", nil, tt.clusters)
			if g2 := gatewaysView(d2); !slices.Equal(g2, got) {
				t.Errorf("second sync from the first's status: %q, want %q", g2, got)
			}
		})
	}
}

func TestComputeGatewaysLocalityAndTTL(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	d := Compute(gd, "xcc.test", nil, []Input{good("cluster-a", "10.0.0.1")})
	s := d.Slices[slices.IndexFunc(d.Slices, func(s *discoveryv1.EndpointSlice) bool {
		return s.Labels[contract.LabelRecord] == string(contract.KindGateways)
	})]
	if s.Annotations[contract.AnnotationLocality] != "all" || s.Annotations[contract.AnnotationTTL] != "" {
		t.Errorf("no locality, no gatewaysTTL: annotations %v", s.Annotations)
	}
	gd.Spec.Locality = &v1alpha1.Locality{Policy: v1alpha1.LocalityFailover, FailoverOrder: []string{"cluster-b", "cluster-a"}}
	gd.Spec.GatewaysTTL = ptr.To(int32(7))
	gd.Spec.TTL = ptr.To(int32(60))
	d = Compute(gd, "xcc.test", nil, []Input{good("cluster-a", "10.0.0.1")})
	for _, s := range d.Slices {
		a := s.Annotations
		switch contract.Kind(s.Labels[contract.LabelRecord]) {
		case contract.KindGateways:
			if a[contract.AnnotationLocality] != "failover" || a[contract.AnnotationFailoverOrder] != "cluster-b,cluster-a" || a[contract.AnnotationTTL] != "7" {
				t.Errorf("gateways slice annotations %v", a)
			}
			p, ok, problems := contract.Parse(s, "xcc.test")
			if !ok || len(problems) > 0 || p.Source != "cluster-a" || !p.Locality.Equal(d.Locality) {
				t.Errorf("serve reads the slice as %+v ok %v problems %v", p, ok, problems)
			}
		case contract.KindGateway:
			if a[contract.AnnotationTTL] != "60" || a[contract.AnnotationLocality] != "" {
				t.Errorf("gateway slice annotations %v", a)
			}
		}
	}
	if want := []contract.SourceHosts{{Cluster: "cluster-a", Ready: []string{"10.0.0.1"}}}; len(d.Sources) != 1 || !slices.Equal(d.Sources[0].Ready, want[0].Ready) {
		t.Errorf("sources %+v, want %+v", d.Sources, want)
	}
}
