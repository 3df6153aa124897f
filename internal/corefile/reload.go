package corefile

import (
	"bufio"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/coredns/caddy/caddyfile"
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

// maxMetricsLine is the longest line of /metrics read.
const maxMetricsLine = 64 << 10

// ParseReloadMetrics reads the reload plugin's metrics from a CoreDNS
// /metrics body in the Prometheus text format, reading at most limit
// bytes.
func ParseReloadMetrics(body io.Reader, limit int64) (ReloadMetrics, error) {
	var m ReloadMetrics
	lr := &io.LimitedReader{R: body, N: limit + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), maxMetricsLine)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, value, ok := sampleLine(line)
		if !ok {
			continue
		}
		switch name {
		case MetricReloadFailed:
			v, err := strconv.ParseFloat(value, 64)
			if err != nil || math.IsNaN(v) || v < 0 {
				return m, fmt.Errorf("%s %q: not a count", name, value)
			}
			m.Failed, m.HaveFailed = v, true
		case MetricReloadVersion:
			if value != "1" || labelValue(labels, "hash") != "sha512" {
				continue
			}
			h := labelValue(labels, "value")
			if _, err := hex.DecodeString(h); err != nil || len(h) != 2*sha512.Size {
				return m, fmt.Errorf("%s value %q: not a sha512", name, h)
			}
			m.Hashes = append(m.Hashes, h)
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("read /metrics: %w", err)
	}
	if lr.N <= 0 {
		return m, fmt.Errorf("read /metrics: longer than %d bytes", limit)
	}
	return m, nil
}

// sampleLine splits `name{labels} value [timestamp]`.
func sampleLine(line string) (name, labels, value string, ok bool) {
	var rest string
	if i := strings.IndexAny(line, "{ "); i > 0 && line[i] == '{' {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", "", "", false
		}
		name, labels, rest = line[:i], line[i+1:j], line[j+1:]
	} else {
		name, rest, ok = strings.Cut(line, " ")
		if !ok {
			return "", "", "", false
		}
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", "", "", false
	}
	return name, labels, f[0], true
}

// labelValue is the value of label key in labels (`a="x",b="y"`); the
// values it looks for hold no quote or comma.
func labelValue(labels, key string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
