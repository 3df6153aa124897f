// Command lab starts the local multi-cluster lab with the walkthrough
// applied, prints what cluster-b's DNS answers and the commands to ask it
// yourself, and stays up until interrupted (Ctrl-C), then cleans up.
// `make demo` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const (
	startTimeout  = 10 * time.Minute
	answerTimeout = 90 * time.Second
	// etcdctlPath is where `make tools` puts etcdctl, relative to the repository.
	etcdctlPath = "bin/etcdctl"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	repo := flag.String("repo", "", "repository root (default: found from the working directory)")
	dir := flag.String("dir", "", "directory for the lab's files and logs (default: a new temporary directory, removed at exit)")
	keep := flag.Bool("keep", false, "keep the lab's directory at exit")
	clustersOnly := flag.Bool("clusters-only", false, "start the API servers and their objects only, none of the xcc-dns processes")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	workDir := *dir
	if workDir == "" {
		d, mkErr := os.MkdirTemp("", "xcc-dns-lab-")
		if mkErr != nil {
			return fmt.Errorf("create lab dir: %w", mkErr)
		}
		workDir = d
		if !*keep {
			defer func() {
				// A lab that failed keeps its logs for a look.
				if err == nil {
					os.RemoveAll(d)
				}
			}()
		}
	}
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	began := time.Now()
	l, err := lab.Start(startCtx, lab.Options{Dir: workDir, RepoRoot: *repo, ClustersOnly: *clustersOnly, Progress: os.Stdout})
	if err != nil {
		return fmt.Errorf("%w\nlab: files and logs kept in %s", err, workDir)
	}
	defer func() {
		fmt.Println("lab: stopping every process")
		l.Stop()
		fmt.Println("lab: stopped")
	}()
	fmt.Printf("lab: started in %s; files and logs in %s\n", time.Since(began).Round(100*time.Millisecond), workDir)

	b := l.DNS[lab.ClusterB]
	switch {
	case *clustersOnly || b == nil || !l.GatewayDNSCRD:
		fmt.Println("lab: not everything runs:")
		for _, s := range l.Skipped {
			fmt.Println("  -", s)
		}
	default:
		if err := l.ApplyWalkthrough(ctx); err != nil {
			return err
		}
		want := l.Gateways[lab.ClusterA].IPs
		took, _, err := lab.WaitAnswer(ctx, b.ClusterDNSAddr, lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA, dns.RcodeSuccess, want, answerTimeout)
		if err != nil {
			fmt.Println("lab: WARNING:", err)
			fmt.Printf("lab: see the logs in %s\n", l.LogDir)
		} else {
			fmt.Printf("lab: cluster-b resolves cluster-a's gateway %s after %s\n", want, took.Round(10*time.Millisecond))
		}
		printAnswers(l, b)
	}
	printCommands(l, b)
	fmt.Println("\nlab: up; press Ctrl-C to stop and clean up")
	<-ctx.Done()
	return nil
}

func printAnswers(l *lab.Lab, b *lab.WorkloadDNS) {
	fmt.Printf("\nWhat cluster-b's cluster DNS (%s) answers:\n", b.ClusterDNSAddr)
	queries := []struct {
		name  string
		qtype uint16
	}{
		{lab.GatewayHost("kuard", lab.ClusterA), dns.TypeA},
		{lab.GatewayHost("kuard", lab.ClusterB), dns.TypeA},
		{lab.GatewayHost("kuard", lab.ClusterB), dns.TypeAAAA},
		{lab.APIHost(lab.ClusterA), dns.TypeA},
		{lab.GatewayHost("kuard", lab.ClusterC), dns.TypeA},
	}
	for _, q := range queries {
		r, err := lab.Query(b.ClusterDNSAddr, q.name, q.qtype)
		if err != nil {
			fmt.Printf("  %-5s %s: %v\n", dns.TypeToString[q.qtype], q.name, err)
			continue
		}
		fmt.Printf("  %-5s %s: %s\n", dns.TypeToString[q.qtype], q.name, lab.Summary(r))
	}
}

func printCommands(l *lab.Lab, b *lab.WorkloadDNS) {
	fmt.Println("\nTry it yourself (from the repository root):")
	if b != nil && b.ClusterDNSAddr != "" {
		host, port, _ := net.SplitHostPort(b.ClusterDNSAddr)
		fmt.Printf("  dig @%s -p %s %s\n", host, port, lab.GatewayHost("kuard", lab.ClusterA))
		fmt.Printf("  dig @%s -p %s %s AAAA\n", host, port, lab.GatewayHost("kuard", lab.ClusterB))
		fmt.Printf("  dig @%s -p %s %s\n", host, port, lab.APIHost(lab.ClusterA))
		fmt.Printf("  %s --endpoints %s get --prefix /skydns\n", etcdctlPath, b.EtcdClientURL)
	}
	fmt.Println("\nKubeconfigs (admin):")
	fmt.Printf("  %-10s %s\n", l.Management.Name, l.Management.Kubeconfig)
	for _, w := range l.Workloads {
		fmt.Printf("  %-10s %s\n", w.Name, w.Kubeconfig)
	}
	fmt.Printf("\nLogs: %s (one file per process)\n", l.LogDir)
	fmt.Printf("Cluster DNS Corefile of cluster-b: %s\n", filepath.Join(l.Dir, lab.ClusterB, "cluster-dns.Corefile"))
}
