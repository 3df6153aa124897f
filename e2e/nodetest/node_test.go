// Package nodetest runs the node lab (real one-node clusters, both charts
// as pods) and asks from a pod. make e2e-node runs it; a machine that
// lacks what the lab needs fails it, naming what is missing.
package nodetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

var nl *lab.NodeLab

func TestMain(m *testing.M) {
	ctx := context.Background()
	start := time.Now()
	var err error
	nl, err = lab.StartNodeLab(ctx, lab.NodeOptions{Progress: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "node lab:", err)
		os.Exit(1)
	}
	fmt.Printf(">> node lab up in %s\n", time.Since(start).Round(100*time.Millisecond))
	code := m.Run()
	if code != 0 {
		fmt.Println(nl.Tails())
	}
	nl.Stop()
	os.Exit(code)
}

// answer is one line of probe query: the rcode and the records' values.
type answer struct {
	Rcode  string
	Values []string
}

// parseProbe reads probe query's lines: "<name> <type> <rcode> via
// <server>: <type>=<value>, ...", keyed by "<name> <type>".
func parseProbe(out string) map[string]answer {
	m := map[string]answer{}
	for _, line := range strings.Split(out, "\n") {
		head, tail, ok := strings.Cut(line, ": ")
		if !ok {
			head = strings.TrimSuffix(line, ":")
		}
		f := strings.Fields(head)
		if len(f) < 3 {
			continue
		}
		a := answer{Rcode: f[2]}
		for _, rr := range strings.Split(tail, ", ") {
			if _, v, ok := strings.Cut(strings.TrimSpace(rr), "="); ok {
				a.Values = append(a.Values, v)
			}
		}
		if f[1] == "SRV" {
			// priority weight port target: the test checks port and target.
			for i, v := range a.Values {
				if sf := strings.Fields(v); len(sf) == 4 {
					a.Values[i] = sf[2] + " " + sf[3]
				}
			}
		}
		slices.Sort(a.Values)
		m[strings.TrimSuffix(f[0], ".")+" "+f[1]] = a
	}
	return m
}

type want struct {
	qtype, name, rcode string
	values             []string
}

// askUntil runs probe pods in cluster asking every query of wants until
// all answer as wanted or the timeout passes, and returns how long it
// took.
func askUntil(t *testing.T, cluster string, wants []want, timeout time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	c := nl.Cluster(cluster)
	start := time.Now()
	for {
		var bad []string
		byType := map[string][]string{}
		for _, w := range wants {
			byType[w.qtype] = append(byType[w.qtype], w.name)
		}
		got := map[string]answer{}
		for qtype, names := range byType {
			out, err := nl.RunProbe(ctx, c, "probe-"+strings.ToLower(qtype), append([]string{"query", qtype}, names...)...)
			if err != nil {
				bad = append(bad, err.Error())
			}
			for k, v := range parseProbe(out) {
				got[k] = v
			}
		}
		for _, w := range wants {
			key := strings.TrimSuffix(w.name, ".") + " " + w.qtype
			if w.qtype == "PTR" {
				key = reverse(w.name) + " PTR"
			}
			want := slices.Clone(w.values)
			slices.Sort(want)
			a, ok := got[key]
			if !ok || a.Rcode != w.rcode || !slices.Equal(a.Values, want) {
				bad = append(bad, fmt.Sprintf("%s: got %+v, want %s %v", key, a, w.rcode, want))
			}
		}
		if len(bad) == 0 {
			took := time.Since(start)
			t.Logf("%s: every answer as wanted after %s", cluster, took.Round(100*time.Millisecond))
			for _, w := range wants {
				t.Logf("  %s %s: %s %v", w.qtype, w.name, w.rcode, w.values)
			}
			return took
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s:\n%s", cluster, timeout, strings.Join(bad, "\n"))
		}
		time.Sleep(2 * time.Second)
	}
}

// reverse is the in-addr.arpa name of an IPv4 address.
func reverse(ip string) string {
	p := strings.Split(ip, ".")
	slices.Reverse(p)
	return strings.Join(p, ".") + ".in-addr.arpa"
}

func TestNodeLab(t *testing.T) {
	a, b := nl.Cluster(lab.ClusterA), nl.Cluster(lab.ClusterB)
	gwA, gwB := a.GatewayAddress(), b.GatewayAddress()

	// The cluster DNS picks up the patched Corefile when the kubelet
	// refreshes the ConfigMap's volume and CoreDNS's reload plugin
	// notices: up to about two minutes after the install.
	t.Run("PodAsks", func(t *testing.T) {
		askUntil(t, lab.ClusterB, []want{
			{"A", lab.GatewayHost("kuard", lab.ClusterA), "NOERROR", []string{gwA}},
			{"A", "kuard." + lab.GatewayDNSName + "." + lab.ClusterNamespace + ".gateways." + lab.Zone, "NOERROR", []string{gwA, gwB}},
			{"PTR", gwA, "NOERROR", []string{"gateway." + lab.ClusterA + "." + lab.ClusterNamespace + ".clusters." + lab.Zone + "."}},
			{"A", lab.GatewayHost("kuard", "cluster-z"), "NXDOMAIN", nil},
			{"A", "kubernetes.default.svc.cluster.local", "NOERROR", []string{b.Net.KubernetesIP()}},
		}, 4*time.Minute)
	})

	// The other kinds of names, real pods behind them: a Service's own
	// name (fqdn annotation) and a headless Service's pods, by the name
	// across clusters, per pod and as SRV.
	t.Run("PodAsksServices", func(t *testing.T) {
		ctx := context.Background()
		if err := nl.SetupServices(ctx, a); err != nil {
			t.Fatal(err)
		}
		db0, err := a.PodIP(ctx, lab.HeadlessNamespace, "db-0")
		if err != nil {
			t.Fatal(err)
		}
		db1, err := a.PodIP(ctx, lab.HeadlessNamespace, "db-1")
		if err != nil {
			t.Fatal(err)
		}
		db := lab.HeadlessHost("db")
		askUntil(t, lab.ClusterB, []want{
			{"A", lab.NamesHost("web", lab.ClusterNamespace), "NOERROR", []string{a.Net.LBAddress(lab.NodeNamesAddressHost)}},
			{"A", db, "NOERROR", []string{db0, db1}},
			{"A", "db-0." + lab.ClusterA + "." + db, "NOERROR", []string{db0}},
			{"SRV", "_pg._tcp." + db, "NOERROR", []string{"5432 db-0." + lab.ClusterA + "." + db + ".", "5432 db-1." + lab.ClusterA + "." + db + "."}},
		}, 3*time.Minute)
		// Pod addresses are routed between the clusters: the exported
		// pod answers.
		out, err := nl.RunProbe(ctx, b, "probe-tcp", "tcp", db0+":5432")
		if err != nil || !strings.HasPrefix(out, "connected ") {
			t.Fatalf("probe tcp %s:5432: %s %v", db0, out, err)
		}
		t.Log(strings.TrimSpace(out))
	})

	// The name is useful: a TCP connection from cluster-b's pod to the
	// address DNS gave reaches cluster-a's envoy stand-in, across the
	// router, through cluster-a's kube-proxy.
	t.Run("PodConnects", func(t *testing.T) {
		out, err := nl.RunProbe(context.Background(), b, "probe-tcp", "tcp", gwA+":80")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "connected ") {
			t.Fatalf("probe tcp %s:80: %s", gwA, out)
		}
		t.Log(strings.TrimSpace(out))
	})
}
