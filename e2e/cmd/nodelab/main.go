// Command nodelab starts the node lab: real one-node clusters, each in a
// network namespace of its own, on this machine (see e2e/README.md, "The
// node lab"). It runs until interrupted, then removes everything it made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var images listFlag
	repo := flag.String("repo", "", "repository root (default: found from the working directory)")
	clusters := flag.String("clusters", "management,cluster-a,cluster-b", "comma-separated cluster names, one node each")
	clustersOnly := flag.Bool("clusters-only", false, "start the clusters only: no CoreDNS, no charts")
	down := flag.Bool("down", false, "only remove what an earlier node lab left, then exit")
	clusterSet := flag.String("clusterset", "", "also apply a ClusterSet of this name selecting every workload cluster (for an MCS test suite)")
	flag.Var(&images, "image", "an image archive (OCI or Docker) to import into every node; repeatable")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *down {
		if err := lab.NodeTeardown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	start := time.Now()
	l, err := lab.StartNodeLab(ctx, lab.NodeOptions{
		RepoRoot:     *repo,
		Clusters:     strings.Split(*clusters, ","),
		Images:       images,
		ClustersOnly: *clustersOnly,
		Progress:     os.Stdout,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "node lab:", err)
		os.Exit(1)
	}
	defer l.Stop()
	fmt.Printf(">> node lab up in %s; kubeconfig %s (a context per cluster); logs in %s\n",
		time.Since(start).Round(100*time.Millisecond), l.Kubeconfig, l.LogDir)
	if *clusterSet != "" && !*clustersOnly && len(l.Clusters) > 1 {
		if _, err := lab.ApplyYAML(ctx, l.Clusters[0].Cluster, lab.ClusterSetGVR, lab.ClusterSetYAML(*clusterSet)); err != nil {
			fmt.Fprintln(os.Stderr, "node lab:", err)
			l.Stop()
			os.Exit(1)
		}
		fmt.Printf(">> ClusterSet %s/%s applied on %s: every workload cluster is a member\n", lab.ClusterNamespace, *clusterSet, l.Clusters[0].Name)
	}
	if a, b := l.Cluster(lab.ClusterA), l.Cluster(lab.ClusterB); a != nil && b != nil && !*clustersOnly {
		ask(ctx, l, a, b)
	}
	fmt.Println(">> Ctrl-C stops it and removes everything it made")
	<-ctx.Done()
}

// ask runs the probe image in a pod of cluster-b until its cluster DNS
// answers cluster-a's gateway name (the patched Corefile is read about a
// minute after the install), prints what the pod got, and kuard's answer
// to an HTTP GET of the name, routed by cluster-a's Gateway.
func ask(ctx context.Context, l *lab.NodeLab, a, b *lab.NodeCluster) {
	name := lab.GatewayHost("kuard", lab.ClusterA)
	fmt.Printf(">> a pod in %s asks its cluster DNS (kube-dns) for %s, until it answers\n", b.Name, name)
	start := time.Now()
	for ctx.Err() == nil && time.Since(start) < 5*time.Minute {
		out, err := l.RunProbe(ctx, b, "demo-query", "query", "A", name)
		if err == nil && strings.Contains(out, "A="+a.GatewayAddress()) {
			fmt.Printf(">> after %s: %s", time.Since(start).Round(time.Second), out)
			out, err = l.RunProbe(ctx, b, "demo-get", "get", "1", "http://"+name+"/")
			if err == nil {
				fmt.Printf(">> and GET http://%s/ through %s's Gateway (Traefik): %s", name, a.Name, out)
			}
			fmt.Printf(">> try more: KUBECONFIG=%s kubectl --context %s run q --rm -i --restart=Never --image=%s --image-pull-policy=Never -- query A %s\n",
				l.Kubeconfig, b.Name, lab.ProbeImage, "kuard."+lab.GatewayDNSName+"."+lab.ClusterNamespace+".gateways."+lab.Zone)
			return
		}
		time.Sleep(5 * time.Second)
	}
	fmt.Println(">> no answer within 5 minutes; the logs are in", l.LogDir)
}
