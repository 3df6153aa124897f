package explain

import (
	"fmt"
	"strings"
	"time"

	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
)

// Reasons of what the asking cluster's DNS does now.
const (
	// ReasonNotReloaded: a cluster DNS pod still runs a Corefile older
	// than its ConfigMap's.
	ReasonNotReloaded = "NotReloaded"
	// ReasonClusterDNSDiffers: xcc-dns answers records, the cluster DNS
	// something else.
	ReasonClusterDNSDiffers = "ClusterDNSDiffers"
)

// Servers of the live answers.
const (
	ServerXccDNS     = "xcc-dns"
	ServerClusterDNS = "cluster DNS"
)

// Reload states of a cluster DNS pod.
const (
	ReloadRunning = "running the ConfigMap's Corefile"
	ReloadOlder   = "still running an older one"
	ReloadUnknown = "unknown"
)

// NotReloadedWithin is how late a pod may still run the older Corefile
// with nothing wrong: the kubelet updates a ConfigMap volume within
// about a minute, and the reload plugin looks every 30 s (±7.5 s).
const NotReloadedWithin = 100 * time.Second

// Reload says whether the cluster DNS pods run the Corefile of the
// ConfigMap: their reload plugin's hash against the ConfigMap's.
type Reload struct {
	ConfigMap string `json:"configMap"`
	// Hash is the ConfigMap's Corefile's reload hash; HashUnknown why
	// there is none.
	Hash        string `json:"hash,omitempty"`
	HashUnknown string `json:"hashUnknown,omitempty"`
	// Changed is when the ConfigMap was last written (its managed
	// fields' latest time), zero when unknown.
	Changed time.Time   `json:"changed,omitzero"`
	Pods    []PodReload `json:"pods,omitempty"`
	// MorePods: more pods than were read.
	MorePods bool `json:"morePods,omitempty"`
}

// PodReload is one cluster DNS pod's state.
type PodReload struct {
	Pod   string `json:"pod"`
	State string `json:"state"`
	Why   string `json:"why"`
	// FailedReloads is coredns_reload_failed_total.
	FailedReloads float64 `json:"failedReloads,omitempty"`
}

// PodEvidence is what was read of one cluster DNS pod.
type PodEvidence struct {
	Pod string
	// Started is when its CoreDNS container started; zero when unknown.
	Started time.Time
	// Hashes are its coredns_reload_version_info values; Failed its
	// failed reloads; Unread why its metrics could not be read.
	Hashes []string
	Failed float64
	Unread string
}

// Judge says whether a pod runs the Corefile of hash (empty: unknown,
// for hashUnknown), the ConfigMap last written at changed, at now. The
// reload plugin exports a hash only once the pod has reloaded; a pod
// without one runs what it started with.
func Judge(e PodEvidence, hash, hashUnknown string, changed, now time.Time) PodReload {
	p := PodReload{Pod: e.Pod, FailedReloads: e.Failed}
	switch {
	case e.Unread != "":
		p.State, p.Why = ReloadUnknown, "metrics unread: "+e.Unread
	case len(e.Hashes) > 0 && hash == "":
		p.State, p.Why = ReloadUnknown, "the ConfigMap's hash cannot be computed: "+hashUnknown
	case len(e.Hashes) > 0 && contains(e.Hashes, hash):
		p.State, p.Why = ReloadRunning, "its reload plugin reports the hash of the ConfigMap's Corefile"
	case len(e.Hashes) > 0:
		p.State, p.Why = ReloadOlder, "its reload plugin reports another Corefile's hash ("+short(e.Hashes[0])+", the ConfigMap's "+short(hash)+")"
	case e.Started.IsZero() || changed.IsZero():
		p.State, p.Why = ReloadUnknown, "no reload hash (not reloaded since it started, or no reload plugin) and no start or change time to compare"
	case e.Started.After(changed):
		p.State, p.Why = ReloadRunning, fmt.Sprintf("started %s, after the ConfigMap's last change %s, and not reloaded since", e.Started.UTC().Format(time.RFC3339), changed.UTC().Format(time.RFC3339))
	default:
		p.State, p.Why = ReloadOlder, fmt.Sprintf("started %s, before the ConfigMap's last change %s (%s ago), and has not reloaded since (no reload hash)",
			e.Started.UTC().Format(time.RFC3339), changed.UTC().Format(time.RFC3339), now.Sub(changed).Truncate(time.Second))
	}
	if e.Failed > 0 {
		p.Why += fmt.Sprintf("; %g reload(s) failed: the plugin reports the hash of a Corefile it tried even when loading it failed (the pod's log says why)", e.Failed)
		if p.State == ReloadRunning {
			p.State = ReloadUnknown
		}
	}
	return p
}

func contains(hashes []string, h string) bool {
	for _, x := range hashes {
		if x == h {
			return true
		}
	}
	return false
}

// short is a hash's first 12 digits.
func short(h string) string { return h[:min(len(h), 12)] }

// Keep is how long answers of the name may be kept on the way to a pod:
// the TTLs xcc-dns gives, and what the cluster DNS block's cache makes
// of them.
type Keep struct {
	// TTL and NegativeTTL are of xcc-dns's live answer (the record TTL,
	// as its own cache counts it down; the negative TTL of an NXDOMAIN
	// or NODATA); nil when not read.
	TTL         *uint32 `json:"ttl,omitempty"`
	NegativeTTL *uint32 `json:"negativeTTL,omitempty"`
	// Positive and Negative are the longest time, in seconds, a pod may
	// keep an answer with records and an NXDOMAIN or NODATA: the cluster
	// DNS cache keeps one that long and gives it with the rest of its
	// TTL. Nil when neither TTL nor cache is known.
	Positive *uint32 `json:"positive,omitempty"`
	Negative *uint32 `json:"negative,omitempty"`
	// ServeStale is the cache's serve_stale: an expired answer may be
	// given that much longer while xcc-dns does not answer.
	ServeStale string `json:"serveStale,omitempty"`
}

// keep works out Keep from xcc-dns's live answer and the block's cache.
func keep(answers []dnsanswer.Answer, fw *Forward) *Keep {
	var k Keep
	for _, a := range answers {
		if a.Server == ServerXccDNS && a.Error == "" {
			k.TTL, k.NegativeTTL = a.TTL, a.NegativeTTL
		}
	}
	if fw != nil && fw.Cache != nil {
		c := fw.Cache
		pos, neg := c.Success, c.Denial
		if k.TTL != nil {
			pos = c.Keep(*k.TTL, false)
		}
		if k.NegativeTTL != nil {
			neg = c.Keep(*k.NegativeTTL, true)
		}
		k.Positive, k.Negative, k.ServeStale = &pos, &neg, c.ServeStale
	} else if fw != nil && fw.Found {
		k.Positive, k.Negative = k.TTL, k.NegativeTTL
	}
	if k == (Keep{}) {
		return nil
	}
	return &k
}

// words is Keep on one line.
func (k Keep) words(fw *Forward) string {
	var parts []string
	if k.TTL != nil {
		parts = append(parts, fmt.Sprintf("record TTL %d s", *k.TTL))
	}
	if k.NegativeTTL != nil {
		parts = append(parts, fmt.Sprintf("negative TTL %d s", *k.NegativeTTL))
	}
	if fw != nil && fw.Cache != nil {
		c := fw.Cache
		parts = append(parts, fmt.Sprintf("the cluster DNS block caches answers %d..%d s, denials %d..%d s", c.MinSuccess, c.Success, c.MinDenial, c.Denial))
	}
	if k.Positive != nil {
		parts = append(parts, fmt.Sprintf("a pod may keep an answer up to %d s", *k.Positive))
	}
	if k.Negative != nil {
		parts = append(parts, fmt.Sprintf("an NXDOMAIN or NODATA up to %d s", *k.Negative))
	}
	if k.ServeStale != "" {
		parts = append(parts, "and an expired one "+k.ServeStale+" more while xcc-dns does not answer (serve_stale)")
	}
	return strings.Join(parts, "; ")
}

// live sets the reason from what the cluster DNS does now, once the
// Corefile's block is right: a pod not reloaded, or the cluster DNS
// answering otherwise than xcc-dns. What was said so far is kept.
func (r *Report) live(f Facts, now time.Time) {
	if f.Reload != nil {
		var older []string
		for _, p := range f.Reload.Pods {
			if p.State == ReloadOlder {
				older = append(older, p.Pod)
			}
		}
		if len(older) > 0 {
			since := ""
			if !f.Reload.Changed.IsZero() {
				since = fmt.Sprintf(", changed %s ago", now.Sub(f.Reload.Changed).Truncate(time.Second))
			}
			r.keepBehind(AnswerUnknown, ReasonNotReloaded, fmt.Sprintf("cluster DNS pod(s) %s of %s still run a Corefile older than ConfigMap %s%s: pods load it again within about %s of a change (the kubelet's ConfigMap sync, then the reload plugin's 30 s check); later than that, their Corefile lacks the reload plugin or reloading fails (their log says): restart them (kubectl delete pod)",
				strings.Join(older, ", "), f.From, f.Reload.ConfigMap, since, NotReloadedWithin))
			return
		}
	}
	var xcc, cluster *dnsanswer.Answer
	for i := range f.Answers {
		switch f.Answers[i].Server {
		case ServerXccDNS:
			xcc = &f.Answers[i]
		case ServerClusterDNS:
			cluster = &f.Answers[i]
		}
	}
	if xcc == nil || cluster == nil || !xcc.Records() || cluster.Records() {
		return
	}
	var why string
	switch {
	case cluster.Error != "":
		why = "the cluster DNS does not answer (" + cluster.Error + ") while xcc-dns answers records: pods there get no answer; is the cluster DNS Service's ClusterIP reachable from the xcc-dns pod's node?"
	case cluster.Rcode == "NXDOMAIN" || cluster.Outcome() == "NODATA":
		why = fmt.Sprintf("the cluster DNS answers %s while xcc-dns answers records: it may still hold an earlier %s in its cache (up to its negative TTL, %s), or its server block for %s does not reach xcc-dns (see the cluster DNS line)",
			cluster.Outcome(), cluster.Outcome(), negWords(cluster), r.Zone)
	case cluster.Rcode == "SERVFAIL":
		why = "the cluster DNS answers SERVFAIL while xcc-dns answers records: its forward to xcc-dns gets no answer; check that the block forwards to the xcc-dns Service's ClusterIP and port, and that the workload chart's NetworkPolicy admits the cluster DNS pods (networkPolicy.clusterDNS: their namespace and labels)"
	default:
		why = "the cluster DNS answers " + cluster.Outcome() + " while xcc-dns answers records"
	}
	r.keepBehind(AnswerUnknown, ReasonClusterDNSDiffers, why)
}

// negWords is an answer's negative TTL in words.
func negWords(a *dnsanswer.Answer) string {
	if a.NegativeTTL == nil {
		return "no SOA given"
	}
	return fmt.Sprintf("%d s", *a.NegativeTTL)
}

// keepBehind sets the reason, keeping the one so far at the end.
func (r *Report) keepBehind(answer, reason, why string) {
	why += fmt.Sprintf("; xcc-dns itself answers %s (%s: %s)", r.Answer, r.Reason, r.Why)
	r.set(answer, reason, why)
}
