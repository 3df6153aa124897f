package overview

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/printable"
)

// jsonStrings calls f with every string of the JSON document js.
func jsonStrings(t *testing.T, js []byte, f func(string)) {
	t.Helper()
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			f(v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				f(k)
				walk(e)
			}
		}
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
}

// A workload cluster's API server names its pods and words its errors,
// and a tenant's text reaches status messages: status prints them with
// their escape sequences, carriage returns and newlines escaped, each
// cut to printable.MaxBytes, in its text and in its JSON, so none can
// clear the screen and print a false "all Ready", forge a line, or flood
// the terminal.
func TestReportHostileText(t *testing.T) {
	const clear = "\x1b[2J\x1b[H"
	fake := "all 1 GatewayDNS and 0 ClusterSets Ready"
	huge := strings.Repeat("\x1b[31m", 32<<20/5)
	gds := []v1alpha1.GatewayDNS{gatewayDNS("web", 1, v1alpha1.GatewayDNSStatus{ObservedGeneration: 1,
		Conditions: cond(metav1.ConditionFalse, "ClusterUnreachable", ""),
		Clusters:   []v1alpha1.ClusterStatus{{Name: "cluster-a", Reason: "ClusterUnreachable", Message: "dial: " + clear + fake + "\r\n" + huge}}})}
	r := Build(gds, nil)
	r.SetServe([]ServeCluster{{Cluster: "dev-team/cluster-a", ExpectedBy: "GatewayDNS dev-team/web", Pods: []ServePod{
		{Name: "xcc-dns/xcc-dns-0" + clear + fake},
		{Name: "xcc-dns/xcc-dns-1\r" + fake, Unread: "get /metrics: " + huge},
	}}})
	r.Unread = append(r.Unread, "the exports of ClusterSet dev-team/prod: "+clear+fake+"\n"+huge)

	var out strings.Builder
	if err := r.WriteText(&out, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range lines {
		if !printable.IsLine(l) || len(l) > 3*printable.MaxBytes {
			t.Errorf("text line of %d bytes, printable %v: %.200q", len(l), printable.IsLine(l), l)
		}
		if l == fake {
			t.Errorf("a forged line %q", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "2 not Ready: ") {
		t.Errorf("last line %q, want it to say what is not Ready", last)
	}
	for _, s := range r.NotReady() {
		if !printable.IsLine(s) {
			t.Errorf("NotReady names %q", s)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	jsonStrings(t, js, func(s string) {
		if !printable.IsLine(s) || len(s) > printable.MaxBytes {
			t.Errorf("JSON string of %d bytes, printable %v: %.200q", len(s), printable.IsLine(s), s)
		}
	})
	if len(js) > 16*printable.MaxBytes {
		t.Errorf("JSON of %d bytes", len(js))
	}
}
