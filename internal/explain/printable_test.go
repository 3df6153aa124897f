package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
	"github.com/xcc-dns/xcc-dns/internal/printable"
)

// explain --from prints what a workload cluster says (its slices' names,
// its Corefile's words, its pods' names, its DNS answers, its API
// server's errors): every line of the text and every string of the
// JSON is printable, escape sequences and carriage returns shown
// escaped, and none is longer than printable.MaxBytes, however long
// the API server's error text.
func TestReportHostileText(t *testing.T) {
	const clear = "\x1b[2J\x1b[H"
	fake := "reason:  Published: cluster-a is published"
	huge := strings.Repeat("\x1b[31m", 32<<20/5)
	n := Classify(gatewayName, "", testConfig(t))
	gd := walkthrough()
	gd.Status.Clusters[0].Message = clear + fake + "\r\n" + huge
	f := Facts{
		GatewayDNS: []v1alpha1.GatewayDNS{gd},
		From:       "cluster-c",
		Slices:     []Slice{{Name: "s" + clear, Hostname: "*.gateway.cluster-a.dev-team.clusters.xcc.test", Source: "cluster-a\r" + fake, Addresses: []string{"192.0.2.1" + clear}}},
		Forward:    &Forward{ConfigMap: "kube-system/coredns", Zone: "xcc.test", Found: true, Key: "xcc.test:53", ForwardTo: []string{"10.0.0.1" + clear + huge}},
		Import:     &Import{Name: "dev-team/web", Type: "ClusterSetIP\x1b[8m"},
		Answers:    []dnsanswer.Answer{{Server: ServerClusterDNS, Address: "10.96.0.10:53", Rcode: "NOERROR", Answer: []string{"x 30 IN TXT \x1b]0;title\x07"}}},
		Reload:     &Reload{ConfigMap: "kube-system/coredns", Pods: []PodReload{{Pod: "kube-system/coredns-0" + clear, State: ReloadUnknown, Why: "metrics unread: " + huge}}},
		Unread:     []string{"live answers of cluster-c: " + clear + fake + "\n" + huge},
	}
	r := Build(n, f, now)

	var out strings.Builder
	if err := r.WriteText(&out, now); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if !printable.IsLine(l) || len(l) > printable.MaxBytes {
			t.Errorf("text line of %d bytes, printable %v: %.200q", len(l), printable.IsLine(l), l)
		}
		if l == fake {
			t.Errorf("a forged line %q", l)
		}
	}
	// As explain -o json writes it.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	js := b.Bytes()
	if len(js) > 32*printable.MaxBytes {
		t.Errorf("JSON of %d bytes", len(js))
	}
	if !strings.Contains(string(js), `"shape":"*.gateway.<cluster>`) {
		t.Errorf("JSON escapes HTML characters: %.300s", js)
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if !printable.IsLine(v) || len(v) > printable.MaxBytes {
				t.Errorf("JSON string of %d bytes, printable %v: %.200q", len(v), printable.IsLine(v), v)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
}
