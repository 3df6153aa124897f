package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

const (
	readyTimeout = 30 * time.Second
	queryTimeout = 2 * time.Second
	// upstreamUnused is the shipped Corefile's forwarder for CNAME targets
	// outside the zone; the benchmark asks for none.
	upstreamUnused = "127.0.0.1:9"
)

// config is one of the servers compared.
type config struct {
	id, what string
	corefile string // Corefile text, with {$...} placeholders
}

var (
	// cacheBlock is a cache directive in the shipped Corefile, with its
	// settings: the zone block's, which comes first (the reverse zones'
	// block, in the guard file, has one too, and the `.` block a one-line
	// `cache 30` this does not match).
	cacheBlock = regexp.MustCompile(`(?m)^[ \t]*cache \{[^}]*\}\n`)
	// metricsLine is where the profiling endpoint goes in.
	metricsLine = regexp.MustCompile(`(?m)^([ \t]*)prometheus :\{\$METRICS_PORT\}\n`)
)

// zoneBlock starts the shipped Corefile's server block of the zone; its
// name comes from the environment (XCC_ZONE), as in the chart.
const zoneBlock = "{$XCC_ZONE}:{$DNS_PORT} {"

// configs derives the three servers from the shipped Corefile text.
func configs(shipped string) ([]config, error) {
	zone, first := strings.Index(shipped, zoneBlock), cacheBlock.FindStringIndex(shipped)
	if zone < 0 || first == nil || first[0] < zone {
		return nil, errors.New("shipped Corefile: want a `cache { ... }` block in the " + zoneBlock + " server block first")
	}
	if !metricsLine.MatchString(shipped) {
		return nil, errors.New("shipped Corefile: no `prometheus :{$METRICS_PORT}` line")
	}
	withPprof := metricsLine.ReplaceAllString(shipped, "${0}${1}pprof 127.0.0.1:{$$PPROF_PORT}\n")
	cache := cacheBlock.FindString(shipped)
	first = cacheBlock.FindStringIndex(withPprof)
	withoutCache := withPprof[:first[0]] + withPprof[first[1]:]
	baseline := `xcc.test:{$DNS_PORT} {
    errors
    health :{$HEALTH_PORT}
    ready :{$READY_PORT}
    prometheus :{$METRICS_PORT}
    pprof 127.0.0.1:{$PPROF_PORT}
    reload
` + cache + `    file {$ZONE_FILE} xcc.test
}
`
	return []config{
		{id: "a", what: "shipped Corefile (cache, guard, etcd)", corefile: withPprof},
		{id: "b", what: "shipped Corefile without cache", corefile: withoutCache},
		{id: "c", what: "baseline: file + the same cache, wildcard records", corefile: baseline},
	}, nil
}

// server is a running bin/coredns.
type server struct {
	cmd         *exec.Cmd
	addr        string // DNS address
	pprofAddr   string
	metricsAddr string
	logPath     string
	done        chan struct{} // closed when the process has exited
	exitErr     error         // why it exited; set before done is closed
}

// startServer runs corefile with bin/coredns and waits until it answers.
func startServer(ctx context.Context, o options, dir string, c config, etcdEndpoint, zoneFile string) (*server, error) {
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "Corefile-"+c.id)
	if err := writeFile(path, c.corefile); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "coredns-"+c.id+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", logPath, err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, o.coredns, "-conf", path)
	cmd.Env = append(os.Environ(),
		"DNS_PORT="+strconv.Itoa(ports[0]),
		"HEALTH_PORT="+strconv.Itoa(ports[1]),
		"READY_PORT="+strconv.Itoa(ports[2]),
		"METRICS_PORT="+strconv.Itoa(ports[3]),
		"PPROF_PORT="+strconv.Itoa(ports[4]),
		"ETCD_ENDPOINT="+etcdEndpoint,
		"UPSTREAM="+upstreamUnused,
		"ZONE_FILE="+zoneFile,
		// The shipped Corefile's zone and the guard file it imports,
		// which `xcc-syncer corefile` writes in the chart.
		"XCC_ZONE="+zone,
		"XCC_GUARD="+o.guardFile,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.coredns, err)
	}
	s := &server{
		cmd:         cmd,
		addr:        net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		pprofAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[4])),
		metricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3])),
		logPath:     logPath,
		done:        make(chan struct{}),
	}
	go func() {
		s.exitErr = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx, ports[2]); err != nil {
		s.stop()
		return nil, fmt.Errorf("server %s: %w\n%s", c.id, err, tail(logPath))
	}
	return s, nil
}

func (s *server) waitReady(ctx context.Context, readyPort int) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort)
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("exited: %w", s.exitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(url)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
	return fmt.Errorf("not ready after %s", readyTimeout)
}

// cacheCounts reads the server's cache hits and misses so far from its
// Prometheus endpoint; both are 0 for a server without cache.
func (s *server) cacheCounts() (hits, misses float64, err error) {
	resp, err := http.Get("http://" + s.metricsAddr + "/metrics")
	if err != nil {
		return 0, 0, fmt.Errorf("cache metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(f[0], "coredns_cache_hits_total{"):
			hits += v
		case strings.HasPrefix(f[0], "coredns_cache_misses_total{"):
			misses += v
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("cache metrics: %w", err)
	}
	return hits, misses, nil
}

// cpu is the CPU time the server has used so far (user and system, from
// /proc/<pid>/stat, in clock ticks of 10 ms).
func (s *server) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("server CPU time: %w", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("server CPU time: unexpected /proc stat %q", b)
	}
	// Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("server CPU time: unexpected /proc stat %q", b)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// clockTick is USER_HZ on Linux: 100 ticks a second.
const clockTick = 10 * time.Millisecond

// peakRSS is the server's peak resident memory (VmHWM) so far.
func (s *server) peakRSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("peak memory: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("peak memory %q: %w", l, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("peak memory: no VmHWM in /proc status")
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// check makes sure the server gives the answers being measured: the
// gateway's address for a hit, NXDOMAIN for a miss. A benchmark of wrong
// answers would be worthless.
func (s *server) check(d dataset) error {
	for _, i := range []int{0, d.names - 1} {
		r, err := ask(s.addr, d.hits[i])
		if err != nil {
			return err
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			return fmt.Errorf("%s: want one A record, got %s %v", d.hits[i], dns.RcodeToString[r.Rcode], r.Answer)
		}
		a, ok := r.Answer[0].(*dns.A)
		if !ok || a.A.String() != d.address[i] || a.Hdr.Name != d.hits[i] {
			return fmt.Errorf("%s: want %s A %s, got %v", d.hits[i], d.hits[i], d.address[i], r.Answer[0])
		}
	}
	r, err := ask(s.addr, d.misses[0])
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeNameError {
		return fmt.Errorf("%s: want NXDOMAIN, got %s", d.misses[0], dns.RcodeToString[r.Rcode])
	}
	return nil
}

func ask(addr, name string) (*dns.Msg, error) {
	return askType(addr, name, dns.TypeA)
}

func askType(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Timeout: queryTimeout}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		return nil, fmt.Errorf("ask %s for %s: %w", addr, name, err)
	}
	return r, nil
}

// freePorts returns n ports free for both TCP and UDP on 127.0.0.1 now.
func freePorts(n int) ([]int, error) {
	var ports []int
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		l.Close()
		if err != nil {
			continue // taken for UDP: try another
		}
		u.Close()
		ports = append(ports, port)
	}
	return ports, nil
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
