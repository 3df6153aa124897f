package overview

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
)

// serveBody is the shape of serve's /metrics: other series around its two.
const serveBody = `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 42
etcd_server_has_leader 1
# HELP xcc_serve_last_reconcile_timestamp_seconds Unix time of the last full reconcile of every record that succeeded.
# TYPE xcc_serve_last_reconcile_timestamp_seconds gauge
xcc_serve_last_reconcile_timestamp_seconds 1.7801568e+09
# HELP xcc_serve_records Records the syncer owns in etcd.
# TYPE xcc_serve_records gauge
xcc_serve_records 12
xcc_serve_records_refused_total 3
`

// Serve's two metrics are read from a whole /metrics body; what is not a
// count, a body without the metric and one past the limit are refused.
func TestParseServeMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		limit   int64
		records int64
		last    time.Time
		err     string
	}{
		{name: "serve", body: serveBody, limit: 1 << 20, records: 12, last: time.Unix(1780156800, 0).UTC()},
		{name: "no reconcile yet", body: "xcc_serve_records 0\nxcc_serve_last_reconcile_timestamp_seconds 0\n", limit: 100},
		{name: "timestamp column", body: "xcc_serve_records 7 1780156800000\n", limit: 100, records: 7},
		{name: "not serve's", body: "go_goroutines 42\n", limit: 100, err: "has no xcc_serve_records"},
		{name: "labels are another series", body: `xcc_serve_records{pod="x"} 3` + "\n", limit: 100, err: "has no xcc_serve_records"},
		{name: "NaN", body: "xcc_serve_records NaN\n", limit: 100, err: "not a count"},
		{name: "negative", body: "xcc_serve_records -1\n", limit: 100, err: "not a count"},
		{name: "fraction", body: "xcc_serve_records 1.5\n", limit: 100, err: "not a count"},
		{name: "huge", body: "xcc_serve_records 1e300\n", limit: 100, err: "not a count"},
		{name: "+Inf time", body: "xcc_serve_records 1\nxcc_serve_last_reconcile_timestamp_seconds +Inf\n", limit: 100, err: "not a count"},
		{name: "past the limit", body: serveBody + strings.Repeat("# padding\n", 100), limit: int64(len(serveBody)) + 50, err: "more than"},
		{name: "a long line within the limit", body: "go_info{version=\"" + strings.Repeat("x", 1<<20) + "\"} 1\n" + serveBody, limit: 2 << 20, records: 12, last: time.Unix(1780156800, 0).UTC()},
		{name: "an empty label set", body: "xcc_serve_records{} 12\n", limit: 100, records: 12},
		{name: "labels beside the plain series", body: `xcc_serve_records{pod="x"} 3` + "\nxcc_serve_records 4\n", limit: 100, records: 4},
		{name: "twice", body: "xcc_serve_records 1\nxcc_serve_records 9\n", limit: 100, err: "more than once"},
		{name: "not the text format", body: "<html><body>\nxcc_serve_records 5\n</body></html>\n", limit: 1 << 10, err: "not in the Prometheus text format"},
		{name: "past the limit in one line", body: "xcc_serve_records 1 " + strings.Repeat("9", 200) + "\n", limit: 100, err: "more than 100 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseServeMetrics(strings.NewReader(tc.body), tc.limit)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || m.Records != tc.records || !m.LastReconcile.Equal(tc.last) {
				t.Errorf("got %+v, %v; want %d records, last reconcile %v", m, err, tc.records, tc.last)
			}
		})
	}
}

// The clusters named by the statuses, once each, each expected to hold
// records by the first Ready object that publishes some there.
func TestServeClusters(t *testing.T) {
	gds := []v1alpha1.GatewayDNS{
		gatewayDNS("idle", 1, v1alpha1.GatewayDNSStatus{ObservedGeneration: 1, Conditions: cond(metav1.ConditionTrue, "Published", ""),
			Clusters: []v1alpha1.ClusterStatus{{Name: "cluster-a", Reason: "NoGateway"}}}),
		gatewayDNS("web", 1, v1alpha1.GatewayDNSStatus{ObservedGeneration: 1, ReadyClusters: 1, Conditions: cond(metav1.ConditionTrue, "Published", ""),
			Clusters: []v1alpha1.ClusterStatus{{Name: "cluster-a", Ready: true}, {Name: "cluster-b"}},
			Targets:  []v1alpha1.TargetStatus{{Name: "cluster-c"}}}),
		gatewayDNS("stale", 2, v1alpha1.GatewayDNSStatus{ObservedGeneration: 1, ReadyClusters: 1, Conditions: cond(metav1.ConditionTrue, "Published", ""),
			Clusters: []v1alpha1.ClusterStatus{{Name: "cluster-d", Ready: true}}}),
	}
	sets := []xccv1alpha1.ClusterSet{
		clusterSet("prod", 1, xccv1alpha1.ClusterSetStatus{ObservedGeneration: 1, Imports: 1, Conditions: cond(metav1.ConditionTrue, "Written", ""),
			Clusters: []xccv1alpha1.MemberStatus{{Name: "cluster-e"}, {Name: "cluster-a"}}}),
		clusterSet("empty", 1, xccv1alpha1.ClusterSetStatus{ObservedGeneration: 1, Conditions: cond(metav1.ConditionTrue, "Written", ""),
			Clusters: []xccv1alpha1.MemberStatus{{Name: "cluster-f"}}}),
	}
	got := ServeClusters(gds, sets)
	want := []ServeCluster{
		{Cluster: "dev-team/cluster-a", ExpectedBy: "GatewayDNS dev-team/web"},
		{Cluster: "dev-team/cluster-b", ExpectedBy: "GatewayDNS dev-team/web"},
		{Cluster: "dev-team/cluster-c", ExpectedBy: "GatewayDNS dev-team/web"},
		{Cluster: "dev-team/cluster-d"},
		{Cluster: "dev-team/cluster-e", ExpectedBy: "ClusterSet dev-team/prod"},
		{Cluster: "dev-team/cluster-f"},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("got  %s\nwant %s", g, w)
	}
}

// A serve pod with no record where a Ready GatewayDNS expects some is
// behind and makes status not Ready; one that could not be read, or that
// holds none where none is expected, does not; both are shown.
func TestReportServe(t *testing.T) {
	r := Build(nil, nil)
	r.SetServe([]ServeCluster{
		{Cluster: "dev-team/cluster-a", ExpectedBy: "GatewayDNS dev-team/web", MorePods: true, Pods: []ServePod{
			{Name: "xcc-dns/xcc-dns-0", Records: 12, LastReconcile: now.Add(-42 * time.Second)},
			{Name: "xcc-dns/xcc-dns-1", Records: 0},
			{Name: "xcc-dns/xcc-dns-2", Unread: "pod is Pending, not running with an address"},
		}},
		{Cluster: "dev-team/cluster-b", Unread: "get Secret dev-team/cluster-b-kubeconfig: forbidden"},
		{Cluster: "dev-team/cluster-c", Pods: []ServePod{{Name: "xcc-dns/xcc-dns-0", Records: 0}}},
	})
	if got, want := strings.Join(r.NotReady(), ", "), "serve xcc-dns/xcc-dns-1 in dev-team/cluster-a"; got != want {
		t.Errorf("NotReady %q, want %q", got, want)
	}
	textHas(t, r, now,
		"\nCLUSTER             SERVE POD          RECORDS  LAST RECONCILE\n",
		"\ndev-team/cluster-a  xcc-dns/xcc-dns-0  12       42s ago\n",
		"\ndev-team/cluster-a  xcc-dns/xcc-dns-1  0        none yet        behind: no records, while GatewayDNS dev-team/web is Ready\n",
		"\ndev-team/cluster-a  xcc-dns/xcc-dns-2  -        -               not read (below)\n",
		"\ndev-team/cluster-a  ...                                         more serve pods, not read\n",
		"\ndev-team/cluster-b  -                  -        -               not read (below)\n",
		"\ndev-team/cluster-c  xcc-dns/xcc-dns-0  0        none yet\n",
		"\nnot read: the records of serve pod xcc-dns/xcc-dns-2 in dev-team/cluster-a: pod is Pending, not running with an address\n",
		"\nnot read: the records serve holds in dev-team/cluster-b: get Secret dev-team/cluster-b-kubeconfig: forbidden\n",
		"\n1 not Ready: serve xcc-dns/xcc-dns-1 in dev-team/cluster-a\n",
	)
	js := mustJSON(t, r)
	for _, want := range []string{`"records":0,"behind":true`, `"unread":"get Secret dev-team/cluster-b-kubeconfig: forbidden"`, `"lastReconcile":"2026-11-26T12:00:48Z"`} {
		if !strings.Contains(js, want) {
			t.Errorf("json lacks %s:\n%s", want, js)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A serve pod's /metrics is its cluster's admin's to write: whatever the
// body (garbage, escapes, huge lines, a valid body cut anywhere), the
// parse never panics, reads at most one byte past its limit (to know the
// body is longer), refuses a body longer than the limit, and a count it
// returns is one the body says.
func FuzzParseServeMetrics(f *testing.F) {
	for _, seed := range []string{
		serveBody,
		"xcc_serve_records{} 12\n",
		"xcc_serve_records 12",
		"# TYPE xcc_serve_records gauge\n# TYPE xcc_serve_records counter\nxcc_serve_records 1\n",
		"xcc_serve_records{a=\"\x1b[2J\\\"\\n\"} 1\nxcc_serve_records 2\n",
		"\x00\xff\xfe{}\"\\\n\r\n\t",
		strings.Repeat("x", 300) + " 1\n",
		"xcc_serve_records_bucket{le=\"+Inf\"} 1\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n",
		"xcc_serve_records 1e308\nxcc_serve_last_reconcile_timestamp_seconds -0\n",
	} {
		f.Add(seed, int64(len(seed)))
		f.Add(seed, int64(len(seed)/2))
	}
	f.Fuzz(func(t *testing.T, body string, limit int64) {
		if limit < 0 || limit > 1<<16 {
			limit = int64(len(body)) / 2
		}
		cr := &countingReader{r: strings.NewReader(body)}
		m, err := ParseServeMetrics(cr, limit)
		if cr.n > limit+1 {
			t.Fatalf("read %d bytes, limit %d", cr.n, limit)
		}
		if int64(len(body)) > limit && err == nil {
			t.Fatalf("a body of %d bytes past the limit %d parsed: %+v", len(body), limit, m)
		}
		if err == nil && (m.Records < 0 || !strings.Contains(body, metricRecords)) {
			t.Fatalf("records %d from %q", m.Records, body)
		}
	})
}
