// Command probe is the node lab's client image: a pod runs it to ask its
// cluster DNS (the nameserver of the resolv.conf the kubelet wrote) and to
// open TCP connections.
//
//	probe sleep                      wait until stopped
//	probe query [@<ip>] <type> <name>...
//	                                 one line per answer: name, type, rcode, records
//	                                 (@<ip>: ask that server, not the resolv.conf's)
//	probe tcp <host:port>            connect, print the peer address
//	probe get <n> <url>              n HTTP GETs, each on a new connection; one line per body
//	probe until <s> [@<ip>] <type> <name> <rcode> [<value>...]
//	                                 ask every 100 ms until the answer is rcode with exactly
//	                                 the values (NOERROR without values: any records), then
//	                                 print "matched <RFC 3339 time>"; fail after s seconds
//	probe listen <addr>              serve HTTP, answering the pod's name
//	probe load <qps> <name> <ip>     ask A <name> ({n} replaced by a counter) qps times a
//	                                 second until stopped; each second one line of totals
//	                                 (a failure: no answer, another rcode or not <ip>)
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe sleep | query <type> <name>... | tcp <host:port>")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "sleep":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
		<-c
	case "query":
		if len(os.Args) < 4 {
			fmt.Fprintln(os.Stderr, "usage: probe query <type> <name>...")
			os.Exit(2)
		}
		server, args := "", os.Args[2:]
		if at, ok := strings.CutPrefix(args[0], "@"); ok {
			server, args = net.JoinHostPort(at, "53"), args[1:]
		}
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "usage: probe query [@<ip>] <type> <name>...")
			os.Exit(2)
		}
		if err := query(server, args[0], args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
	case "listen":
		host, _ := os.Hostname()
		err := http.ListenAndServe(os.Args[2], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from %s\n", host)
		}))
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	case "load":
		if len(os.Args) != 5 {
			fmt.Fprintln(os.Stderr, "usage: probe load <qps> <name> <ip>")
			os.Exit(2)
		}
		qps, err := strconv.Atoi(os.Args[2])
		if err != nil || qps < 1 {
			fmt.Fprintln(os.Stderr, "probe: bad qps", os.Args[2])
			os.Exit(2)
		}
		if err := load(qps, os.Args[3], os.Args[4]); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
	case "get":
		n, err := strconv.Atoi(os.Args[2])
		if len(os.Args) != 4 || err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "usage: probe get <n> <url>")
			os.Exit(2)
		}
		if err := get(n, os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
	case "until":
		secs, err := strconv.Atoi(os.Args[2])
		server, args := "", os.Args[3:]
		if len(args) > 0 {
			if at, ok := strings.CutPrefix(args[0], "@"); ok {
				server, args = net.JoinHostPort(at, "53"), args[1:]
			}
		}
		if len(args) < 3 || err != nil || secs < 1 {
			fmt.Fprintln(os.Stderr, "usage: probe until <seconds> [@<ip>] <type> <name> <rcode> [<value>...]")
			os.Exit(2)
		}
		if err := until(time.Duration(secs)*time.Second, server, args[0], args[1], args[2], args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
	case "tcp":
		conn, err := net.DialTimeout("tcp", os.Args[2], 5*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
		fmt.Printf("connected %s -> %s\n", conn.LocalAddr(), conn.RemoteAddr())
		conn.Close()
	default:
		fmt.Fprintln(os.Stderr, "probe: unknown command", os.Args[1])
		os.Exit(2)
	}
}

// nameserver is the first nameserver of /etc/resolv.conf, the one the
// kubelet wrote (the kube-dns Service's address).
func nameserver() (string, error) {
	f, err := os.Open("/etc/resolv.conf")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) == 2 && fl[0] == "nameserver" {
			return net.JoinHostPort(fl[1], "53"), nil
		}
	}
	return "", fmt.Errorf("no nameserver in /etc/resolv.conf")
}

// query asks server (the resolv.conf's nameserver when empty).
func query(server, qtype string, names []string) error {
	t, ok := dns.StringToType[strings.ToUpper(qtype)]
	if !ok {
		return fmt.Errorf("unknown type %s", qtype)
	}
	if server == "" {
		var err error
		if server, err = nameserver(); err != nil {
			return err
		}
	}
	c := &dns.Client{Timeout: 3 * time.Second}
	for _, name := range names {
		if t == dns.TypePTR && net.ParseIP(name) != nil {
			name, _ = dns.ReverseAddr(name)
		}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), t)
		r, _, err := c.Exchange(m, server)
		if err != nil {
			fmt.Printf("%s %s ERROR %v\n", name, qtype, err)
			continue
		}
		var rrs []string
		for _, rr := range r.Answer {
			f := strings.Fields(rr.String())
			rrs = append(rrs, f[3]+"="+strings.Join(f[4:], " "))
		}
		fmt.Printf("%s %s %s via %s: %s\n", name, qtype, dns.RcodeToString[r.Rcode], server, strings.Join(rrs, ", "))
	}
	return nil
}

// get makes n HTTP GETs of url, each on a new connection (so that
// kube-proxy picks an endpoint for each), and prints each body's first
// line. The host name is resolved by Go's resolver through the
// resolv.conf, search list and all.
func get(n int, url string) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < n; i++ {
		r, err := c.Get(url)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 4096))
		r.Body.Close()
		if err != nil {
			return err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		fmt.Printf("%d %s\n", r.StatusCode, line)
	}
	return nil
}

// until asks server (the resolv.conf's nameserver when empty) for name
// every 100 ms until the answer matches, printing each new answer with
// its time; see the usage.
func until(timeout time.Duration, server, qtype, name, rcode string, values []string) error {
	t, ok := dns.StringToType[strings.ToUpper(qtype)]
	if !ok {
		return fmt.Errorf("unknown type %s", qtype)
	}
	if server == "" {
		var err error
		if server, err = nameserver(); err != nil {
			return err
		}
	}
	want := slices.Clone(values)
	slices.Sort(want)
	c := &dns.Client{Timeout: 2 * time.Second}
	last := ""
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), t)
		r, _, err := c.Exchange(m, server)
		got, code := []string{}, "ERROR"
		if err == nil {
			code = dns.RcodeToString[r.Rcode]
			for _, rr := range r.Answer {
				if f := strings.Fields(rr.String()); len(f) > 4 && rr.Header().Rrtype == t {
					got = append(got, strings.Join(f[4:], " "))
				}
			}
		}
		slices.Sort(got)
		now := time.Now().UTC().Format(time.RFC3339Nano)
		if line := code + " " + strings.Join(got, ","); line != last {
			fmt.Printf("%s %s %s %s\n", now, name, qtype, line)
			last = line
		}
		if code == rcode && (slices.Equal(got, want) || (len(want) == 0 && rcode == "NOERROR" && len(got) > 0)) {
			fmt.Printf("matched %s\n", now)
			return nil
		}
	}
	return fmt.Errorf("%s %s: no answer %s %v within %s", name, qtype, rcode, values, timeout)
}

// slowAnswer is when an answer counts as slow.
const slowAnswer = 500 * time.Millisecond

// resolverTimeout is how long a pod's resolver waits for an answer before
// it counts a query as failed (glibc's default, which kubelet's
// resolv.conf keeps). A reply lost on the way is retried by the cluster
// DNS's forward after its own 2 s and answered within it: slow, not failed.
const resolverTimeout = 5 * time.Second

// load asks qps queries a second, each on its own socket with a 5 s
// timeout (a pod resolver's, glibc's and Go's default), until SIGTERM, and prints every second the totals: sent,
// ok, failed, slow (an answer after slowAnswer) and the slowest answer.
// Each failure is printed as it happens.
func load(qps int, name, ip string) error {
	server, err := nameserver()
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var sent, ok, failed, slow, maxMicros atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	c := &dns.Client{Timeout: resolverTimeout}
	ask := func(n int64) {
		defer wg.Done()
		q := strings.ReplaceAll(name, "{n}", strconv.FormatInt(n, 10))
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(q), dns.TypeA)
		t0 := time.Now()
		r, _, err := c.Exchange(m, server)
		d := time.Since(t0)
		for {
			cur := maxMicros.Load()
			if d.Microseconds() <= cur || maxMicros.CompareAndSwap(cur, d.Microseconds()) {
				break
			}
		}
		if d > slowAnswer {
			slow.Add(1)
		}
		why := ""
		switch {
		case err != nil:
			why = err.Error()
		case r.Rcode != dns.RcodeSuccess:
			why = dns.RcodeToString[r.Rcode]
		case len(r.Answer) != 1 || !strings.HasSuffix(r.Answer[0].String(), "\t"+ip):
			why = fmt.Sprintf("answer %v", r.Answer)
		}
		if why != "" {
			failed.Add(1)
			fmt.Printf("FAIL t=%.3fs %s: %s\n", time.Since(start).Seconds(), q, why)
			return
		}
		ok.Add(1)
	}
	tick := time.NewTicker(time.Second / time.Duration(qps))
	defer tick.Stop()
	report := time.NewTicker(time.Second)
	defer report.Stop()
	line := func() {
		fmt.Printf("t=%ds sent=%d ok=%d failed=%d slow=%d max=%dms\n", int(time.Since(start).Seconds()),
			sent.Load(), ok.Load(), failed.Load(), slow.Load(), maxMicros.Load()/1000)
	}
	for {
		select {
		case <-tick.C:
			n := sent.Add(1)
			wg.Add(1)
			go ask(n)
		case <-report.C:
			line()
		case <-stop:
			wg.Wait()
			line()
			return nil
		}
	}
}
