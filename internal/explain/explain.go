package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/corefile"
	"github.com/xcc-dns/xcc-dns/internal/dnsanswer"
	"github.com/xcc-dns/xcc-dns/internal/overview"
	"github.com/xcc-dns/xcc-dns/internal/printable"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// Facts are what was read for a name: the objects of the management
// cluster that can publish it, and what could not be read.
type Facts struct {
	GatewayDNS  []v1alpha1.GatewayDNS
	ClusterSets []xccv1alpha1.ClusterSet
	// From is the workload cluster whose slices were read (--from);
	// Slices are its contract slices that publish the name.
	From   string
	Slices []Slice
	// Forward is what the cluster DNS of From does with the name's zone;
	// nil when not read.
	Forward *Forward
	// Import is the ServiceImport of a clusterset name in From; nil when
	// there is none or it was not read.
	Import *Import
	// Answers are what DNS servers answer now: xcc-dns and the cluster
	// DNS of From, asked by the serve pod AnswersFrom, and each --dns.
	Answers     []dnsanswer.Answer
	AnswersFrom string
	// Reload is whether the cluster DNS pods of From run the ConfigMap's
	// Corefile; nil when not read.
	Reload *Reload
	// Unread says, per fact, why it could not be read; ListFailed and
	// SlicesFailed say which: the management list, the --from slices.
	Unread       []string
	ListFailed   bool
	SlicesFailed bool
}

// Slice is one EndpointSlice of a workload cluster's slice namespace
// whose hostname annotation publishes the name.
type Slice struct {
	Name      string   `json:"name"`
	Hostname  string   `json:"hostname"`
	Source    string   `json:"source,omitempty"` // the source cluster label
	Addresses []string `json:"addresses,omitempty"`
}

// Forward is the server block of a cluster DNS Corefile that answers the
// name's zone: the xcc-dns forward block patch-corefile adds (Managed),
// one of the user's, or none (Found false), when the root block sends
// the zone upstream like any other name.
type Forward struct {
	ConfigMap string   `json:"configMap"` // namespace/name
	Zone      string   `json:"zone"`
	Found     bool     `json:"found"`
	Key       string   `json:"key,omitempty"`
	Managed   bool     `json:"managed,omitempty"`
	ForwardTo []string `json:"forwardTo,omitempty"`
	// Service is the xcc-dns Service of the cluster (namespace/name) and
	// ServiceAddresses each of its ClusterIPs with its DNS port (ip:port),
	// what the block should forward to; none when it was not read.
	Service          string   `json:"service,omitempty"`
	ServiceAddresses []string `json:"serviceAddresses,omitempty"`
	// Cache is what the block's cache plugin keeps; nil without one.
	Cache *corefile.Cache `json:"cache,omitempty"`
	// Kubernetes: the block's kubernetes plugin answers the zone itself
	// (its multicluster option), forwarding it nowhere.
	Kubernetes bool `json:"kubernetes,omitempty"`
}

// Import is a member's ServiceImport: its type, ClusterSetIPs, ports
// (name/protocol/port) and the cluster ids of the members exporting it
// (status.clusters).
type Import struct {
	Name     string   `json:"name"` // namespace/name
	Type     string   `json:"type"`
	IPs      []string `json:"ips,omitempty"`
	Ports    []string `json:"ports,omitempty"`
	Clusters []string `json:"clusters,omitempty"`
}

// Answers, what the DNS server gives for the name.
const (
	AnswerRecords  = "records"
	AnswerNoData   = "NODATA"
	AnswerNXDomain = "NXDOMAIN"
	// AnswerUnknown: what was read does not decide it.
	AnswerUnknown = "unknown"
	// AnswerNotOurs: a name in neither zone; the cluster DNS answers it.
	AnswerNotOurs = "not ours"
)

// Reasons of a Report, besides the controller's status reasons it
// passes on (Published, ClusterUnreachable, ServiceNotFound, ...).
const (
	ReasonNotInZone         = "NotInZone"
	ReasonRefused           = "Refused"
	ReasonEmptyNonTerminal  = "EmptyNonTerminal"
	ReasonApex              = "Apex"
	ReasonTypeNotAnswered   = "TypeNotAnswered"
	ReasonByHand            = "ByHand"
	ReasonPublished         = "Published"
	ReasonUnread            = "Unread"
	ReasonNoGatewayDNS      = "NoGatewayDNS"
	ReasonNotSelected       = "NotSelected"
	ReasonNotInStatus       = "NotInStatus"
	ReasonNoAPIAddress      = "NoAPIAddress"
	ReasonHeadlessExport    = "HeadlessExport"
	ReasonNotHeadless       = "NotHeadless"
	ReasonNothingPublished  = "NothingPublished"
	ReasonNoPods            = "NoPods"
	ReasonNamesNotEnabled   = "NamesNotEnabled"
	ReasonNotClaimed        = "NotClaimed"
	ReasonNoClusterSet      = "NoClusterSet"
	ReasonSeeMembers        = "SeeMembers"
	ReasonImported          = "Imported"
	ReasonNotImported       = "NotImported"
	ReasonNotForwarded      = "NotForwarded"
	ReasonForwardsElsewhere = "ForwardsElsewhere"
)

// Report is the explanation of one name. Much of it is what a tenant or
// a workload cluster's admin wrote or answered: WriteText and its JSON
// print every string of it printable.Clean.
type Report struct {
	Name
	Answer string `json:"answer"`
	// Reason is one CamelCase word, Why the reason in words.
	Reason string `json:"reason"`
	Why    string `json:"why"`
	// Publishers are the GatewayDNS or ClusterSets behind the name, each
	// with the entries of the clusters the name depends on.
	Publishers []Publisher `json:"publishers,omitempty"`
	From       string      `json:"from,omitempty"`
	Slices     []Slice     `json:"slices,omitempty"`
	Forward    *Forward    `json:"forward,omitempty"`
	Import     *Import     `json:"import,omitempty"`
	// Answers are what DNS servers answer now (Facts.Answers), asked by
	// the serve pod AnswersFrom; Keep how long a pod may keep them;
	// Reload whether the cluster DNS pods run the ConfigMap's Corefile.
	Answers     []dnsanswer.Answer `json:"answers,omitempty"`
	AnswersFrom string             `json:"answersFrom,omitempty"`
	Keep        *Keep              `json:"keep,omitempty"`
	Reload      *Reload            `json:"reload,omitempty"`
	// Key is the etcd key prefix serve stores the records under, in each
	// workload cluster's etcd; empty when the etcd plugin reads nothing.
	Key    string   `json:"key,omitempty"`
	Unread []string `json:"unread,omitempty"`
}

// MarshalJSON is r's JSON, every string of it printable.Line; the shapes
// keep their <cluster>, unescaped.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plain(printable.Clean(r))); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Publisher is a GatewayDNS or ClusterSet behind a name.
type Publisher struct {
	Kind    string `json:"kind"` // GatewayDNS or ClusterSet
	Name    string `json:"name"` // namespace/name
	Ready   bool   `json:"ready"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// NotObserved: its status is of an older generation than its spec.
	NotObserved bool     `json:"notObserved,omitempty"`
	Entries     []Entry  `json:"entries,omitempty"`
	Targets     []Target `json:"targets,omitempty"`
}

// Entry is the status entry of one cluster (or member, or claimed name).
type Entry struct {
	What      string    `json:"what"` // "cluster cluster-a", "member cluster-b", "name x.ns.names.xcc.test"
	Ready     bool      `json:"ready"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message,omitempty"`
	Healthy   *bool     `json:"healthy,omitempty"`
	Answered  *bool     `json:"answered,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	Addresses []string  `json:"addresses,omitempty"`
	// APIAddresses are the control-plane addresses of api.<cluster>...
	APIAddresses []string `json:"apiAddresses,omitempty"`
	Detail       string   `json:"detail,omitempty"`
}

// Target is a target cluster that does not hold the latest records.
type Target struct {
	Name    string    `json:"name"`
	Reason  string    `json:"reason"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// effect is what a cluster's status reason leaves of its names in the
// workload clusters (internal/controller/README.md, "Status").
func effect(reason string) string {
	switch reason {
	case "Published", "AddressConflict":
		return "published"
	case "WriteFailed", "Writing", "TargetUnreachable":
		return "written where the targets answer"
	case "ClusterUnreachable", "ClusterCutOff", "KubeconfigMissing", "KubeconfigInvalid", "KubeconfigRefused", "TooManyAddresses", "TooManyEndpoints", "TooManyNames":
		return "serving last known records"
	}
	return "no records"
}

// Build explains n from the facts read for it.
func Build(n Name, f Facts, now time.Time) Report {
	r := Report{Name: n, Unread: f.Unread, From: f.From, Slices: f.Slices, Forward: f.Forward, Import: f.Import,
		Answers: f.Answers, AnswersFrom: f.AnswersFrom, Keep: keep(f.Answers, f.Forward), Reload: f.Reload}
	if n.Stored != "" {
		r.Key = skydnsrecord.Key(n.Stored) + "/"
	}
	switch {
	case n.Zone == "":
		r.set(AnswerNotOurs, ReasonNotInZone, "in no zone of xcc-dns: the cluster DNS answers it as any other name")
	case n.Refused != "":
		r.set(AnswerNXDomain, ReasonRefused, "name refused: "+n.Refused)
	case n.Empty && n.Name == n.Zone:
		r.set(AnswerNoData, ReasonApex, "the apex of the zone: the DNS server answers its SOA and NS itself, NODATA for other types")
	case n.Empty:
		r.set(AnswerNoData, ReasonEmptyNonTerminal, "an empty non-terminal: NODATA for every type; the names below it answer")
	case n.TypeRefused != "":
		r.set(AnswerNoData, ReasonTypeNotAnswered, n.Type+" NODATA: "+n.TypeRefused)
	case n.Hand:
		r.set(AnswerUnknown, ReasonByHand, "no name xcc-dns publishes: it answers what was put at its key by hand (etcdctl put), else NXDOMAIN")
	case n.Kind == "dns-version":
		r.set(AnswerRecords, ReasonPublished, "TXT of the specification's version, written by serve itself")
	case n.Family == FamilyClusterSet:
		r.clusterSet(f)
	case n.Family == FamilyNone:
		r.set(AnswerUnknown, ReasonByHand, "no GatewayDNS or ClusterSet publishes a name of this shape")
	case f.ListFailed:
		r.set(AnswerUnknown, ReasonUnread, "could not read the GatewayDNS of namespace "+n.Owner.Namespace+": "+strings.Join(f.Unread, "; "))
	case n.Family == FamilyClusters:
		r.clusters(f.GatewayDNS, now)
	case n.Family == FamilyGateways, n.Family == FamilyServices:
		r.gatewayDNS(f.GatewayDNS, now)
	case n.Family == FamilyNames:
		r.names(f.GatewayDNS)
	}
	if n.TypeRefused != "" {
		// The guard answers before the etcd plugin reads anything.
		r.Key = ""
	}
	if fw := f.Forward; fw != nil && !fw.Found && n.Zone != "" && n.Refused == "" {
		// Asked there, the name never reaches xcc-dns: that comes first.
		r.set(AnswerUnknown, ReasonNotForwarded, fmt.Sprintf("the cluster DNS of %s (ConfigMap %s) has no server block for %s: it sends the name upstream like any other, and pods there get what the upstream answers; xcc-syncer patch-corefile adds the block (the workload chart's job runs it)",
			f.From, fw.ConfigMap, fw.Zone))
	} else if fw != nil && fw.Found && !fw.Kubernetes && n.Zone != "" && n.Refused == "" && len(fw.ServiceAddresses) > 0 {
		r.forwardsElsewhere(*fw, f.From)
	}
	if r.Reason != ReasonNotForwarded && r.Reason != ReasonForwardsElsewhere && n.Zone != "" && n.Refused == "" {
		r.live(f, now)
	}
	return r
}

// forwardsElsewhere sets the reason of a name asked from a cluster whose
// DNS block for the zone forwards elsewhere than the xcc-dns Service, or
// not only there: what pods there get is what that server answers. What
// xcc-dns itself answers, the reason so far, is kept at the end.
func (r *Report) forwardsElsewhere(fw Forward, from string) {
	other := fw.Elsewhere()
	if len(fw.ForwardTo) > 0 && len(other) == 0 {
		return
	}
	defer func(answer, reason, why string) {
		r.Why += fmt.Sprintf("; xcc-dns itself answers %s (%s: %s)", answer, reason, why)
	}(r.Answer, r.Reason, r.Why)
	block := fmt.Sprintf("the block %s of the cluster DNS of %s (ConfigMap %s)", fw.Key, from, fw.ConfigMap)
	svc := fmt.Sprintf("the xcc-dns Service %s (%s)", fw.Service, strings.Join(fw.ServiceAddresses, ", "))
	var why string
	switch {
	case len(fw.ForwardTo) == 0:
		r.set(AnswerUnknown, ReasonForwardsElsewhere, fmt.Sprintf("%s forwards %s nowhere, not to %s: pods there get what that block answers itself", block, fw.Zone, svc))
		return
	case len(other) < len(fw.ForwardTo):
		why = fmt.Sprintf("%s forwards %s to %s, not only to %s: %s is not it, and the forward plugin sends some queries there",
			block, fw.Zone, strings.Join(fw.ForwardTo, " "), svc, strings.Join(other, " "))
	default:
		why = fmt.Sprintf("%s forwards %s to %s, not to %s: pods there get what that server answers", block, fw.Zone, strings.Join(fw.ForwardTo, " "), svc)
	}
	if fw.Managed {
		why += "; patch-corefile's block: helm upgrade of the workload chart (its patch-corefile job) writes it again with the Service's address"
	} else {
		why += "; a block of the user's: point its forward at the Service, or remove it"
	}
	r.set(AnswerUnknown, ReasonForwardsElsewhere, why)
}

// Elsewhere are the targets of the block's forward that are not one of
// the xcc-dns Service's addresses: an address (dns:// or none, port 53
// when unwritten) of another IP or port, or another kind of target (a
// file, tls://). Nil when the Service was not read.
func (fw Forward) Elsewhere() []string {
	if len(fw.ServiceAddresses) == 0 {
		return nil
	}
	var out []string
	for _, t := range fw.ForwardTo {
		ap, ok := forwardAddress(t)
		if !ok || !slices.ContainsFunc(fw.ServiceAddresses, func(s string) bool {
			sa, err := netip.ParseAddrPort(s)
			return err == nil && sa.Addr().Unmap() == ap.Addr() && sa.Port() == ap.Port()
		}) {
			out = append(out, t)
		}
	}
	return out
}

// forwardAddress is the address a forward target names: ip, ip:port or
// [ip]:port, with or without dns://; false for anything else.
func forwardAddress(target string) (netip.AddrPort, bool) {
	t := strings.TrimPrefix(target, "dns://")
	if ap, err := netip.ParseAddrPort(t); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	if a, err := netip.ParseAddr(t); err == nil && a.Zone() == "" {
		return netip.AddrPortFrom(a.Unmap(), dnsPort), true
	}
	return netip.AddrPort{}, false
}

// dnsPort is where a forward target without a port is asked.
const dnsPort = 53

func (r *Report) set(answer, reason, why string) { r.Answer, r.Reason, r.Why = answer, reason, why }

// fromEntry sets the answer and reason of a name that depends on one
// cluster's entry alone.
func (r *Report) fromEntry(e Entry, cluster string, addrs []string, now time.Time) {
	if e.Ready {
		why := cluster + " is published in every target"
		if len(addrs) > 0 {
			why += ": " + strings.Join(addrs, ", ")
		}
		r.set(AnswerRecords, ReasonPublished, why)
		return
	}
	what := effect(e.Reason)
	answer := AnswerRecords
	if what == "no records" {
		answer = AnswerNXDomain
	}
	r.set(answer, e.Reason, fmt.Sprintf("%s: %s%s: %s", cluster, e.Reason, overview.Since(e.Since, now), what))
}

// clusters explains a cluster's gateway or api name: the GatewayDNS of
// its namespace that selects it and does not export a headless Service.
func (r *Report) clusters(gds []v1alpha1.GatewayDNS, now time.Time) {
	ns, cluster := r.Owner.Namespace, r.Owner.Cluster
	var owners, omitted []string
	var found *Entry
	for _, gd := range gds {
		if gd.Namespace != ns || gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless {
			continue
		}
		owners = append(owners, gd.Name)
		if gd.Status.OmittedClusters > 0 {
			omitted = append(omitted, gd.Name)
		}
		for _, c := range gd.Status.Clusters {
			if c.Name != cluster {
				continue
			}
			p := publisher(gd, []v1alpha1.ClusterStatus{c})
			// Answered is of the gateways name, not of this one.
			p.Entries[0].Answered = nil
			r.Publishers = append(r.Publishers, p)
			if c.Reason != "Conflict" && found == nil {
				found = &r.Publishers[len(r.Publishers)-1].Entries[0]
			}
		}
	}
	switch {
	case len(owners) == 0:
		r.set(AnswerNXDomain, ReasonNoGatewayDNS, "no GatewayDNS of namespace "+ns+" publishes gateways: nothing publishes the names of its clusters")
	case found == nil && len(omitted) > 0:
		r.set(AnswerUnknown, ReasonNotInStatus, fmt.Sprintf("%s is in no status of the GatewayDNS of %s, which leave clusters out (%s): kubectl get cluster -n %s %s --show-labels", cluster, ns, strings.Join(omitted, ", "), ns, cluster))
	case found == nil && len(r.Publishers) > 0:
		r.set(AnswerNXDomain, "Conflict", cluster+" is selected only by GatewayDNS that an older one of "+ns+" has it from")
	case found == nil:
		r.set(AnswerNXDomain, ReasonNotSelected, fmt.Sprintf("%s is not selected by any GatewayDNS of %s (%s)", cluster, ns, strings.Join(owners, ", ")))
	case r.Kind == "api" && len(found.APIAddresses) == 0:
		r.set(AnswerNXDomain, ReasonNoAPIAddress, cluster+" has no control-plane address published: its Cluster's spec.controlPlaneEndpoint.host is unset or was refused")
	case r.Kind == "api":
		r.fromEntry(*found, cluster, found.APIAddresses, now)
		if r.Answer == AnswerNXDomain {
			// Written from the Cluster alone, whatever its gateway's reason.
			r.set(AnswerRecords, ReasonPublished, fmt.Sprintf("the control-plane address of %s is published: %s (its gateway: %s)", cluster, strings.Join(found.APIAddresses, ", "), found.Reason))
		}
	default:
		r.fromEntry(*found, cluster, found.Addresses, now)
	}
}

// gatewayDNS explains a name of one GatewayDNS: its gateways across
// clusters, or its headless export and the names below it.
func (r *Report) gatewayDNS(gds []v1alpha1.GatewayDNS, now time.Time) {
	ns, name := r.Owner.Namespace, r.Owner.GatewayDNS
	i := slices.IndexFunc(gds, func(gd v1alpha1.GatewayDNS) bool { return gd.Namespace == ns && gd.Name == name })
	if i < 0 {
		r.set(AnswerNXDomain, ReasonNoGatewayDNS, "no GatewayDNS "+ns+"/"+name)
		return
	}
	gd := gds[i]
	headless := gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless
	switch {
	case r.Family == FamilyGateways && headless:
		r.Publishers = append(r.Publishers, publisher(gd, nil))
		r.set(AnswerNXDomain, ReasonHeadlessExport, "GatewayDNS "+ns+"/"+name+" exports a headless Service: its names are "+name+"."+ns+".services."+r.Zone+" and below, not gateways.")
		return
	case r.Family == FamilyServices && !headless:
		r.Publishers = append(r.Publishers, publisher(gd, nil))
		r.set(AnswerNXDomain, ReasonNotHeadless, "GatewayDNS "+ns+"/"+name+" publishes gateways (resolutionType loadBalancer): its name is *."+name+"."+ns+".gateways."+r.Zone)
		return
	}
	if cluster := r.Owner.Cluster; cluster != "" {
		// A headless cluster or pod name: that cluster's pods.
		j := slices.IndexFunc(gd.Status.Clusters, func(c v1alpha1.ClusterStatus) bool { return c.Name == cluster })
		if j < 0 {
			r.Publishers = append(r.Publishers, publisher(gd, nil))
			r.set(AnswerNXDomain, ReasonNotSelected, cluster+" is not selected by GatewayDNS "+ns+"/"+name)
			return
		}
		c := gd.Status.Clusters[j]
		r.Publishers = append(r.Publishers, publisher(gd, []v1alpha1.ClusterStatus{c}))
		if c.Pods == 0 && (c.Ready || effect(c.Reason) != "serving last known records") {
			r.set(AnswerNXDomain, ReasonNoPods, cluster+" has no ready pod of "+gd.Spec.Service+" published")
			return
		}
		r.fromEntry(r.Publishers[0].Entries[0], cluster, nil, now)
		if r.Owner.Pod != "" && r.Answer == AnswerRecords {
			r.Why += "; whether pod " + r.Owner.Pod + " is among them, --from " + cluster + " shows"
		}
		return
	}
	r.Publishers = append(r.Publishers, publisher(gd, gd.Status.Clusters))
	var answered, published []string
	for _, c := range gd.Status.Clusters {
		if c.Answered {
			answered = append(answered, c.Name)
		}
		if c.Ready || effect(c.Reason) != "no records" {
			published = append(published, c.Name)
		}
	}
	switch {
	case len(published) == 0 && len(gd.Status.Clusters) == 0:
		r.set(AnswerNXDomain, ReasonNothingPublished, "GatewayDNS "+ns+"/"+name+" selects no cluster")
	case len(published) == 0:
		c := gd.Status.Clusters[0]
		r.set(AnswerNXDomain, ReasonNothingPublished, fmt.Sprintf("no cluster of GatewayDNS %s/%s is published; first: %s: %s", ns, name, c.Name, c.Reason))
	case len(answered) == 0:
		r.set(AnswerRecords, ReasonPublished, "no published cluster is healthy: every published one answers ("+strings.Join(published, ", ")+")")
	default:
		r.set(AnswerRecords, ReasonPublished, "answers the healthy clusters the locality policy picks: "+strings.Join(answered, ", "))
	}
}

// names explains a name claimed with the fqdn annotation: the GatewayDNS
// of its namespace whose status.names lists it.
func (r *Report) names(gds []v1alpha1.GatewayDNS) {
	ns := r.Owner.Namespace
	var enabled, omitted []string
	for _, gd := range gds {
		if gd.Namespace != ns || gd.Spec.Names == nil || !gd.Spec.Names.Enabled || gd.Spec.ResolutionType == v1alpha1.ResolutionTypeHeadless {
			continue
		}
		enabled = append(enabled, gd.Name)
		if gd.Status.OmittedNames > 0 {
			omitted = append(omitted, gd.Name)
		}
		for _, st := range gd.Status.Names {
			if skydnsrecord.CanonicalName(st.Name) != r.Name.Name {
				continue
			}
			p := publisher(gd, nil)
			p.Entries = []Entry{{What: "name " + st.Name, Ready: st.Reason == ReasonPublished, Reason: st.Reason, Message: st.Message,
				Detail: fmt.Sprintf("sources %s, %d healthy", strings.Join(st.Sources, ", "), st.HealthySources)}}
			r.Publishers = append(r.Publishers, p)
		}
	}
	for _, p := range r.Publishers {
		if e := p.Entries[0]; e.Reason != "Conflict" {
			if e.Ready {
				r.set(AnswerRecords, ReasonPublished, "claimed by "+e.Detail+", published by GatewayDNS "+p.Name)
			} else {
				r.set(AnswerNXDomain, e.Reason, "GatewayDNS "+p.Name+": "+e.Reason+": "+e.Message)
			}
			return
		}
	}
	switch {
	case len(r.Publishers) > 0:
		r.set(AnswerNXDomain, "Conflict", "claimed only from clusters of a GatewayDNS that an older one of "+ns+" has it from")
	case len(enabled) == 0:
		r.set(AnswerNXDomain, ReasonNamesNotEnabled, "no GatewayDNS of "+ns+" has spec.names.enabled: no claimed name of the namespace is published")
	case len(omitted) > 0:
		r.set(AnswerUnknown, ReasonNotInStatus, "in no status.names of "+strings.Join(enabled, ", ")+", some of which leave names out")
	default:
		r.set(AnswerNXDomain, ReasonNotClaimed, "no Service of a cluster selected by "+strings.Join(enabled, ", ")+" claims it (annotation connectivity.tanzu.vmware.com/fqdn)")
	}
}

// clusterSet explains a name of the clusterset zone: the management
// cluster knows the ClusterSets and their members, the members know
// what is exported and imported.
func (r *Report) clusterSet(f Facts) {
	for _, cs := range f.ClusterSets {
		p := Publisher{Kind: "ClusterSet", Name: cs.Namespace + "/" + cs.Name, NotObserved: cs.Status.ObservedGeneration < cs.Generation}
		if c := meta.FindStatusCondition(cs.Status.Conditions, xccv1alpha1.ConditionReady); c != nil {
			p.Ready, p.Reason, p.Message = c.Status == "True", c.Reason, c.Message
		} else {
			p.Reason = "Unknown"
		}
		for _, m := range cs.Status.Clusters {
			e := Entry{What: "member " + m.Name, Ready: m.Reason == xccv1alpha1.ReasonMember && m.Message == "", Reason: string(m.Reason), Message: m.Message}
			if m.ClusterID != "" {
				e.Detail = "cluster id " + m.ClusterID
			}
			p.Entries = append(p.Entries, e)
		}
		r.Publishers = append(r.Publishers, p)
	}
	var set *xccv1alpha1.ClusterSet
	if f.From != "" {
		// The ClusterSet that has the member asked from: the one behind.
		for i, cs := range f.ClusterSets {
			if slices.ContainsFunc(cs.Status.Clusters, func(m xccv1alpha1.MemberStatus) bool { return m.Name == f.From }) {
				set = &f.ClusterSets[i]
				r.Publishers = []Publisher{r.Publishers[i]}
				break
			}
		}
	}
	imp := ""
	if f.Import != nil {
		imp = importWords(*f.Import, set, f.From)
	}
	switch {
	case f.From != "" && len(f.Slices) > 0 && imp != "":
		r.set(AnswerRecords, ReasonImported, fmt.Sprintf("%s; %d slice(s) publish it", imp, len(f.Slices)))
	case f.From != "" && len(f.Slices) > 0:
		r.set(AnswerRecords, ReasonImported, fmt.Sprintf("%d slice(s) of ServiceImport %s in %s publish it", len(f.Slices), r.Owner.ServiceImport, f.From))
	case f.From != "" && !f.SlicesFailed && imp != "":
		r.set(AnswerNXDomain, ReasonNotImported, imp+"; but no slice of it in "+f.From+" publishes the name")
	case f.From != "" && !f.SlicesFailed:
		r.set(AnswerNXDomain, ReasonNotImported, "no slice of ServiceImport "+r.Owner.ServiceImport+" in "+f.From+": no member exports "+r.Owner.ServiceImport+", or "+f.From+" is no member")
	case f.ListFailed:
		r.set(AnswerUnknown, ReasonUnread, "could not read the ClusterSets: "+strings.Join(f.Unread, "; "))
	case len(f.ClusterSets) == 0:
		r.set(AnswerNXDomain, ReasonNoClusterSet, "no ClusterSet on the management cluster: nothing is imported into "+r.Zone)
	default:
		var names []string
		for _, p := range r.Publishers {
			names = append(names, p.Name)
		}
		r.set(AnswerUnknown, ReasonSeeMembers, "the management cluster does not list imports: ServiceImport "+r.Owner.ServiceImport+" exists in the members of "+strings.Join(names, ", ")+" where one exports it; --from a member reads its slices")
	}
}

// importWords says what a member's ServiceImport is: its ClusterSet,
// type and addresses, ports, and the members exporting it, by Cluster
// name where set's status has it.
func importWords(imp Import, set *xccv1alpha1.ClusterSet, from string) string {
	out := "ServiceImport " + imp.Name
	if set != nil {
		out += " of ClusterSet " + set.Namespace + "/" + set.Name
	}
	out += " in " + from + ": " + imp.Type
	if len(imp.IPs) > 0 {
		out += " " + strings.Join(imp.IPs, ", ")
	}
	if len(imp.Ports) > 0 {
		out += ", ports " + strings.Join(imp.Ports, " ")
	}
	var by []string
	for _, id := range imp.Clusters {
		name := id
		if set != nil {
			if i := slices.IndexFunc(set.Status.Clusters, func(m xccv1alpha1.MemberStatus) bool { return m.ClusterID == id }); i >= 0 && set.Status.Clusters[i].Name != id {
				name = set.Status.Clusters[i].Name + " (id " + id + ")"
			}
		}
		by = append(by, name)
	}
	if len(by) == 0 {
		return out + ", exported by no member"
	}
	return out + ", exported by " + strings.Join(by, ", ")
}

// publisher is the Publisher of gd with the entries of clusters.
func publisher(gd v1alpha1.GatewayDNS, clusters []v1alpha1.ClusterStatus) Publisher {
	p := Publisher{Kind: "GatewayDNS", Name: gd.Namespace + "/" + gd.Name, NotObserved: gd.Status.ObservedGeneration < gd.Generation}
	if c := meta.FindStatusCondition(gd.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		p.Ready, p.Reason, p.Message = c.Status == "True", c.Reason, c.Message
	} else {
		p.Reason = "Unknown"
	}
	for _, c := range clusters {
		healthy, answered := c.Healthy, c.Answered
		e := Entry{What: "cluster " + c.Name, Ready: c.Ready, Reason: c.Reason, Message: c.Message, Healthy: &healthy, Answered: &answered, Addresses: c.Addresses}
		if c.Since != nil {
			e.Since = c.Since.Time
		}
		e.APIAddresses = c.APIAddresses
		var detail []string
		if c.Pods > 0 {
			detail = append(detail, fmt.Sprintf("%d ready pods", c.Pods))
		}
		if !healthy && c.HealthReason != "" {
			detail = append(detail, "not healthy: "+c.HealthReason)
		}
		e.Detail = strings.Join(detail, ", ")
		p.Entries = append(p.Entries, e)
	}
	for _, t := range gd.Status.Targets {
		p.Targets = append(p.Targets, Target{Name: t.Name, Reason: t.Reason, Message: t.Message, Since: t.Since.Time})
	}
	return p
}
