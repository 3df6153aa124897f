package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DnsperfBin is Debian's dnsperf (package dnsperf), which `make dnsperf`
// installs; the lab's benchmarks drive DNS servers with it as
// bench/dnsbench does.
const DnsperfBin = "dnsperf"

// PerfResult is one dnsperf run: its rate, the latencies of the answers
// (from -v, one line per response) and the answers by RCODE.
type PerfResult struct {
	QPS      float64
	P50, P99 time.Duration
	Lost     int
	Rcodes   map[string]int
}

// Dnsperf runs dnsperf against addr with queryFile (lines "name TYPE"),
// for seconds with clients clients, or with seconds 0 for one pass
// through the file (to warm a cache).
func Dnsperf(ctx context.Context, addr, queryFile string, seconds, clients int) (PerfResult, error) {
	host, port, _ := strings.Cut(addr, ":")
	length := []string{"-l", strconv.Itoa(seconds)}
	if seconds == 0 {
		length = []string{"-n", "1"}
	}
	args := append([]string{"-s", host, "-p", port, "-d", queryFile, "-c", strconv.Itoa(clients), "-v"}, length...)
	// The output goes to a file, read after the run, so that reading it
	// takes no CPU from the servers measured.
	out, err := os.CreateTemp("", "dnsperf-*.out")
	if err != nil {
		return PerfResult{}, fmt.Errorf("dnsperf output: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, DnsperfBin, args...)
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		return PerfResult{}, fmt.Errorf("dnsperf (Debian's package dnsperf, make dnsperf) against %s: %w: %s", addr, err, stderr.String())
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return PerfResult{}, fmt.Errorf("dnsperf output: %w", err)
	}
	return parseDnsperf(bufio.NewReaderSize(out, 1<<16))
}

// parseDnsperf reads dnsperf -v output: "> NOERROR name A 0.000123" per
// response, then the summary.
func parseDnsperf(r io.Reader) (PerfResult, error) {
	res := PerfResult{Rcodes: map[string]int{}}
	var latencies []float64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == ">":
			res.Rcodes[f[1]]++
			if s, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil && f[1] != "T" {
				latencies = append(latencies, s)
			}
		case strings.HasPrefix(line, "Queries per second:"):
			res.QPS, _ = strconv.ParseFloat(f[len(f)-1], 64)
		case strings.HasPrefix(line, "Queries lost:"):
			res.Lost, _ = strconv.Atoi(f[2])
		}
	}
	if err := sc.Err(); err != nil {
		return PerfResult{}, fmt.Errorf("read dnsperf output: %w", err)
	}
	if res.QPS == 0 || len(latencies) == 0 {
		return PerfResult{}, fmt.Errorf("dnsperf printed no summary or no responses")
	}
	slices.Sort(latencies)
	at := func(p int) time.Duration {
		return time.Duration(latencies[(len(latencies)-1)*p/100] * float64(time.Second))
	}
	res.P50, res.P99 = at(50), at(99)
	return res, nil
}
