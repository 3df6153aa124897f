package desired

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

func TestFairShares(t *testing.T) {
	tests := []struct {
		wants []int
		total int
		want  []int
	}{
		{[]int{1, 2, 3}, 10, []int{1, 2, 3}},
		{[]int{100, 2, 3}, 10, []int{5, 2, 3}},
		{[]int{100, 100, 1}, 10, []int{5, 4, 1}},
		{[]int{100, 100, 100}, 10, []int{4, 3, 3}},
		{[]int{100, 100, 100}, 2, []int{1, 1, 0}},
		{[]int{0, 7}, 3, []int{0, 3}},
		{nil, 3, []int{}},
	}
	for _, tt := range tests {
		got := fairShares(tt.wants, tt.total)
		if !slices.Equal(got, tt.want) {
			t.Errorf("fairShares(%v, %d) = %v, want %v", tt.wants, tt.total, got, tt.want)
		}
	}
}

func TestPickNames(t *testing.T) {
	tests := []struct {
		byCluster [][]string
		most      int
		want      []string
	}{
		{[][]string{{"a", "b"}, {"c"}}, 10, []string{"a", "b", "c"}},
		// A cluster claiming many names takes only its turns.
		{[][]string{{"a1", "a2", "a3", "a4"}, {"z"}}, 2, []string{"a1", "z"}},
		// A name two clusters claim is one name; the turn goes on to the next.
		{[][]string{{"a", "b"}, {"a", "c"}}, 3, []string{"a", "b", "c"}},
		{[][]string{{"a", "b"}, {"c", "d"}, {"e"}}, 4, []string{"a", "b", "c", "e"}},
	}
	for _, tt := range tests {
		got := pickNames(tt.byCluster, tt.most)
		var names []string
		for n := range got {
			names = append(names, n)
		}
		slices.Sort(names)
		if !slices.Equal(names, tt.want) {
			t.Errorf("pickNames(%v, %d) = %v, want %v", tt.byCluster, tt.most, names, tt.want)
		}
	}
}

func TestTruncateHeadless(t *testing.T) {
	eps := func(prefix string, n int) []contract.Endpoint {
		var out []contract.Endpoint
		for i := range n {
			out = append(out, contract.Endpoint{Address: fmt.Sprintf("%s%d", prefix, i)})
		}
		return out
	}
	h := contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{
		{Ports: []contract.Port{{Name: "a"}}, IPv4: eps("10.0.0.", 5), IPv6: eps("fd00::", 5)},
		{Ports: []contract.Port{{Name: "b"}}, IPv4: eps("10.1.0.", 1)},
	}, Refused: []string{"x"}}
	got := truncateHeadless(h, 4)
	view := func(h contract.HeadlessEndpoints) string {
		var parts []string
		for _, g := range h.Groups {
			for _, e := range slices.Concat(g.IPv4, g.IPv6) {
				parts = append(parts, g.Ports[0].Name+"="+e.Address)
			}
		}
		return strings.Join(parts, " ")
	}
	if v := view(got); v != "a=10.0.0.0 a=10.0.0.1 a=fd00::0 b=10.1.0.0" || got.Len() != 4 || len(got.Refused) != 1 {
		t.Errorf("truncated to 4: %s (%d), refused %v", v, got.Len(), got.Refused)
	}
	if got := truncateHeadless(h, 0); got.Len() != 0 || len(got.Groups) != 0 {
		t.Errorf("truncated to 0: %+v", got)
	}
	if got := truncateHeadless(h, 100); got.Len() != h.Len() {
		t.Errorf("no cut: %d of %d", got.Len(), h.Len())
	}
}

// manyPods are n ready pods 10.<b>.<i/250>.<i%250+1>.
func manyPods(b, n int) []discoveryv1.Endpoint {
	out := make([]discoveryv1.Endpoint, n)
	for i := range out {
		out[i] = testfixture.PodEndpoint(fmt.Sprintf("10.%d.%d.%d", b, i/250, i%250+1), "", true)
	}
	return out
}

// A headless export over a limit publishes a fair, fixed part of the
// endpoints and says so; clusters within their share lose nothing.
func TestHeadlessLimits(t *testing.T) {
	tests := []struct {
		name     string
		limits   Limits
		clusters []Input
		last     []v1alpha1.ClusterStatus
		// reason, published pods and a part of the message, per cluster
		want map[string]string
	}{
		{
			name:     "within the limits",
			limits:   Limits{HeadlessEndpointsPerCluster: 10, HeadlessEndpointsPerGatewayDNS: 20},
			clusters: []Input{headlessIn("cluster-a", manyPods(1, 10)...), headlessIn("cluster-b", manyPods(2, 10)...)},
			want:     map[string]string{"cluster-a": "Published 10 ", "cluster-b": "Published 10 "},
		},
		{
			name:     "one cluster over the limit per cluster",
			limits:   Limits{HeadlessEndpointsPerCluster: 10},
			clusters: []Input{headlessIn("cluster-a", manyPods(1, 500)...), headlessIn("cluster-b", manyPods(2, 3)...)},
			want: map[string]string{
				"cluster-a": "TooManyEndpoints 10 500 ready endpoints, more than the limit of 10 (--max-headless-endpoints-per-cluster)",
				"cluster-b": "Published 3 ",
			},
		},
		{
			name:   "over the limit per GatewayDNS: the large cluster gives up its share",
			limits: Limits{HeadlessEndpointsPerCluster: 100, HeadlessEndpointsPerGatewayDNS: 50},
			clusters: []Input{headlessIn("cluster-a", manyPods(1, 500)...), headlessIn("cluster-b", manyPods(2, 10)...),
				headlessIn("cluster-c", manyPods(3, 30)...)},
			want: map[string]string{
				"cluster-a": "TooManyEndpoints 20 140 ready endpoints in the clusters of this GatewayDNS, more than the limit of 50 (--max-headless-endpoints-per-gatewaydns): this cluster's share is 20 of its 100",
				"cluster-b": "Published 10 ",
				"cluster-c": "TooManyEndpoints 20 share is 20 of its 30",
			},
		},
		{
			name:     "a kept cluster keeps its reason and counts towards the limit",
			limits:   Limits{HeadlessEndpointsPerGatewayDNS: 4},
			last:     []v1alpha1.ClusterStatus{{Name: "cluster-a", Healthy: true, HealthReason: "Healthy", Pods: 4}},
			clusters: []Input{keptWith(headlessIn("cluster-a"), 4), headlessIn("cluster-b", manyPods(2, 4)...)},
			want: map[string]string{
				"cluster-a": "ClusterUnreachable 2 share is 2 of its 4",
				"cluster-b": "TooManyEndpoints 2 share is 2 of its 4",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gd := testfixture.HeadlessGatewayDNS("db")
			gd.Status.Clusters = tt.last
			d := ComputeLimited(gd, "xcc.test", nil, tt.limits, tt.clusters)
			pods := map[string]int{}
			for _, row := range headlessView(t, d) {
				pods[strings.Fields(row)[0]]++
			}
			for _, st := range d.Clusters {
				got := fmt.Sprintf("%s %d ", st.Reason, st.Pods)
				reason, msg, _ := strings.Cut(tt.want[st.Name], " ")
				count, msg, _ := strings.Cut(msg, " ")
				if got != reason+" "+count+" " || !strings.Contains(st.Message, msg) {
					t.Errorf("cluster %s: %q %q, want %q", st.Name, got, st.Message, tt.want[st.Name])
				}
				if fmt.Sprint(pods[st.Name]) != count {
					t.Errorf("cluster %s: %d pods published, status says %d", st.Name, pods[st.Name], st.Pods)
				}
				if st.Ready != (st.Reason == ReasonPublished) {
					t.Errorf("cluster %s: ready %v with reason %s", st.Name, st.Ready, st.Reason)
				}
				if eps := d.Headless[st.Name]; eps.Len() != int(st.Pods) {
					t.Errorf("cluster %s: remembers %d endpoints, published %d", st.Name, eps.Len(), st.Pods)
				}
			}
			// The same input cuts the same way: nothing flaps.
			again := ComputeLimited(gd, "xcc.test", nil, tt.limits, slices.Clone(tt.clusters))
			if !slices.Equal(headlessView(t, again), headlessView(t, d)) {
				t.Error("a second computation from the same input publishes other endpoints")
			}
		})
	}
}

// keptWith is in as unreachable, with n endpoints published last time.
func keptWith(in Input, n int) Input {
	in.ServiceSynced, in.EndpointsSynced, in.Endpoints = false, false, nil
	eps := contract.ReadyEndpoints([]*discoveryv1.EndpointSlice{pgSlice(manyPods(1, n)...)}, nil, "xcc.test")
	in.LastHeadless = &eps
	return in
}

// namedN is a cluster whose Services claim n names <prefix>0.. (each its
// own Service and address).
func namedN(cluster, prefix string, n int) Input {
	var svcs []string
	for i := range n {
		svcs = append(svcs, fmt.Sprintf("shop/%s%d=%s%03d=10.%d.0.%d", prefix, i, prefix, i, len(cluster), i%250+1))
	}
	return named(cluster, svcs...)
}

// Names over a limit: the first ones by name (per cluster) and each
// cluster in turn (per GatewayDNS) publish, the cluster says so, and no
// other cluster or name within the limits loses anything. It is long for
// its table, one row per case.
func TestNamesLimits(t *testing.T) {
	tests := []struct {
		name     string
		limits   Limits
		clusters []Input
		names    []string          // published names
		clusterR map[string]string // reason and a part of the message, per cluster
	}{
		{
			name:     "within the limits",
			limits:   Limits{NamesPerCluster: 2, NamesPerGatewayDNS: 3},
			clusters: []Input{namedN("cluster-a", "a", 2), named("cluster-b", "shop/web=web=10.2.0.1")},
			names:    []string{"a000", "a001", "web"},
			clusterR: map[string]string{"cluster-a": "Published", "cluster-b": "Published"},
		},
		{
			name:   "one cluster over the limit per cluster",
			limits: Limits{NamesPerCluster: 3},
			clusters: []Input{namedN("cluster-a", "a", 50),
				named("cluster-b", "shop/web=web=10.2.0.1", "shop/a=a049=10.2.0.2")},
			// a049 is not published from cluster-a, but cluster-b claims it within its limit.
			names: []string{"a000", "a001", "a002", "a049", "web"},
			clusterR: map[string]string{
				"cluster-a": "TooManyNames names: 50 names claimed by its Services, more than the limit of 3 (--max-names-per-cluster): the first by name published; not published from it: a003.dev-team.names.xcc.test",
				"cluster-b": "Published",
			},
		},
		{
			name:     "over the limit per GatewayDNS: each cluster in turn",
			limits:   Limits{NamesPerCluster: 100, NamesPerGatewayDNS: 4},
			clusters: []Input{namedN("cluster-a", "a", 50), named("cluster-b", "shop/web=web=10.2.0.1"), namedN("cluster-c", "c", 2)},
			names:    []string{"a000", "a001", "c000", "web"},
			clusterR: map[string]string{
				"cluster-a": "TooManyNames 53 names claimed in the clusters of this GatewayDNS, more than the limit of 4 (--max-names-per-gatewaydns)",
				"cluster-b": "Published",
				"cluster-c": "TooManyNames not published from this one: c001.dev-team.names.xcc.test",
			},
		},
		{
			name:     "invalid names count towards no limit",
			limits:   Limits{NamesPerCluster: 1},
			clusters: []Input{named("cluster-a", "x/bad=a_b=10.1.0.1", "x/any=any=10.1.0.2", "shop/web=web=10.1.0.3")},
			names:    []string{"web"},
			clusterR: map[string]string{"cluster-a": "Published"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gd := namesGD()
			d := ComputeLimited(gd, "xcc.test", nil, tt.limits, tt.clusters)
			claimed := AddNames(&d, gd, "xcc.test", nil, contract.Grants{}, tt.clusters, nil)
			var published []string
			for _, n := range d.Names {
				if n.Reason == ReasonPublished {
					published = append(published, strings.TrimSuffix(n.Name, ".dev-team.names.xcc.test"))
				}
			}
			if !slices.Equal(published, tt.names) {
				t.Errorf("published %q, want %q", published, tt.names)
			}
			var got []string
			for _, v := range namesView(d) {
				got = append(got, strings.TrimSuffix(strings.Fields(v)[0], ".dev-team.names.xcc.test"))
			}
			got = slices.Compact(got)
			if !slices.Equal(got, tt.names) {
				t.Errorf("slices of %q, want %q", got, tt.names)
			}
			if len(claimed) != len(tt.names) {
				t.Errorf("claimed %q: only the names within the limits are claimed", claimed)
			}
			for _, st := range d.Clusters {
				reason, msg, _ := strings.Cut(tt.clusterR[st.Name], " ")
				if st.Reason != reason || !strings.Contains(st.Message, msg) || st.Ready != (reason == ReasonPublished) {
					t.Errorf("cluster %s: %s ready %v %q, want %q", st.Name, st.Reason, st.Ready, st.Message, tt.clusterR[st.Name])
				}
			}
			if len(d.Names) > len(tt.names)+2 {
				t.Errorf("%d name entries: names over a limit get none", len(d.Names))
			}
		})
	}
}

func namesGD() *v1alpha1.GatewayDNS {
	gd := testfixture.HeadlessGatewayDNS("db")
	gd.Spec.ResolutionType = ""
	gd.Spec.Service = "projectcontour/envoy"
	gd.Spec.Names = &v1alpha1.Names{Enabled: true}
	return gd
}
