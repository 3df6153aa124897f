package corefile_test

import (
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// confPath is the Corefile the test's loader reads, as CoreDNS's -conf
// loader reads its file: its reload plugin loads it again from there.
var (
	confMu   sync.Mutex
	confPath string
)

func init() {
	caddy.RegisterCaddyfileLoader("corefile-test-conf", caddy.LoaderFunc(func(serverType string) (caddy.Input, error) {
		confMu.Lock()
		path := confPath
		confMu.Unlock()
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return caddy.CaddyfileInput{Contents: b, Filepath: path, ServerTypeName: serverType}, nil
	}))
}

// TestReloadHashIsWhatCoreDNSExports runs a real CoreDNS with the reload
// plugin on a Corefile on disk, changes the file, and compares the hash
// its reload plugin then exports on /metrics with ReloadHash of the new
// text and path. Before any reload the plugin exports no hash.
func TestReloadHashIsWhatCoreDNSExports(t *testing.T) {
	metrics := testfixture.FreePort(t)
	path := filepath.Join(t.TempDir(), "coredns", "Corefile")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	v1 := fmt.Sprintf(".:0 {\n    reload 2s\n    prometheus 127.0.0.1:%s\n    whoami\n}\n", metrics)
	v2 := fmt.Sprintf("# changed\n.:0 {\n    reload 2s\n    prometheus 127.0.0.1:%s\n    errors\n    whoami\n}\n", metrics)
	if err := os.WriteFile(path, []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	confMu.Lock()
	confPath = path
	confMu.Unlock()
	coredns.Use()
	caddy.Quiet = true
	if _, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(v1), Filepath: path, ServerTypeName: "dns"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	scrape := func() corefile.ReloadMetrics {
		t.Helper()
		resp, err := http.Get("http://127.0.0.1:" + metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		m, err := corefile.ParseReloadMetrics(resp.Body, 4<<20)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := scrape(); len(m.Hashes) != 0 {
		t.Errorf("hash exported before any reload: %v", m.Hashes)
	}

	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := corefile.ReloadHash(path, v2)
	if err != nil {
		t.Fatal(err)
	}
	var m corefile.ReloadMetrics
	for deadline := time.Now().Add(20 * time.Second); len(m.Hashes) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no coredns_reload_version_info 20 s after the Corefile changed")
		}
		m = scrape()
	}
	if len(m.Hashes) != 1 || m.Hashes[0] != want {
		t.Errorf("CoreDNS exports %v, ReloadHash says %s", m.Hashes, want)
	}
	if !m.HaveFailed || m.Failed != 0 {
		t.Errorf("reload failures: %v (there: %v), want 0", m.Failed, m.HaveFailed)
	}
	// The hash is of the parse, tokens with their line numbers: another
	// comment on the same lines keeps it, a line less changes it.
	old, _ := corefile.ReloadHash(path, v1)
	otherComment, _ := corefile.ReloadHash(path, strings.Replace(v2, "# changed", "# other words", 1))
	lineLess, _ := corefile.ReloadHash(path, strings.TrimPrefix(v2, "# changed\n"))
	if old == want || otherComment != want || lineLess == want {
		t.Errorf("hashes: of the old text %v, with another comment %v, a line less %v: want false, true, false", old == want, otherComment == want, lineLess == want)
	}
}

// A Corefile whose parse in the pod depends on files or environment of
// the pod has no hash here.
func TestReloadHashUnknown(t *testing.T) {
	for _, text := range []string{
		".:53 {\n    import custom/*.override\n    forward . /etc/resolv.conf\n}\n",
		"import custom/*.server\n",
		".:{$DNS_PORT} {\n    whoami\n}\n",
	} {
		if h, err := corefile.ReloadHash(corefile.DefaultConfPath, text); err == nil {
			t.Errorf("%q: hash %s, want an error", text, h)
		}
	}
	if _, err := corefile.ReloadHash(corefile.DefaultConfPath, ".:53 {\n    # import nothing\n    whoami\n}\n"); err != nil {
		t.Errorf("import in a comment: %v", err)
	}
}

// The reload metrics of a /metrics body: only sha512 values set to 1,
// the failure count; a body past the limit or a value that is no hash
// is an error.
func TestParseReloadMetrics(t *testing.T) {
	h := strings.Repeat("ab", 64)
	body := "# HELP coredns_reload_version_info x\ncoredns_reload_version_info{hash=\"sha512\",value=\"" + h + "\"} 1\n" +
		"coredns_reload_version_info{hash=\"md5\",value=\"00\"} 1\ncoredns_reload_failed_total 2\nother 1\n"
	m, err := corefile.ParseReloadMetrics(strings.NewReader(body), 4096)
	if err != nil || len(m.Hashes) != 1 || m.Hashes[0] != h || !m.HaveFailed || m.Failed != 2 {
		t.Errorf("%+v %v", m, err)
	}
	if _, err := corefile.ParseReloadMetrics(strings.NewReader(body), 64); err == nil {
		t.Error("a body past the limit: no error")
	}
	if _, err := corefile.ParseReloadMetrics(strings.NewReader("coredns_reload_version_info{hash=\"sha512\",value=\"zz\"} 1\n"), 4096); err == nil {
		t.Error("a value that is no sha512: no error")
	}
	if m, err := corefile.ParseReloadMetrics(strings.NewReader("up 1\n"), 4096); err != nil || m.HaveFailed || len(m.Hashes) != 0 {
		t.Errorf("no reload plugin: %+v %v", m, err)
	}
}

// A label value is a label's whole value: a sha512 hash written inside
// another label's value (the pod's /metrics is its cluster admin's) is
// no hash the pod loaded, and a series parsed twice is one format error.
func TestParseReloadMetricsLabelsAreParsed(t *testing.T) {
	h := strings.Repeat("cd", 64)
	forged := "coredns_reload_version_info{note=\"x,hash=sha512,value=" + h + "\",hash=\"md5\",value=\"00\"} 1\n"
	if m, err := corefile.ParseReloadMetrics(strings.NewReader(forged), 4096); err != nil || len(m.Hashes) != 0 {
		t.Errorf("a hash inside another label's value: %+v, %v; want none", m, err)
	}
	escaped := "coredns_reload_version_info{hash=\"sha512\",value=\"" + h + "\",note=\"a\\\"}b\"} 1\n"
	if m, err := corefile.ParseReloadMetrics(strings.NewReader(escaped), 4096); err != nil || len(m.Hashes) != 1 || m.Hashes[0] != h {
		t.Errorf("an escaped quote and brace in another label: %+v, %v; want the hash", m, err)
	}
	if _, err := corefile.ParseReloadMetrics(strings.NewReader("coredns_reload_failed_total{ 1\n"), 4096); err == nil {
		t.Error("a body not in the text format: no error")
	}
}

// A CoreDNS pod's /metrics is its cluster admin's to write: whatever the
// body, the parse never panics, reads at most one byte past its limit,
// refuses a body past the limit, and every hash it returns is a sha512
// in hex that the body holds.
func FuzzParseReloadMetrics(f *testing.F) {
	h := strings.Repeat("ab", 64)
	for _, seed := range []string{
		"coredns_reload_version_info{hash=\"sha512\",value=\"" + h + "\"} 1\ncoredns_reload_failed_total 2\n",
		"# TYPE coredns_reload_failed_total counter\ncoredns_reload_failed_total -1\n",
		"coredns_reload_version_info{note=\"x,hash=sha512,value=" + h + "\"} 1\n",
		"coredns_reload_version_info{a=\"\x1b[2J\\\"\\n\"} 1\n",
		"\x00\xff\xfe{}\"\\\n\r\n\t",
		strings.Repeat("x", 300) + " 1\n",
		"coredns_reload_failed_total NaN\ncoredns_reload_failed_total 1\n",
	} {
		f.Add(seed, int64(len(seed)))
		f.Add(seed, int64(len(seed)/2))
	}
	f.Fuzz(func(t *testing.T, body string, limit int64) {
		if limit < 0 || limit > 1<<16 {
			limit = int64(len(body)) / 2
		}
		cr := &countingReader{r: strings.NewReader(body)}
		m, err := corefile.ParseReloadMetrics(cr, limit)
		if cr.n > limit+1 {
			t.Fatalf("read %d bytes, limit %d", cr.n, limit)
		}
		if int64(len(body)) > limit && err == nil {
			t.Fatalf("a body of %d bytes past the limit %d parsed: %+v", len(body), limit, m)
		}
		for _, got := range m.Hashes {
			if _, herr := hex.DecodeString(got); herr != nil || len(got) != 128 || !strings.Contains(body, got) {
				t.Fatalf("hash %q from %q", got, body)
			}
		}
		if err == nil && m.HaveFailed && (m.Failed < 0 || math.IsNaN(m.Failed)) {
			t.Fatalf("failed %v from %q", m.Failed, body)
		}
	})
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
