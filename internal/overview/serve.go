package overview

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/promtext"
)

// ServeCluster is what the serve pods of one workload cluster hold, as
// their metrics say: the management cluster knows only what the
// controller wrote, not what each DNS replica made of it.
type ServeCluster struct {
	Cluster string `json:"cluster"` // namespace/name of the Cluster
	// ExpectedBy names the first Ready GatewayDNS (with a cluster
	// published) or Ready ClusterSet (with an import) that writes
	// records into this cluster; empty when none does.
	ExpectedBy string     `json:"expectedBy,omitempty"`
	Pods       []ServePod `json:"pods,omitempty"`
	// MorePods: the cluster has more serve pods than were read.
	MorePods bool `json:"morePods,omitempty"`
	// Unread says why the cluster's serve pods could not be listed.
	Unread string `json:"unread,omitempty"`
}

// ServePod is one serve pod and what its metrics say.
type ServePod struct {
	Name    string `json:"name"` // namespace/name
	Records int64  `json:"records"`
	// LastReconcile is when its last full reconcile landed; zero when
	// none has yet.
	LastReconcile time.Time `json:"lastReconcile,omitzero"`
	// Behind: it holds no record while ExpectedBy says the cluster
	// should get some.
	Behind bool `json:"behind,omitempty"`
	// Unread says why its metrics could not be read.
	Unread string `json:"unread,omitempty"`
}

// ServeClusters are the workload clusters the statuses of gds and sets
// name (their clusters, targets and members), by namespace/name, each
// with the Ready object that expects records there.
func ServeClusters(gds []v1alpha1.GatewayDNS, sets []xccv1alpha1.ClusterSet) []ServeCluster {
	byKey := map[string]*ServeCluster{}
	add := func(namespace, cluster, expectedBy string) {
		key := namespace + "/" + cluster
		c := byKey[key]
		if c == nil {
			c = &ServeCluster{Cluster: key}
			byKey[key] = c
		}
		if c.ExpectedBy == "" {
			c.ExpectedBy = expectedBy
		}
	}
	for _, gd := range gds {
		by := ""
		if ready, _ := ready(gd.Status.Conditions, v1alpha1.ConditionReady); ready && gd.Status.ReadyClusters > 0 && gd.Status.ObservedGeneration >= gd.Generation {
			by = "GatewayDNS " + gd.Namespace + "/" + gd.Name
		}
		for _, c := range gd.Status.Clusters {
			add(gd.Namespace, c.Name, by)
		}
		for _, t := range gd.Status.Targets {
			add(gd.Namespace, t.Name, by)
		}
	}
	for _, cs := range sets {
		by := ""
		if c := meta.FindStatusCondition(cs.Status.Conditions, xccv1alpha1.ConditionReady); c != nil && c.Status == "True" && cs.Status.Imports > 0 && cs.Status.ObservedGeneration >= cs.Generation {
			by = "ClusterSet " + cs.Namespace + "/" + cs.Name
		}
		for _, m := range cs.Status.Clusters {
			add(cs.Namespace, m.Name, by)
		}
	}
	out := make([]ServeCluster, 0, len(byKey))
	for _, c := range byKey {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ServeCluster) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out
}

// SetServe puts what was read of serve in each workload cluster into r:
// a pod with no record where one is expected is behind (NotReady says
// so); what could not be read goes into r.Unread, once per cluster or
// pod.
func (r *Report) SetServe(clusters []ServeCluster) {
	r.Serve = clusters
	for i := range r.Serve {
		c := &r.Serve[i]
		if c.Unread != "" {
			r.Unread = append(r.Unread, fmt.Sprintf("the records serve holds in %s: %s", c.Cluster, c.Unread))
		}
		for j := range c.Pods {
			p := &c.Pods[j]
			if p.Unread != "" {
				r.Unread = append(r.Unread, fmt.Sprintf("the records of serve pod %s in %s: %s", p.Name, c.Cluster, p.Unread))
				continue
			}
			p.Behind = p.Records == 0 && c.ExpectedBy != ""
		}
	}
}

// ServeMetrics is what ParseServeMetrics reads from serve's /metrics.
type ServeMetrics struct {
	Records       int64
	LastReconcile time.Time
}

// Serve's metrics that status reads (internal/serve/metrics.go).
const (
	metricRecords       = "xcc_serve_records"
	metricLastReconcile = "xcc_serve_last_reconcile_timestamp_seconds"
)

// ParseServeMetrics reads xcc_serve_records and
// xcc_serve_last_reconcile_timestamp_seconds from a /metrics body in the
// Prometheus text format (expfmt's parser), refusing a body longer than
// limit bytes or not in that format: the pod that answers is the
// tenant's. Without xcc_serve_records, with it more than once, or with a
// value that is no count, it fails; a last reconcile of 0 is none yet.
// Only the series without labels count.
func ParseServeMetrics(body io.Reader, limit int64) (ServeMetrics, error) {
	var m ServeMetrics
	families, err := promtext.Parse(body, limit)
	if err != nil {
		return m, err
	}
	records, haveRecords, err := plainValue(families[metricRecords])
	if err != nil {
		return m, err
	}
	if !haveRecords {
		return m, errors.New("/metrics has no " + metricRecords + ": not serve's, or a serve older than the metric")
	}
	last, _, err := plainValue(families[metricLastReconcile])
	if err != nil {
		return m, err
	}
	m.Records = int64(records)
	if last > 0 {
		sec, frac := math.Modf(last)
		m.LastReconcile = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	}
	return m, nil
}

// maxExact is the largest float64 below which every integer is exact:
// no count or Unix time of serve's comes near it.
const maxExact = 1 << 53

// plainValue is the value of mf's one sample without labels, a count or
// a Unix time (a whole number for xcc_serve_records); ok false when it
// has none. A second such sample is an error: which one holds is not
// known.
func plainValue(mf *dto.MetricFamily) (v float64, ok bool, err error) {
	for _, s := range mf.GetMetric() {
		if len(s.GetLabel()) > 0 {
			continue
		}
		if ok {
			return 0, false, fmt.Errorf("%s: more than once", mf.GetName())
		}
		if !promtext.Plain(s) {
			return 0, false, fmt.Errorf("%s: a %s, not a gauge", mf.GetName(), mf.GetType())
		}
		v = promtext.Value(s)
		ok = true
	}
	if ok && (math.IsNaN(v) || v < 0 || v > maxExact || (mf.GetName() == metricRecords && v != math.Trunc(v))) {
		return 0, false, fmt.Errorf("%s %v: not a count or a time", mf.GetName(), v)
	}
	return v, ok, nil
}

// writeServe prints the serve table: a row per serve pod (or per cluster
// whose pods could not be listed or that has none), with its records,
// its last reconcile, and what is wrong.
func (r Report) writeServe(w io.Writer, now time.Time) error {
	if r.Serve == nil {
		return nil
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSERVE POD\tRECORDS\tLAST RECONCILE\t")
	for _, c := range r.Serve {
		switch {
		case c.Unread != "":
			fmt.Fprintf(tw, "%s\t-\t-\t-\tnot read (below)\n", c.Cluster)
		case len(c.Pods) == 0:
			fmt.Fprintf(tw, "%s\t-\t-\t-\tno serve pod\n", c.Cluster)
		}
		for _, p := range c.Pods {
			if p.Unread != "" {
				fmt.Fprintf(tw, "%s\t%s\t-\t-\tnot read (below)\n", c.Cluster, p.Name)
				continue
			}
			last := "none yet"
			if !p.LastReconcile.IsZero() {
				last = now.Sub(p.LastReconcile).Round(time.Second).String() + " ago"
			}
			note := ""
			if p.Behind {
				note = "behind: no records, while " + c.ExpectedBy + " is Ready"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", c.Cluster, p.Name, p.Records, last, note)
		}
		if c.MorePods {
			fmt.Fprintf(tw, "%s\t...\t\t\tmore serve pods, not read\n", c.Cluster)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The cells before an empty last one are padded: no trailing blanks.
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \n")
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(lines[:len(lines)-1], "\n"))
	return err
}
