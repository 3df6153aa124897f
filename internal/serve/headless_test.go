package serve

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

const headlessX = "db.dev-team.services.xcc.test"

// headlessSlices are the slices the controller writes for GatewayDNS
// dev-team/db exporting a headless Service of cluster with port pg/TCP
// 5432; pods are "<hostname>=<address>" or "<address>".
func headlessSlices(cluster string, loc contract.Locality, healthy bool, pods ...string) []*discoveryv1.EndpointSlice {
	g := contract.HeadlessGroup{Ports: []contract.Port{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}}
	for _, p := range pods {
		addr, host := p, ""
		if h, a, ok := strings.Cut(p, "="); ok {
			addr, host = a, h
		}
		e := contract.Endpoint{Address: addr, Hostname: host}
		if strings.Contains(addr, ":") {
			g.IPv6 = append(g.IPv6, e)
		} else {
			g.IPv4 = append(g.IPv4, e)
		}
	}
	out := contract.BuildHeadless(contract.Source{Namespace: "dev-team", GatewayDNS: "db", Cluster: cluster, Kind: contract.KindHeadless,
		Hostname: contract.HeadlessHostname("db", "dev-team", "xcc.test"), Locality: loc, Unhealthy: !healthy},
		contract.HeadlessEndpoints{Groups: []contract.HeadlessGroup{g}})
	for _, s := range out {
		s.Namespace = DefaultNamespace
	}
	return out
}

// srv reads the SRV answer of name from etcd (srvAnswer) as
// "target:port", sorted.
func (r *running) srv(t *testing.T, name string) []string {
	t.Helper()
	got, _ := r.srvWithAddresses(t, name)
	return got
}

// srvWithAddresses is srv with each target's addresses, as the additional
// section holds them.
func (r *running) srvWithAddresses(t *testing.T, name string) ([]string, map[string][]string) {
	t.Helper()
	resp, err := r.etcd.Get(context.Background(), skydnsrecord.Key(name)+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	records := skydnsrecord.Set{}
	for _, kv := range resp.Kvs {
		rec, err := skydnsrecord.Unmarshal(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		records[string(kv.Key)] = rec
	}
	return srvAnswer(t, name, records)
}

// srvAnswer is the SRV answer of the name srv that the DNS server makes of
// records, the records below it, as "target:port" sorted, and each
// target's addresses: as the etcd plugin reads them (in key order; a
// record whose host is an address is a target named after its key less
// targetstrip labels, with that address; the first record of a target
// and port makes its SRV record) and as the guard names the stored
// targets back (<t>.<srv> is <t>.<x>, x being srv without its leading
// '_' labels). Every SRV record must have the plugin's default priority,
// so that all share one set of weights.
func srvAnswer(t *testing.T, srv string, records skydnsrecord.Set) ([]string, map[string][]string) {
	t.Helper()
	x := srv
	for strings.HasPrefix(x, "_") {
		_, x, _ = strings.Cut(x, ".")
	}
	seen := map[string]bool{}
	var out []string
	addrs := map[string][]string{}
	for _, key := range slices.Sorted(maps.Keys(records)) {
		rec := records[key]
		target := rec.Host
		ip := net.ParseIP(rec.Host)
		if ip != nil {
			name, err := skydnsrecord.Name(key)
			if err != nil {
				t.Fatal(err)
			}
			labels := strings.Split(name, ".")
			target = strings.Join(labels[min(rec.TargetStrip, len(labels)):], ".")
			if below, ok := strings.CutSuffix(target, "."+srv); ok {
				target = below + "." + x
			}
		}
		srvRecord := fmt.Sprintf("%s:%d", target, rec.Port)
		if !seen[srvRecord] {
			seen[srvRecord] = true
			out = append(out, srvRecord)
			if rec.Priority != 0 {
				t.Errorf("SRV %s: record %s has priority %d", srv, srvRecord, rec.Priority)
			}
		}
		if ip != nil && !slices.Contains(addrs[target], rec.Host) {
			addrs[target] = append(addrs[target], rec.Host)
		}
	}
	slices.Sort(out)
	return out, addrs
}

func (r *running) get(t *testing.T, prefix string) []skydnsrecord.Record {
	t.Helper()
	resp, err := r.etcd.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []skydnsrecord.Record
	for _, kv := range resp.Kvs {
		rec, err := skydnsrecord.Unmarshal(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

// The names of an exported headless Service in two clusters, each told by
// its self marker which it is: the name across clusters answers the
// asking cluster's own pods (policy Local) and its SRV records point at
// their names; per-cluster and per-pod names answer alike everywhere.
func TestHeadlessNames(t *testing.T) {
	local := contract.Locality{Policy: contract.PolicyLocal}
	world := func(aHealthy bool) []*discoveryv1.EndpointSlice {
		return slices.Concat(
			headlessSlices("cluster-a", local, aHealthy, "postgres-0=10.1.0.5", "postgres-1=10.1.0.6", "postgres-0=fd00:1::5"),
			headlessSlices("cluster-b", local, true, "postgres-0=10.2.0.5", "10.2.0.9"))
	}
	inA := runSyncer(t, append(world(true), selfMarker("cluster-a"))...)
	inB := runSyncer(t, append(world(true), selfMarker("cluster-b"))...)
	all := contract.HeadlessAllName(headlessX)
	srvName := "_pg._tcp." + headlessX
	inA.expect(t, "cluster-a's DNS", all, "10.1.0.5", "10.1.0.6", "fd00:1::5")
	inB.expect(t, "cluster-b's DNS", all, "10.2.0.5", "10.2.0.9")
	got, addrs := inA.srvWithAddresses(t, srvName)
	if want := []string{
		"postgres-0.cluster-a." + headlessX + ":5432", "postgres-1.cluster-a." + headlessX + ":5432",
	}; !slices.Equal(got, want) {
		t.Errorf("SRV in cluster-a: %q, want %q", got, want)
	}
	// A dual-stack pod's target has both addresses, one SRV record.
	if got, want := addrs["postgres-0.cluster-a."+headlessX], []string{"10.1.0.5", "fd00:1::5"}; !slices.Equal(got, want) {
		t.Errorf("SRV in cluster-a: addresses of postgres-0 %q, want %q", got, want)
	}
	if got, want := inB.srv(t, srvName), []string{
		"10-2-0-9.cluster-b." + headlessX + ":5432", "postgres-0.cluster-b." + headlessX + ":5432",
	}; !slices.Equal(got, want) {
		t.Errorf("SRV in cluster-b: %q, want %q", got, want)
	}
	for _, r := range []*running{inA, inB} {
		r.expect(t, "pod", "postgres-0.cluster-a."+headlessX, "10.1.0.5", "fd00:1::5")
		r.expect(t, "pod without hostname", "10-2-0-9.cluster-b."+headlessX, "10.2.0.9")
	}

	// cluster-a unhealthy: its DNS answers cluster-b's pods, SRV too; its
	// own names still answer its pods.
	inA.put(t, world(false)...)
	inA.expect(t, "cluster-a unhealthy", all, "10.2.0.5", "10.2.0.9")
	if got := inA.srv(t, srvName); len(got) != 2 || !strings.Contains(got[0], "cluster-b") {
		t.Errorf("SRV with cluster-a unhealthy: %q", got)
	}
	inA.expect(t, "cluster-a's pod, cluster-a unhealthy", "postgres-1.cluster-a."+headlessX, "10.1.0.6")

	// A pod gone from the slice leaves every name.
	inA.put(t, slices.Concat(
		headlessSlices("cluster-a", local, true, "postgres-0=10.1.0.5", "postgres-0=fd00:1::5"),
		headlessSlices("cluster-b", local, true, "postgres-0=10.2.0.5", "10.2.0.9"))...)
	inA.expect(t, "postgres-1 gone", all, "10.1.0.5", "fd00:1::5")
	inA.expect(t, "postgres-1 gone", "postgres-1.cluster-a."+headlessX)
	if got := inA.srv(t, srvName); len(got) != 1 {
		t.Errorf("SRV after postgres-1 left: %q", got)
	}
	// Every slice gone: nothing of the name is left.
	inA.del(t, slices.Concat(
		headlessSlices("cluster-a", local, true, "postgres-0=10.1.0.5", "postgres-0=fd00:1::5"),
		headlessSlices("cluster-b", local, true, "postgres-0=10.2.0.5", "10.2.0.9"))...)
	inA.expect(t, "every slice deleted", headlessX)
}

// Pod addresses claim no PTR, even inside the reverse CIDRs: a pod's own
// name and its cluster's name both hold the address.
func TestHeadlessClaimsNoPTR(t *testing.T) {
	r := runSyncer(t, headlessSlices("cluster-a", contract.Locality{Policy: contract.PolicyAll}, true, "postgres-0=192.0.2.50")...)
	r.expect(t, "pod", "postgres-0.cluster-a."+headlessX, "192.0.2.50")
	resp, err := r.etcd.Get(context.Background(), "/skydns/arpa/in-addr/192/0/2/50")
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("PTR of a pod address: %v %v", resp.Kvs, err)
	}
}

// With 1,000 pods in each of two clusters, the name across clusters holds
// contract.MaxRecordsPerName addresses and its SRV name what fits in one
// DNS message with the targets' addresses; a cut keeps every picked
// source (policy All: half each), the asking cluster's own only under
// Local, and does not depend on the order the slices are read in. It is
// long for its table and for packing the SRV answer as the DNS server does.
func TestHeadlessRecordsPerName(t *testing.T) {
	srvName := "_pg._tcp." + headlessX
	for _, tc := range []struct {
		name    string
		loc     contract.Locality
		self    []string
		healthy [2]bool
		// want are the sources of the kept records.
		want []string
	}{
		{"all", contract.Locality{Policy: contract.PolicyAll}, []string{"cluster-1"}, [2]bool{true, true}, []string{"cluster-0", "cluster-1"}},
		{"local", contract.Locality{Policy: contract.PolicyLocal}, []string{"cluster-1"}, [2]bool{true, true}, []string{"cluster-1"}},
		{"local, own unhealthy", contract.Locality{Policy: contract.PolicyLocal}, []string{"cluster-1"}, [2]bool{true, false}, []string{"cluster-0"}},
		{"failover", contract.Locality{Policy: contract.PolicyFailover, Order: []string{"cluster-1", "cluster-0"}}, nil, [2]bool{true, true}, []string{"cluster-1"}},
		{"none healthy", contract.Locality{Policy: contract.PolicyAll}, nil, [2]bool{false, false}, []string{"cluster-0", "cluster-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parsed []contract.Parsed
			for c := range 2 {
				var pods []string
				for i := range contract.MaxAddressesPerSlice {
					pods = append(pods, fmt.Sprintf("db-%d=10.%d.%d.%d", i, c, i/250, i%250+1))
				}
				for _, s := range headlessSlices(fmt.Sprintf("cluster-%d", c), tc.loc, tc.healthy[c], pods...) {
					p, ok, problems := contract.Parse(s, "xcc.test")
					if !ok || len(problems) > 0 {
						t.Fatal(problems)
					}
					parsed = append(parsed, p)
				}
			}
			records, _, _ := MultiRecords(headlessX, parsed, tc.self)
			reversed := slices.Clone(parsed)
			slices.Reverse(reversed)
			again, _, _ := MultiRecords(headlessX, reversed, tc.self)
			if !slices.Equal(slices.Sorted(maps.Keys(records)), slices.Sorted(maps.Keys(again))) {
				t.Error("the records depend on the order of the slices")
			}

			addrs := map[string]int{}
			srvs := map[string]int{}
			below := skydnsrecord.Set{}
			for k, r := range records {
				switch {
				case skydnsrecord.ParentKey(k) == skydnsrecord.Key(contract.HeadlessAllName(headlessX)):
					addrs["cluster-"+strings.Split(r.Host, ".")[1]]++
				case strings.HasPrefix(k, skydnsrecord.Key(srvName)+"/"):
					below[k] = r
				default:
					t.Errorf("record %s", k)
				}
			}
			srvRecords, targetAddrs := srvAnswer(t, srvName, below)
			for _, r := range srvRecords {
				srvs[strings.Split(r, ".")[1]]++
			}
			perSource := func(counts map[string]int, total int) {
				t.Helper()
				if got := slices.Sorted(maps.Keys(counts)); !slices.Equal(got, tc.want) {
					t.Errorf("sources %v (%v), want %v", got, counts, tc.want)
				}
				sum := 0
				for _, n := range counts {
					sum += n
					if n < total/len(tc.want) {
						t.Errorf("a source has %d of %d records: %v", n, total, counts)
					}
				}
				if sum != total {
					t.Errorf("%d records, want %d", sum, total)
				}
			}
			perSource(addrs, contract.MaxRecordsPerName)
			perSource(srvs, len(srvRecords))
			if len(srvRecords) < 500 || len(srvRecords) >= contract.MaxRecordsPerName {
				t.Errorf("%d SRV records: want the cut to keep most of what fits, not all 1,000", len(srvRecords))
			}

			// The answer as CoreDNS makes it: the SRV records, each
			// target's address in the additional section, cut to one
			// message over TCP.
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(srvName), dns.TypeSRV)
			m.Response = true
			m.SetEdns0(4096, false)
			addrOf := map[string]string{}
			for _, p := range parsed {
				for _, pod := range p.Pods {
					addrOf[contract.HeadlessPodName(headlessX, p.Source, pod.Label)] = pod.Host
				}
			}
			for _, r := range srvRecords {
				name, portText, _ := strings.Cut(r, ":")
				port, err := strconv.Atoi(portText)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := targetAddrs[name], []string{addrOf[name]}; !slices.Equal(got, want) {
					t.Errorf("SRV target %s: addresses %q, want %q", name, got, want)
				}
				target := dns.Fqdn(name)
				m.Answer = append(m.Answer, &dns.SRV{Hdr: dns.RR_Header{Name: dns.Fqdn(srvName), Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: 5},
					Priority: 10, Weight: 10, Port: uint16(port), Target: target})
				m.Extra = append(m.Extra, &dns.A{Hdr: dns.RR_Header{Name: target, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5},
					A: net.ParseIP(addrOf[name])})
			}
			m.Truncate(dns.MaxMsgSize)
			packed, err := m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d SRV records, %d bytes", len(srvRecords), len(packed))
			if m.Truncated || len(m.Answer) != len(srvRecords) || len(m.Extra) != len(srvRecords)+1 || len(packed) > contract.MaxMessageSize {
				t.Errorf("SRV answer of %d records: %d bytes, truncated %v, %d answers, %d additional", len(srvRecords), len(packed), m.Truncated, len(m.Answer), len(m.Extra))
			}
		})
	}
}

// When no source is healthy every published pod answers, SRV too, but an
// endpoint marked terminating never does: health falls back, readiness
// of a pod does not.
func TestHeadlessFallbackNeverTerminating(t *testing.T) {
	all := contract.Locality{Policy: contract.PolicyAll}
	a := headlessSlices("cluster-a", all, false, "postgres-0=10.1.0.5", "postgres-1=10.1.0.6")[0]
	a.Endpoints[1].Conditions.Terminating = ptr.To(true)
	b := headlessSlices("cluster-b", all, false, "postgres-0=10.2.0.5")[0]
	var parsed []contract.Parsed
	for _, s := range []*discoveryv1.EndpointSlice{a, b} {
		p, ok, _ := contract.Parse(s, "xcc.test")
		if !ok {
			t.Fatal("refused")
		}
		parsed = append(parsed, p)
	}
	records, answer, _ := MultiRecords(headlessX, parsed, nil)
	var got []string
	srvName := "_pg._tcp." + headlessX
	below := skydnsrecord.Set{}
	for k, r := range records {
		if strings.HasPrefix(k, skydnsrecord.Key(srvName)+"/") {
			below[k] = r
			continue
		}
		got = append(got, fmt.Sprintf("%s:%d", r.Host, r.Port))
	}
	srv, _ := srvAnswer(t, srvName, below)
	got = append(got, srv...)
	slices.Sort(got)
	want := []string{"10.1.0.5:-1", "10.2.0.5:-1",
		"postgres-0.cluster-a." + headlessX + ":5432", "postgres-0.cluster-b." + headlessX + ":5432"}
	if !answer.Fallback || !slices.Equal(got, want) {
		t.Errorf("records %q (fallback %v), want %q", got, answer.Fallback, want)
	}
}

// Two owners leaving one name at once leave no name record behind. The
// first sync reads the leaves while the second owner's is still there and
// is held before it writes; the second owner then leaves. Without the lock
// over read and write, the second sync deletes the record and the first
// writes it back afterwards, stale until the next full reconcile.
func TestNameRecordOwnersLeavingAtOnce(t *testing.T) {
	r := runSyncer(t)
	ctx := context.Background()
	dir := skydnsrecord.Key("postgres-0.cluster-a." + headlessX)
	for owner, host := range map[string]string{"xcc-dns/v4": "10.1.0.5", "xcc-dns/v6": "fd00:1::5"} {
		leaf := skydnsrecord.Set{dir + "/" + owner[len("xcc-dns/"):]: {Host: host, Owner: owner}}
		if _, err := r.s.store.SyncOwner(ctx, owner, leaf); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.s.syncNameRecord(ctx, dir); err != nil {
		t.Fatal(err)
	}
	read, secondDone := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	r.s.beforeNameWrite = func() {
		if first.Swap(true) {
			return
		}
		close(read)
		select { // with the lock the second sync waits for this one
		case <-secondDone:
		case <-time.After(500 * time.Millisecond):
		}
	}
	leave := func(owner string) {
		if _, err := r.s.store.SyncOwner(ctx, owner, nil); err != nil {
			t.Error(err)
		}
		if err := r.s.syncNameRecord(ctx, dir); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { leave("xcc-dns/v4") })
	<-read
	wg.Go(func() { defer close(secondDone); leave("xcc-dns/v6") })
	wg.Wait()
	if resp, err := r.etcd.Get(ctx, dir, clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("both owners gone, left %v (%v)", resp.Kvs, err)
	}
}
