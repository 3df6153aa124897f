package corefile

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/coredns/caddy/caddyfile"
	"github.com/xcc-dns/xcc-dns/internal/promtext"
)

// DefaultConfPath is the path CoreDNS loads its Corefile from without
// -conf: Corefile in its working directory (caddy.DefaultConfigFile).
const DefaultConfPath = "Corefile"

// The reload plugin's metrics: the hash of the Corefile a CoreDNS last
// loaded by reloading, and the reloads that failed.
const (
	MetricReloadVersion = "coredns_reload_version_info"
	MetricReloadFailed  = "coredns_reload_failed_total"
)

// ReloadHash is the hash the reload plugin of a CoreDNS that loads text
// from path (its -conf as written) exports in
// coredns_reload_version_info{hash="sha512"}: sha512 of the JSON of the
// Corefile's parsed server blocks, their tokens with line numbers. A
// comment changes it only when it moves a directive to another line. A
// Corefile that imports other files, or reads the environment
// (readsEnvironment), hashes to what only the pod can compute: error.
func ReloadHash(path, text string) (string, error) {
	if err := selfContained(text); err != nil {
		return "", err
	}
	blocks, err := caddyfile.Parse(path, strings.NewReader(text), nil)
	if err != nil {
		return "", fmt.Errorf("the Corefile does not parse: %w", err)
	}
	b, err := json.Marshal(blocks)
	if err != nil {
		return "", fmt.Errorf("encode the parsed Corefile: %w", err)
	}
	sum := sha512.Sum512(b)
	return hex.EncodeToString(sum[:]), nil
}

// selfContained refuses a Corefile whose parse here would read this
// machine: its environment (readsEnvironment) or its files (import). A
// workload cluster's Corefile is its admins' to write; parsed by an
// operator's command, either would put the operator's secrets or files
// into what the command prints, and neither is what the pod parses anyway.
func selfContained(text string) error {
	if err := readsEnvironment(text); err != nil {
		return err
	}
	if importsFiles(text) {
		return errors.New("the Corefile imports other files: its parse in the pod cannot be computed here")
	}
	return nil
}

// importsFiles reports whether a word of text outside comments is
// "import": the parser would read files of the machine parsing it. Any
// such word counts, quoted or not, which errs on the side of unknown.
func importsFiles(text string) bool {
	for _, line := range strings.Split(stripComments(text), "\n") {
		for _, w := range strings.Fields(line) {
			if strings.Trim(w, `"{}`) == "import" {
				return true
			}
		}
	}
	return false
}

// ReloadMetrics are the reload plugin's metrics of one CoreDNS.
type ReloadMetrics struct {
	// Hashes are the values of coredns_reload_version_info with hash
	// sha512 set to 1: none until the pod has reloaded once, as the
	// plugin sets it only on a reload.
	Hashes []string
	// Failed is coredns_reload_failed_total; HaveFailed whether it was
	// there (a CoreDNS without the reload plugin has neither).
	Failed     float64
	HaveFailed bool
}

// ParseReloadMetrics reads the reload plugin's metrics from a CoreDNS
// /metrics body in the Prometheus text format (expfmt's parser, so a
// label's value is all of it and never another label's), reading at
// most limit bytes: the pod that answers is its cluster admin's. A body
// past the limit or not in the format fails, and so does a failure count
// that is no count or a hash of sha512 set to 1 that is no sha512.
func ParseReloadMetrics(body io.Reader, limit int64) (ReloadMetrics, error) {
	var m ReloadMetrics
	families, err := promtext.Parse(body, limit)
	if err != nil {
		return m, err
	}
	for _, s := range families[MetricReloadFailed].GetMetric() {
		v := promtext.Value(s)
		if math.IsNaN(v) || v < 0 {
			return m, fmt.Errorf("%s %v: not a count", MetricReloadFailed, v)
		}
		m.Failed, m.HaveFailed = m.Failed+v, true
	}
	for _, s := range families[MetricReloadVersion].GetMetric() {
		if promtext.Value(s) != 1 || promtext.Label(s, "hash") != "sha512" {
			continue
		}
		h := promtext.Label(s, "value")
		if _, err := hex.DecodeString(h); err != nil || len(h) != 2*sha512.Size {
			return m, fmt.Errorf("%s value %q: not a sha512", MetricReloadVersion, h)
		}
		m.Hashes = append(m.Hashes, h)
	}
	return m, nil
}
