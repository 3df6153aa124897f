package explain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
	"github.com/xcc-dns/xcc-dns/internal/overview"
	"github.com/xcc-dns/xcc-dns/internal/printable"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// WorkloadNamespace is the workload chart's namespace, where serve and
// its etcd run: the port-forward of the etcdctl command.
const WorkloadNamespace = "xcc-dns"

// DefaultService is the workload chart's Service (release xcc-dns in
// WorkloadNamespace): what cluster DNS forwards the zones to.
const DefaultService = WorkloadNamespace + "/xcc-dns"

// etcdClientURL is where the port-forward puts serve's etcd.
const etcdClientURL = "http://127.0.0.1:2379"

// Publishes reports whether a slice's hostname annotation makes name: its
// stored name, or a name below it (the names below a wildcard, and the
// cluster, pod and SRV names of a headless or clusterset name).
func Publishes(hostname, name string) bool {
	stored, _ := skydnsrecord.StoredName(hostname)
	return stored != "" && (name == stored || skydnsrecord.IsSubdomain(name, stored))
}

// Etcdctl is the command that prints the records under key in a workload
// cluster's serve etcd, after the port-forward of EtcdPortForward.
func Etcdctl(key string) string {
	return "etcdctl --endpoints " + etcdClientURL + " get --prefix " + key
}

// EtcdPortForward reaches serve's etcd, which listens on 127.0.0.1 in
// its pod.
const EtcdPortForward = "kubectl -n " + WorkloadNamespace + " port-forward statefulset/xcc-dns 2379:2379 &"

// WriteText prints r for an operator: the name, the reason line, the
// publishers behind with the entries the name depends on, and where its
// records live; now dates "since". Every string of r is printed
// printable.Clean, every line cut to printable.MaxBytes.
func (r Report) WriteText(w io.Writer, now time.Time) error {
	r = printable.Clean(r)
	p := &printer{w: w}
	p.line("name:    %s", r.Name.Name+typeSuffix(r.Type))
	if r.Kind != "" {
		p.line("shape:   %s, %s", r.Kind, r.Shape)
	}
	if o := r.Owner.String(); o != "" {
		p.line("owner:   %s", o)
	}
	p.line("answer:  %s", r.Answer)
	p.line("reason:  %s: %s", r.Reason, r.Why)
	for _, pub := range r.Publishers {
		ready := "Ready"
		if !pub.Ready {
			ready = "not Ready"
		}
		if pub.NotObserved {
			ready += ", its last change not yet observed"
		}
		p.line("%s %s: %s, %s", pub.Kind, pub.Name, ready, pub.Reason)
		if pub.Message != "" && !pub.Ready {
			p.line("  %s", overview.Cut(pub.Message))
		}
		for _, e := range pub.Entries {
			p.line("  %s: %s", e.What, e.state(now))
			if e.Message != "" {
				p.line("    %s", overview.Cut(e.Message))
			}
		}
		for _, t := range pub.Targets {
			p.line("  target %s lacks the latest records: %s%s", t.Name, t.Reason, overview.Since(t.Since, now))
			if t.Message != "" {
				p.line("    %s", overview.Cut(t.Message))
			}
		}
	}
	if r.From != "" {
		p.line("slices in %s: %d", r.From, len(r.Slices))
		for _, s := range r.Slices {
			src := ""
			if s.Source != "" {
				src = " from " + s.Source
			}
			p.line("  %s%s: %s %s", s.Name, src, s.Hostname, strings.Join(s.Addresses, ", "))
		}
	}
	if fw := r.Forward; fw != nil {
		p.line("cluster DNS of %s (%s): %s", r.From, fw.ConfigMap, fw.words())
	}
	for _, a := range r.Answers {
		p.line("%s answers now: %s", answerLabel(a), a.Words())
	}
	if r.Keep != nil {
		p.line("ttl:     %s", r.Keep.words(r.Forward))
	}
	if rl := r.Reload; rl != nil {
		if rl.HashUnknown != "" {
			p.line("reload:  the hash of ConfigMap %s's Corefile is unknown: %s", rl.ConfigMap, rl.HashUnknown)
		}
		for _, pod := range rl.Pods {
			p.line("cluster DNS pod %s: %s: %s", pod.Pod, pod.State, pod.Why)
		}
		if rl.MorePods {
			p.line("cluster DNS pods: more than were read")
		}
	}
	if r.Key != "" {
		p.line("records: etcd key %s in the serve etcd of each workload cluster:", r.Key)
		p.line("  %s", EtcdPortForward)
		p.line("  %s", Etcdctl(r.Key))
	}
	if r.Reason != ReasonUnread {
		// Else the reason line has said it.
		for _, u := range r.Unread {
			p.line("unread:  %s", u)
		}
	}
	return p.err
}

// words says what the cluster DNS does with the zone.
func (fw Forward) words() string {
	if !fw.Found {
		return "no server block for " + fw.Zone
	}
	if fw.Kubernetes {
		return fmt.Sprintf("answers %s itself from the ServiceImports there, with its kubernetes plugin's multicluster option (block %s; the workload chart's mcs.dnsServer=coredns)", fw.Zone, fw.Key)
	}
	whose := "patch-corefile's"
	if !fw.Managed {
		whose = "not patch-corefile's"
	}
	if len(fw.ForwardTo) == 0 {
		return fmt.Sprintf("answers %s itself, forwarding it nowhere (block %s, %s)", fw.Zone, fw.Key, whose)
	}
	out := fmt.Sprintf("forwards %s to %s (block %s, %s)", fw.Zone, strings.Join(fw.ForwardTo, " "), fw.Key, whose)
	switch {
	case len(fw.ServiceAddresses) == 0:
		return out
	case len(fw.Elsewhere()) == 0:
		return out + ": the xcc-dns Service " + fw.Service
	}
	return fmt.Sprintf("%s: not the xcc-dns Service %s (%s)", out, fw.Service, strings.Join(fw.ServiceAddresses, ", "))
}

func typeSuffix(t string) string {
	if t == "" {
		return ""
	}
	return " " + t
}

// String is the owner in words: "namespace dev-team, cluster cluster-a".
func (o Owner) String() string {
	var parts []string
	add := func(what, v string) {
		if v != "" {
			parts = append(parts, what+" "+v)
		}
	}
	add("namespace", o.Namespace)
	add("cluster", o.Cluster)
	add("GatewayDNS", o.GatewayDNS)
	add("pod", o.Pod)
	add("ServiceImport", o.ServiceImport)
	add("cluster id", o.ClusterID)
	add("hostname", o.Hostname)
	return strings.Join(parts, ", ")
}

// state is an entry on one line: reason, health, since, addresses.
func (e Entry) state(now time.Time) string {
	parts := []string{e.Reason}
	if e.Healthy != nil {
		if *e.Healthy {
			parts = append(parts, "healthy")
		} else {
			parts = append(parts, "not healthy")
		}
	}
	if e.Answered != nil && *e.Answered {
		parts = append(parts, "answered")
	}
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	}
	s := strings.Join(parts, ", ") + overview.Since(e.Since, now)
	if len(e.Addresses) > 0 {
		s += "; addresses " + strings.Join(e.Addresses, ", ")
	}
	if len(e.APIAddresses) > 0 {
		s += "; api " + strings.Join(e.APIAddresses, ", ")
	}
	return s
}

// printer writes lines until the first error, each printable.Line: a
// line of several strings of a report is cut as one of them is.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, printable.Line(fmt.Sprintf(format, args...)))
	}
}

// answerLabel names the server of a live answer: "xcc-dns", "cluster
// DNS", or "DNS <address>" of --dns.
func answerLabel(a dnsanswer.Answer) string {
	if a.Server == ServerXccDNS || a.Server == ServerClusterDNS {
		return a.Server
	}
	return "DNS " + a.Address
}
