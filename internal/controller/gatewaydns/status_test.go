package gatewaydns

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/desired"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

func TestListedClusters(t *testing.T) {
	st := func(name string, ready bool) v1alpha1.ClusterStatus {
		return v1alpha1.ClusterStatus{Name: name, Ready: ready}
	}
	all := []v1alpha1.ClusterStatus{st("a", true), st("b", false), st("c", true), st("d", false), st("e", true)}
	view := func(cs []v1alpha1.ClusterStatus) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	tests := []struct {
		max     int
		want    []string
		omitted int32
	}{
		{max: 5, want: []string{"a", "b", "c", "d", "e"}},
		{max: 3, want: []string{"a", "b", "d"}, omitted: 2},
		{max: 2, want: []string{"b", "d"}, omitted: 3},
		{max: 1, want: []string{"b"}, omitted: 4},
	}
	for _, tt := range tests {
		got, omitted := listedClusters(all, tt.max)
		if !slices.Equal(view(got), tt.want) || omitted != tt.omitted {
			t.Errorf("max %d: %v omitted %d, want %v omitted %d", tt.max, view(got), omitted, tt.want, tt.omitted)
		}
	}
}

var (
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

func TestTargetsBehind(t *testing.T) {
	down := errors.New("dial tcp: connection refused")
	tests := []struct {
		name   string
		w      writes
		want   []string // name reason since
		failed []string
	}{
		{name: "every target written", w: writes{now: t1}},
		{
			name:   "a new failure is since now",
			w:      writes{errs: map[string]error{"c": down}, now: t1},
			want:   []string{"c WriteFailed " + formatSince(t1)},
			failed: []string{"c (since " + formatSince(t1) + "): dial tcp: connection refused"},
		},
		{
			name:   "a failure that goes on keeps its since-time",
			w:      writes{errs: map[string]error{"c": down}, since: sinces{targets: map[string]time.Time{"c": t0, "gone": t0}}, now: t1},
			want:   []string{"c WriteFailed " + formatSince(t0)},
			failed: []string{"c (since " + formatSince(t0) + "): dial tcp: connection refused"},
		},
		{
			name: "a write in flight after a failure keeps its since-time",
			w:    writes{pending: []string{"c", "d"}, since: sinces{targets: map[string]time.Time{"c": t0}}, now: t1},
			want: []string{"c Writing " + formatSince(t0), "d Writing " + formatSince(t1)},
		},
		{
			name:   "failed and in flight, by name",
			w:      writes{errs: map[string]error{"d": down}, pending: []string{"b"}, now: t1},
			want:   []string{"b Writing " + formatSince(t1), "d WriteFailed " + formatSince(t1)},
			failed: []string{"d (since " + formatSince(t1) + "): dial tcp: connection refused"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var next sinces
			behind, failed := targetsBehind(tt.w, &next)
			var got []string
			for _, b := range behind {
				got = append(got, b.Name+" "+b.Reason+" "+formatSince(b.Since.Time))
				if !next.targets[b.Name].Equal(b.Since.Time) {
					t.Errorf("%s: next since %v, status %v", b.Name, next.targets[b.Name], b.Since)
				}
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(failed, tt.failed) {
				t.Errorf("got %q failed %q, want %q failed %q", got, failed, tt.want, tt.failed)
			}
			if len(next.targets) != len(behind) {
				t.Errorf("next remembers %v, want only the targets behind", next.targets)
			}
		})
	}
}

func TestMarkUnwrittenAndSince(t *testing.T) {
	published := v1alpha1.ClusterStatus{Name: "a", Ready: true, Reason: desired.ReasonPublished, Addresses: []string{"10.0.0.1"}}
	noted := v1alpha1.ClusterStatus{Name: "b", Ready: true, Reason: desired.ReasonPublished, Message: "api host refused: 127.0.0.1"}
	kept := v1alpha1.ClusterStatus{Name: "k", Reason: desired.ReasonClusterUnreachable, Message: "not listed yet", Addresses: []string{"10.0.0.9"}}
	none := v1alpha1.ClusterStatus{Name: "n", Reason: desired.ReasonServiceNotFound, Message: "not found"}
	failedC := v1alpha1.TargetStatus{Name: "c", Reason: string(ReasonWriteFailed), Since: metav1.NewTime(t0)}
	writingD := v1alpha1.TargetStatus{Name: "d", Reason: string(ReasonWriting), Since: metav1.NewTime(t1)}
	keep := map[string]bool{"k": true}
	tests := []struct {
		name   string
		behind []v1alpha1.TargetStatus
		before map[string]time.Time
		want   []string // name ready reason message since
	}{
		{
			name: "every target written",
			want: []string{
				"a true Published  -", "b true Published api host refused: 127.0.0.1 -",
				"k false ClusterUnreachable not listed yet; serving last known records since " + formatSince(t1) + " " + formatSince(t1),
				"n false ServiceNotFound not found " + formatSince(t1),
			},
		},
		{
			name:   "a target failed and one in flight: WriteFailed, since kept from the last sync",
			behind: []v1alpha1.TargetStatus{failedC, writingD},
			before: map[string]time.Time{"a": t0, "k": t0},
			want: []string{
				"a false WriteFailed records not in every target yet: c (WriteFailed since " + formatSince(t0) + "), d (Writing since " + formatSince(t1) + ") " + formatSince(t0),
				"b false WriteFailed records not in every target yet: c (WriteFailed since " + formatSince(t0) + "), d (Writing since " + formatSince(t1) + "); api host refused: 127.0.0.1 " + formatSince(t1),
				"k false ClusterUnreachable not listed yet; serving last known records since " + formatSince(t0) + " " + formatSince(t0),
				"n false ServiceNotFound not found " + formatSince(t1),
			},
		},
		{
			name:   "in flight only: Writing",
			behind: []v1alpha1.TargetStatus{writingD},
			want: []string{
				"a false Writing records not in every target yet: d (Writing since " + formatSince(t1) + ") " + formatSince(t1),
				"b false Writing records not in every target yet: d (Writing since " + formatSince(t1) + "); api host refused: 127.0.0.1 " + formatSince(t1),
				"k false ClusterUnreachable not listed yet; serving last known records since " + formatSince(t1) + " " + formatSince(t1),
				"n false ServiceNotFound not found " + formatSince(t1),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []v1alpha1.ClusterStatus{published, noted, kept, none}
			var next sinces
			out := stampSince(markUnwritten(in, tt.behind), keep, writes{since: sinces{clusters: tt.before}, now: t1}, &next)
			var got []string
			for _, c := range out {
				since := "-"
				if c.Since != nil {
					since = formatSince(c.Since.Time)
					if !next.clusters[c.Name].Equal(c.Since.Time) {
						t.Errorf("%s: next since %v, status %v", c.Name, next.clusters[c.Name], c.Since)
					}
				}
				got = append(got, fmt.Sprintf("%s %v %s %s %s", c.Name, c.Ready, c.Reason, c.Message, since))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !in[0].Ready || in[2].Since != nil || in[2].Message != "not listed yet" {
				t.Error("the desired entries were changed in place")
			}
		})
	}
}

func TestMarkUnwrittenNamesAFewTargets(t *testing.T) {
	var behind []v1alpha1.TargetStatus
	for _, n := range []string{"c1", "c2", "c3", "c4", "c5"} {
		behind = append(behind, v1alpha1.TargetStatus{Name: n, Reason: string(ReasonWriteFailed), Since: metav1.NewTime(t0)})
	}
	out := markUnwritten([]v1alpha1.ClusterStatus{{Name: "a", Ready: true, Reason: desired.ReasonPublished}}, behind)
	if msg := out[0].Message; !strings.Contains(msg, "c3 (") || strings.Contains(msg, "c4") || !strings.HasSuffix(msg, "2 more in status.targets") {
		t.Errorf("message %q, want 3 targets named and 2 more", msg)
	}
}

// Status from sync to sync: a target down makes no cluster Ready and is
// listed, since when, and the since-time does not move while it stays
// down; back, every cluster is Published and nothing is listed.
func TestBuildStatusAcrossSyncs(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	d := desired.Compute(gd, "xcc.test", nil, []desired.Input{good("cluster-a", "10.0.0.1"), good("cluster-b", "10.0.0.2")})
	down := map[string]error{"cluster-b": errors.New("timeout")}

	st, since := buildStatus(gd, d, writes{errs: down, now: t0})
	gd.Status = st
	if st.ReadyClusters != 0 || len(st.Targets) != 1 || st.Targets[0].Name != "cluster-b" || !st.Targets[0].Since.Time.Equal(t0) {
		t.Fatalf("target down: ready %d, targets %+v", st.ReadyClusters, st.Targets)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c.Reason != string(ReasonWriteFailed) {
		t.Errorf("Ready %s, want WriteFailed", c.Reason)
	}

	// Later, still down; the first sync since a restart reads the
	// since-times from the stored status.
	for _, before := range []sinces{since, sincesFromStatus(st)} {
		again, _ := buildStatus(gd, d, writes{errs: down, since: before, now: t1})
		if !statusEqual(again, st) {
			t.Errorf("status moved while the target stayed down:\n%+v\n%+v", again, st)
		}
	}

	back, since := buildStatus(gd, d, writes{since: since, now: t1})
	if back.ReadyClusters != 2 || len(back.Targets) != 0 || len(since.targets) != 0 || len(since.clusters) != 0 {
		t.Errorf("target back: ready %d, targets %+v, since %+v", back.ReadyClusters, back.Targets, since)
	}
	if c := meta.FindStatusCondition(back.Conditions, v1alpha1.ConditionReady); c.Reason != string(ReasonPublished) {
		t.Errorf("Ready %s, want Published", c.Reason)
	}
}

// A tenant's Clusters all pointed at one load balancer, with a target
// whose write fails with a long error: the status still fits in one
// object (etcd's default limit is 1.5 MiB). Naming every other cluster
// on every entry made it grow with the square of the clusters.
func TestStatusOfClustersOnOneAddressFits(t *testing.T) {
	gd := testfixture.GatewayDNS("gw")
	for _, n := range []int{maxStatusClusters, 5000} {
		d := desired.Compute(gd, "xcc.test", nil, benchClusters(n, func(int) string { return "192.0.2.10" }))
		shared, _ := desired.NewAddressClaims().Set(gd.Namespace+"/"+gd.Name, desired.ClusterClaims(gd.Namespace, d, nil))
		d.Clusters = desired.MarkAddressConflicts(d.Clusters, gd.Namespace, shared)
		long := errors.New(strings.Repeat("a tenant's webhook says no at length. ", 1000))
		st, _ := buildStatus(gd, d, writes{errs: map[string]error{"cluster-00001": long}, now: statusNow()})
		raw, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > 1<<20 {
			t.Errorf("%d clusters on one address: status of %d bytes", n, len(raw))
		}
		if st.Clusters[0].Reason != desired.ReasonAddressConflict && st.Clusters[0].Reason != string(ReasonWriteFailed) {
			t.Errorf("%d clusters on one address: first entry %s, want the conflict or the failed write said", n, st.Clusters[0].Reason)
		}
	}
}
