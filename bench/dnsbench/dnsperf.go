package main

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

// dnsperfBin is Debian's dnsperf (package dnsperf).
const dnsperfBin = "dnsperf"

// result is one dnsperf run.
type result struct {
	qps       float64
	avg, p99  time.Duration
	completed int
	lost      int
	rcodes    map[string]int // responses by RCODE
	peakRSS   int64          // the server's peak resident memory, bytes
	cacheHit  float64        // share of the measured run's queries answered from cache
	// corednsCPU and etcdCPU are the CPU time, in microseconds, each used
	// per answered query: unlike q/s, they hardly depend on what else the
	// machine runs.
	corednsCPU, etcdCPU float64
}

// dnsperf runs dnsperf against addr with the query file, for seconds or,
// when seconds is 0, for one pass through the file, and returns its
// figures. With -v dnsperf prints every response's RCODE and latency, from
// which the p99 comes; its own summary gives the rate.
func dnsperf(ctx context.Context, addr, queryFile string, seconds, clients int) (result, error) {
	host, port, _ := strings.Cut(addr, ":")
	length := []string{"-l", strconv.Itoa(seconds)}
	if seconds == 0 {
		length = []string{"-n", "1"}
	}
	args := append([]string{"-s", host, "-p", port, "-d", queryFile, "-c", strconv.Itoa(clients), "-v"}, length...)
	cmd := exec.CommandContext(ctx, dnsperfBin, args...)
	// The output goes to a file and is read after the run, so reading it
	// costs no CPU while the servers are measured.
	out, err := os.CreateTemp("", "dnsperf-*.out")
	if err != nil {
		return result{}, fmt.Errorf("dnsperf output: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("dnsperf (Debian's package dnsperf): %w: %s", err, stderr.String())
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return result{}, fmt.Errorf("dnsperf output: %w", err)
	}
	return parseDnsperf(bufio.NewReaderSize(out, 1<<16))
}

// parseDnsperf reads dnsperf -v output: one line per response
// ("> NOERROR kuard.gateway... A 0.000123") and then the summary.
func parseDnsperf(r io.Reader) (result, error) {
	res := result{rcodes: map[string]int{}}
	var latencies []float64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == ">":
			res.rcodes[f[1]]++
			if s, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil && f[1] != "T" {
				latencies = append(latencies, s)
			}
		case strings.HasPrefix(line, "Queries per second:"):
			res.qps, _ = strconv.ParseFloat(f[len(f)-1], 64)
		case strings.HasPrefix(line, "Average Latency (s):"):
			s, _ := strconv.ParseFloat(f[3], 64)
			res.avg = seconds(s)
		case strings.HasPrefix(line, "Queries completed:"):
			res.completed, _ = strconv.Atoi(f[2])
		case strings.HasPrefix(line, "Queries lost:"):
			res.lost, _ = strconv.Atoi(f[2])
		}
	}
	if err := sc.Err(); err != nil {
		return result{}, fmt.Errorf("read dnsperf output: %w", err)
	}
	if res.qps == 0 || len(latencies) == 0 {
		return result{}, fmt.Errorf("dnsperf printed no summary or no responses")
	}
	slices.Sort(latencies)
	res.p99 = seconds(latencies[(len(latencies)*99)/100])
	return res, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func (r result) share(rcode string) float64 {
	total := 0
	for _, n := range r.rcodes {
		total += n
	}
	if total == 0 {
		return 0
	}
	return float64(r.rcodes[rcode]) / float64(total)
}
