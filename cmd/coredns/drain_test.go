package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/internal/coredns"
	"github.com/xcc-dns/xcc-dns/internal/testfixture"
)

// runMainEnv makes the test binary run this command's main instead of the
// tests, so a test can start the real DNS server as a process and signal it.
const runMainEnv = "XCC_DNS_TEST_RUN_COREDNS"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// drainTest is how long the server under test drains.
const drainTest = 2 * time.Second

// TestDrainAnswersUntilExit: after SIGTERM the server goes on answering
// names of the zone from etcd (fresh names, so the cache cannot answer)
// for the whole drain, and exits once it is over. Stock CoreDNS closes the
// etcd plugin's client first: every such query would go unanswered.
func TestDrainAnswersUntilExit(t *testing.T) {
	startWorld(t, testSlices()) // etcd, serve, and the environment the Corefile reads
	conf := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(conf, []byte(testfixture.ShippedCorefile(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	port := testfixture.FreePort(t)
	cmd := exec.Command(os.Args[0], "-conf", conf, "-"+coredns.DrainFlag, drainTest.String())
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "DNS_PORT="+port,
		"HEALTH_PORT="+testfixture.FreePort(t), "READY_PORT="+testfixture.FreePort(t), "METRICS_PORT="+testfixture.FreePort(t))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan time.Time, 1)
	go func() { _ = cmd.Wait(); exited <- time.Now() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	addr := net.JoinHostPort("127.0.0.1", port)
	n := 0
	ask := func() error {
		n++
		name := fmt.Sprintf("q%d.gateway.cluster-a.dev-team.clusters.xcc.test.", n)
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).Exchange(m, addr)
		switch {
		case err != nil:
			return err
		case r.Rcode != dns.RcodeSuccess || len(r.Answer) != 2:
			return fmt.Errorf("%s: %s with %d answers, want the gateway's 2 addresses", name, dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		return nil
	}
	eventually(t, func() bool { return ask() == nil })

	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	type result struct {
		sent time.Time
		err  error
	}
	var results []result
	var exitAt time.Time
	for exitAt.IsZero() {
		sent := time.Now()
		results = append(results, result{sent, ask()})
		select {
		case exitAt = <-exited:
		case <-time.After(20 * time.Millisecond):
		}
		if time.Since(signalled) > 10*drainTest {
			t.Fatalf("still running %s after SIGTERM", time.Since(signalled))
		}
	}
	if took := exitAt.Sub(signalled); took < drainTest {
		t.Errorf("exited %s after SIGTERM, before the %s drain was over", took, drainTest)
	}
	answered := 0
	var failed []string
	for _, r := range results {
		// A query sent in the last moments may meet the exit itself.
		if r.sent.After(exitAt.Add(-300 * time.Millisecond)) {
			continue
		}
		if r.err != nil {
			failed = append(failed, fmt.Sprintf("%s after SIGTERM: %v", r.sent.Sub(signalled).Round(time.Millisecond), r.err))
			continue
		}
		answered++
	}
	if len(failed) > 0 || answered < 10 {
		t.Errorf("during the drain %d queries answered, %d failed:\n%s\nthe server's log ends:\n%s",
			answered, len(failed), strings.Join(failed, "\n"), tail(logs.String(), 2000))
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
