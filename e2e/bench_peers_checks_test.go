package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

// peerCheck is one question and its right answer: the rcode and the
// answer's values (addresses; "port target" for SRV, whose priority and
// weight the specification leaves to the implementation).
type peerCheck struct {
	what  string
	name  string
	qtype uint16
	rcode int
	want  []string
}

// peersSpecServices are the specification's services: web, ClusterSetIP
// with port http/TCP 80, and db, headless with pods db-0 and db-1 on
// pg/TCP 5432.
func peersSpecServices() []lab.ExportedService {
	http := []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}
	pg := []corev1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432, TargetPort: intstr.FromInt32(5432)}}
	return []lab.ExportedService{
		{Namespace: peersNamespace, Name: "web", Ports: http, Pods: []lab.HeadlessPod{
			{Address: "198.19.250.1", Ready: true}, {Address: "198.19.250.2", Ready: true}}},
		{Namespace: peersNamespace, Name: "db", Headless: true, Ports: pg, Pods: []lab.HeadlessPod{
			{Name: "db-0", Address: "198.19.250.11", Ready: true}, {Name: "db-1", Address: "198.19.250.12", Ready: true}}},
	}
}

// specChecks are the names of the MCS DNS specification (KEP-1645's DNS
// section) for web and db, the names it says must not exist, and hostile
// names a client in any member can ask.
func (r *peersRun) specChecks() []peerCheck {
	imp, err := lab.GetImport(r.ctx, theLab.Workload(lab.ClusterB), peersNamespace, "web")
	if err != nil || imp == nil || len(imp.IPs) == 0 {
		r.t.Fatalf("the ServiceImport web in cluster-b: %+v, %v", imp, err)
	}
	web, db := lab.ClusterSetHost(peersNamespace, "web"), lab.ClusterSetHost(peersNamespace, "db")
	a := lab.ClusterA
	ok, nx := dns.RcodeSuccess, dns.RcodeNameError
	return []peerCheck{
		{"ClusterSetIP: A of the service", web, dns.TypeA, ok, imp.IPs},
		{"ClusterSetIP: AAAA of an IPv4 service is NODATA", web, dns.TypeAAAA, ok, nil},
		{"ClusterSetIP: SRV of a named port", "_http._tcp." + web, dns.TypeSRV, ok, []string{"80 " + web + "."}},
		{"ClusterSetIP: SRV of another protocol does not exist", "_http._udp." + web, dns.TypeSRV, nx, nil},
		{"ClusterSetIP: <clusterid>.<svc> does not exist", a + "." + web, dns.TypeA, nx, nil},
		{"Headless: A of the service, every ready pod", db, dns.TypeA, ok, []string{"198.19.250.11", "198.19.250.12"}},
		{"Headless: <hostname>.<clusterid>.<svc>", "db-0." + a + "." + db, dns.TypeA, ok, []string{"198.19.250.11"}},
		{"Headless: SRV, one per pod, target by hostname", "_pg._tcp." + db, dns.TypeSRV, ok,
			[]string{"5432 db-0." + a + "." + db + ".", "5432 db-1." + a + "." + db + "."}},
		{"Headless: a hostname that is not there", "db-9." + a + "." + db, dns.TypeA, nx, nil},
		{"a service not exported", lab.ClusterSetHost(peersNamespace, "nope"), dns.TypeA, nx, nil},
		{"a namespace with no imports", lab.ClusterSetHost("nope", "web"), dns.TypeA, nx, nil},
		{"dns-version TXT", "dns-version." + lab.ClusterSetZone, dns.TypeTXT, ok, []string{`"1.0.0"`}},
		{"hostile: upper case answers as lower", strings.ToUpper(web), dns.TypeA, ok, imp.IPs},
		{"hostile: wildcard * lists nothing", "*." + peersNamespace + ".svc." + lab.ClusterSetZone, dns.TypeA, nx, nil},
		{"hostile: label any lists nothing", "any." + peersNamespace + ".svc." + lab.ClusterSetZone, dns.TypeA, nx, nil},
		{"hostile: namespace any lists nothing", "web.any.svc." + lab.ClusterSetZone, dns.TypeA, nx, nil},
		{"hostile: a byte / in a label", `web\047x.` + peersNamespace + ".svc." + lab.ClusterSetZone, dns.TypeA, nx, nil},
		{"hostile: a name deeper than any", "x.y.db-0." + a + "." + db, dns.TypeA, nx, nil},
		{"hostile: SRV of the zone's apex side", "_pg._tcp." + a + "." + db, dns.TypeSRV, nx, nil},
		{"hostile: x.dns-version", "x.dns-version." + lab.ClusterSetZone, dns.TypeTXT, nx, nil},
		{"empty non-terminal svc. is NODATA (RFC 8020)", "svc." + lab.ClusterSetZone, dns.TypeA, ok, nil},
	}
}

// peerValues are the values a check compares.
func peerValues(m *dns.Msg, qtype uint16) []string {
	if qtype != dns.TypeSRV {
		return lab.Values(m, qtype)
	}
	var out []string
	for _, rr := range m.Answer {
		if srv, ok := rr.(*dns.SRV); ok {
			out = append(out, fmt.Sprintf("%d %s", srv.Port, strings.ToLower(srv.Target)))
		}
	}
	slices.Sort(out)
	return out
}

// judge asks c of addr: right, and what it answered.
func judge(addr string, c peerCheck) (bool, string) {
	m, err := lab.Query(addr, c.name, c.qtype)
	if err != nil {
		return false, "no answer (timeout)"
	}
	got := peerValues(m, c.qtype)
	want := slices.Clone(c.want)
	slices.Sort(want)
	right := m.Rcode == c.rcode && slices.Equal(got, want)
	return right, fmt.Sprintf("%s %s", dns.RcodeToString[m.Rcode], strings.Join(got, ", "))
}

// correctness adds a row of how many checks each server answers right;
// with detailed, a line per check besides, with the wrong answers.
func (r *peersRun) correctness(what string, xcc, stock peerServer, detailed bool) {
	var nx, ns int
	var lines []string
	for _, c := range r.checks {
		okX, gotX := judge(xcc.addr, c)
		okS, gotS := judge(stock.addr, c)
		nx, ns = nx+btoi(okX), ns+btoi(okS)
		if detailed || !okX || !okS {
			lines = append(lines, fmt.Sprintf("  %-52s %-5s %-5s %s %s%s%s", c.what, mark(okX), mark(okS),
				c.name, dns.TypeToString[c.qtype], wrongNote("xcc-dns", okX, gotX), wrongNote("stock", okS, gotS)))
		}
	}
	r.row(what, fmt.Sprintf("%d / %d", nx, len(r.checks)), fmt.Sprintf("%d / %d", ns, len(r.checks)))
	if len(lines) > 0 {
		r.detail = append(r.detail, fmt.Sprintf("%s (xcc-dns, stock):", what))
		r.detail = append(r.detail, lines...)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mark(ok bool) string {
	if ok {
		return "right"
	}
	return "WRONG"
}

func wrongNote(who string, ok bool, got string) string {
	if ok {
		return ""
	}
	return fmt.Sprintf(" [%s: %s]", who, got)
}

// peersLatencyAddresses picks the timed exports' addresses in
// 198.19.255.0/24, apart from the fill's and the specification's.
const peersLatencyAddresses = (255 - 200) * 120

func latencyName(i int) string { return fmt.Sprintf("lat-%02d", i) }

// latency exports one Service at a time from cluster-a and times, for
// each server without cache, the export until it answers the name.
func (r *peersRun) latency() {
	t, ctx := r.t, r.ctx
	for i := range peersLatencyRounds {
		if err := r.aC.createService(ctx, benchService(peersNamespace, latencyName(i), false, peersLatencyAddresses+i)); err != nil {
			t.Fatal(err)
		}
	}
	servers := []peerServer{r.xccU, r.stockU}
	times := make([][]time.Duration, len(servers))
	missed := make([]int, len(servers))
	for i := range peersLatencyRounds {
		host := lab.ClusterSetHost(peersNamespace, latencyName(i))
		began := time.Now()
		if err := r.aC.export(ctx, peersNamespace, latencyName(i)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for j, s := range servers {
			wg.Go(func() {
				if _, err := pollAnswer(s.addr, host, began, mcsChangeTimeout); err != nil {
					missed[j]++
					return
				}
				times[j] = append(times[j], time.Since(began))
			})
		}
		wg.Wait()
	}
	cell := func(j int) string {
		s := fmt.Sprintf("p50 %s, p99 %s", ms(percentile(times[j], 50)), ms(percentile(times[j], 99)))
		if missed[j] > 0 {
			s += fmt.Sprintf(", %d of %d not answered in %s", missed[j], peersLatencyRounds, mcsChangeTimeout)
		}
		return s
	}
	r.row(fmt.Sprintf("export in cluster-a to answer, no cache (%d exports)", peersLatencyRounds), cell(0), cell(1))
}

// pollAnswer asks addr for name every peersPoll until an A answer comes.
func pollAnswer(addr, name string, began time.Time, within time.Duration) (time.Duration, error) {
	for time.Since(began) < within {
		m, err := lab.Query(addr, name, dns.TypeA)
		if err == nil && m.Rcode == dns.RcodeSuccess && len(lab.Values(m, dns.TypeA)) > 0 {
			return time.Since(began), nil
		}
		time.Sleep(peersPoll)
	}
	return 0, fmt.Errorf("%s not answered by %s in %s", name, addr, within)
}
