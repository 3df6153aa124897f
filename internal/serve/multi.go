package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
	"github.com/xcc-dns/xcc-dns/internal/store"
)

// A multi-cluster name (contract.KindGateways, KindName, KindHeadless) is made
// from the slices of every source cluster together: which sources it
// answers depends on all of them (their health, the GatewayDNS's locality
// policy) and on which Clusters this cluster is (the self marker). So its
// records are synced per name, not per slice: they have one owner,
// "MultiCluster <name>", and the queue carries a key "name:<name>" for it
// beside the slice keys. A slice's own sync never writes records of a
// multi-cluster name; it queues the names the slice had and has. (A
// headless slice also writes its own cluster's names, which depend on it
// alone: see headlessSliceRecords.)
//
// The records of such a name never claim an address for a PTR record:
// the address is the gateway of a cluster whose own gateway name has the
// PTR already, and a second claimant would take that PTR away.

const (
	// multiOwnerPrefix starts the owner of a multi-cluster name's records.
	multiOwnerPrefix = "MultiCluster "
	// nameKeyPrefix starts the queue key of a multi-cluster name.
	nameKeyPrefix = "name:"
	// Informer indexes: slices by the name their hostname annotation
	// stores records at, and by the namespace of their gateway-dns-ref.
	byStoredName   = "storedName"
	byRefNamespace = "refNamespace"
)

// MultiOwner is the owner of the records of the multi-cluster name name.
func MultiOwner(name string) string { return multiOwnerPrefix + name }

func isMultiOwner(owner string) bool { return strings.HasPrefix(owner, multiOwnerPrefix) }

// indexers index the slices the way multi-cluster names are looked up.
var indexers = cache.Indexers{
	byStoredName: func(obj any) ([]string, error) {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return nil, nil
		}
		h, has := s.Annotations[contract.AnnotationHostname]
		if !has {
			return nil, nil
		}
		name, _ := skydnsrecord.StoredName(h)
		return []string{name}, nil
	},
	byRefNamespace: func(obj any) ([]string, error) {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return nil, nil
		}
		if ns, _, found := strings.Cut(s.Annotations[contract.AnnotationGatewayRef], "/"); found {
			return []string{ns}, nil
		}
		return nil, nil
	},
}

// MultiRecords returns the records of the multi-cluster name name as the
// DNS of a cluster that is the Clusters self answers it, given the parsed
// slices of every source (contract.Select), and what it answers. The
// slices of one name carry one policy and TTL; while they disagree (a
// change of the GatewayDNS reaching them one by one, or a slice edited by
// hand) every healthy source is answered with the shortest TTL, and a
// problem says so.
//
// The records of a headless name (contract.KindHeadless) are stored at
// contract.HeadlessAllName(name), with port NoSRVPort, beside the SRV
// records of its named ports (srvRecords). It holds at most
// contract.MaxRecordsPerName, taken from the picked sources in turn
// (fairHosts), so that a cut leaves every source some.
//
// The records of an import's name (contract.KindClusterSet) are laid out
// as a headless name's, with no locality and no health (policy All): X
// at HeadlessAllName(X), the names of each source of a Headless import
// (clusterSetSourceRecords), and the SRV names, whose target for a
// ClusterSetIP import is X itself.
func MultiRecords(name string, parsed []contract.Parsed, self []string) (skydnsrecord.Set, contract.Answer, []error) {
	var problems []error
	clusterSet := len(parsed) > 0 && parsed[0].Kind == contract.KindClusterSet
	if clusterSet {
		parsed, problems = oneImportType(name, parsed)
	}
	bySource := map[string]*contract.SourceHosts{}
	var loc contract.Locality
	var ttl uint32
	for i, p := range parsed {
		if i == 0 {
			loc, ttl = p.Locality, p.TTL
		} else if !loc.Equal(p.Locality) && loc.Policy != "" {
			problems = append(problems, fmt.Errorf("name %s: the slices carry different locality policies (%+v, %+v); answering every healthy source until they agree", name, loc, p.Locality))
			loc = contract.Locality{}
		}
		ttl = min(ttl, p.TTL)
		src := bySource[p.Source]
		if src == nil {
			src = &contract.SourceHosts{Cluster: p.Source}
			bySource[p.Source] = src
		}
		src.Ready = append(src.Ready, p.Hosts...)
		src.Unready = append(src.Unready, p.Unready...)
	}
	if loc.Policy == "" {
		loc = contract.Locality{Policy: contract.PolicyAll}
	}
	sources := make([]contract.SourceHosts, 0, len(bySource))
	for _, s := range bySource {
		sources = append(sources, *s)
	}
	slices.SortFunc(sources, func(a, b contract.SourceHosts) int { return cmp.Compare(a.Cluster, b.Cluster) })
	answer := contract.Select(loc, sources, self)
	owner := MultiOwner(name)
	at := name
	if len(parsed) > 0 && (parsed[0].Kind == contract.KindHeadless || clusterSet) {
		at = contract.HeadlessAllName(name)
		if len(answer.Hosts) > contract.MaxRecordsPerName {
			problems = append(problems, fmt.Errorf("name %s: %d addresses, more than %d; answering %d, taken from the sources in turn", name, len(answer.Hosts), contract.MaxRecordsPerName, contract.MaxRecordsPerName))
			answer.Hosts = fairHosts(answer, bySource)[:contract.MaxRecordsPerName]
		}
	}
	port := 0
	if at != name {
		port = NoSRVPort
	}
	records := make(skydnsrecord.Set, len(answer.Hosts))
	for _, host := range answer.Hosts {
		records[skydnsrecord.RecordKey(at, owner, host)] = skydnsrecord.Record{Host: host, Port: port, TTL: ttl, Owner: owner}
	}
	if at != name {
		targets, addresses, srvProblems := srvRecords(records, name, owner, ttl, parsed, answer)
		problems = append(problems, srvProblems...)
		if clusterSet {
			clusterSetSourceRecords(records, parsed, owner)
			problems = append(problems, srvOfName(records, name, owner, ttl, targets, addresses)...)
		}
	}
	return records, answer, problems
}

// srvRecords adds to records the SRV records of the headless name name:
// for each named port, one per pod of the sources answer picked (their
// ready pods; every pod when no source is healthy) that has a name of its
// own, target that name; for the slices of a ClusterSetIP import, one
// per named port, target name itself. A pod's target is stored as its
// addresses below the SRV name (putTarget), so that the DNS server
// answers the SRV name with one etcd read. Each SRV name holds at most
// contract.MaxRecordsPerName targets and no more than fit, with their
// addresses, in one DNS message (contract.SRVAnswerBudget): an answer
// cut by the DNS server loses its additional section and leaves the
// asker with targets it must resolve one by one. When it must cut, it
// takes the sources' pods in turn (fairTargets), so that every picked
// source keeps a share. It returns the targets of each SRV name, in that
// order, and the addresses of each target.
func srvRecords(records skydnsrecord.Set, name, owner string, ttl uint32, parsed []contract.Parsed, answer contract.Answer) (map[string][]srvTarget, map[string][]string, []error) {
	// The addresses of each pod name, which the DNS server adds to an SRV
	// answer for its target: every pod of the name's slices, ready or not.
	addresses := map[string][]string{}
	for _, p := range parsed {
		for _, pod := range p.Pods {
			if pod.Label == "" {
				continue
			}
			target := contract.HeadlessPodName(name, p.Source, pod.Label)
			addresses[target] = append(addresses[target], pod.Host)
		}
	}
	if slices.ContainsFunc(parsed, func(p contract.Parsed) bool { return p.ClusterSetIP }) {
		// A ClusterSetIP import's one target is the name itself.
		addresses[name] = append(addresses[name], answer.Hosts...)
	}
	for target, addrs := range addresses {
		slices.SortFunc(addrs, compareAddrs)
		addresses[target] = slices.Compact(addrs)
	}
	// The targets of each SRV name, per picked source.
	bySRV := map[string][][]srvTarget{}
	var srvNames []string
	for i, cluster := range answer.Selected {
		for _, p := range parsed {
			if p.Source != cluster {
				continue
			}
			for _, port := range p.Ports {
				srv := contract.HeadlessSRVName(name, port)
				if _, ok := bySRV[srv]; !ok {
					bySRV[srv] = make([][]srvTarget, len(answer.Selected))
					srvNames = append(srvNames, srv)
				}
				if p.ClusterSetIP {
					bySRV[srv][i] = append(bySRV[srv][i], srvTarget{name: name, port: int(port.Port)})
				}
				for _, pod := range p.Pods {
					if pod.Label == "" || (!pod.Ready && !answer.Fallback) {
						continue
					}
					bySRV[srv][i] = append(bySRV[srv][i], srvTarget{name: contract.HeadlessPodName(name, cluster, pod.Label), port: int(port.Port)})
				}
			}
		}
	}
	var problems []error
	slices.Sort(srvNames)
	answered := map[string][]srvTarget{}
	for _, srv := range srvNames {
		targets := fairTargets(bySRV[srv])
		kept := fitTargets(srv, name, targets, addresses)
		for _, t := range kept {
			putTarget(records, srv, name, t, addresses[t.name], owner, ttl)
		}
		answered[srv] = kept
		if len(kept) < len(targets) {
			problems = append(problems, fmt.Errorf("name %s: %d SRV records, more than fit in one DNS message with their addresses or than %d; answering %d, taken from the sources in turn", srv, len(targets), contract.MaxRecordsPerName, len(kept)))
		}
	}
	return answered, addresses, problems
}

// fitTargets returns the first of targets, an SRV answer of question
// (a name below or equal to x), that fit in one DNS message with their
// addresses (contract.SRVAnswerBudget), at most
// contract.MaxRecordsPerName.
func fitTargets(question, x string, targets []srvTarget, addresses map[string][]string) []srvTarget {
	budget := contract.SRVAnswerBudget(question)
	for i, t := range targets {
		ipv4, ipv6 := 0, 0
		for _, a := range addresses[t.name] {
			if strings.Contains(a, ":") {
				ipv6++
			} else {
				ipv4++
			}
		}
		size := contract.SRVTargetSize(x, t.name, ipv4, ipv6)
		if i == contract.MaxRecordsPerName || size > budget {
			return targets[:i]
		}
		budget -= size
	}
	return targets
}

const (
	// moreAddressesLabel holds, below a target's stored name, its
	// addresses after the first. A leaf is '_' and hex digits, all
	// before 'z', so etcd lists these after the target's first address.
	moreAddressesLabel = "_z"
	// moreAddressesPriority is the SRV priority of a target's addresses
	// after the first: one no SRV record of an answer has (the etcd
	// plugin answers priority 0 as 10), so that they count in no weight
	// of the answer.
	moreAddressesPriority = 65535
	// targetStrip is the number of labels of a stored target's key below
	// its stored name: its leaf.
	targetStrip = 1
)

// putTarget adds to records the SRV record of target t of the SRV name
// srv of x with the target's addresses addrs. A target below x is stored
// as its addresses below srv (contract.SRVTargetStoredName): the etcd
// plugin names the target of a record whose host is an address after
// the record's key less targetstrip labels, and adds the address to the
// additional section without reading the target's own key. The first
// address makes the SRV record; each further one, listed after it
// (moreAddressesLabel), is a duplicate SRV record the plugin drops, but
// for its address, and carries a priority of its own so that it changes
// no weight. The target x itself (a ClusterSetIP import) is stored by
// name.
func putTarget(records skydnsrecord.Set, srv, x string, t srvTarget, addrs []string, owner string, ttl uint32) {
	stored, below := contract.SRVTargetStoredName(srv, x, t.name)
	if !below {
		records[skydnsrecord.RecordKey(srv, owner, t.name+":"+strconv.Itoa(t.port))] = skydnsrecord.Record{Host: t.name, Port: t.port, TTL: ttl, Owner: owner}
		return
	}
	for i, a := range addrs {
		key := skydnsrecord.RecordKey(stored, owner, net.JoinHostPort(a, strconv.Itoa(t.port)))
		r := skydnsrecord.Record{Host: a, Port: t.port, TTL: ttl, TargetStrip: targetStrip, Owner: owner}
		if i > 0 {
			key = skydnsrecord.RecordKey(moreAddressesLabel+"."+stored, owner, net.JoinHostPort(a, strconv.Itoa(t.port)))
			r.TargetStrip, r.Priority = targetStrip+1, moreAddressesPriority
		}
		records[key] = r
	}
}

// srvTarget is one SRV record of a headless name: a pod name and port.
type srvTarget struct {
	name string
	port int
}

// fairTargets returns the distinct SRV targets of the picked sources
// (perSource, in the policy's order) in the order a cut keeps them:
// each source's sorted by name and port, then taken from the sources in
// turn (interleave). The order depends only on the targets, not on the
// order the slices are read in, so the same pods keep the same answer.
func fairTargets(perSource [][]srvTarget) []srvTarget {
	seen := map[srvTarget]bool{}
	groups := make([][]srvTarget, len(perSource))
	for i, targets := range perSource {
		targets = slices.Clone(targets)
		slices.SortFunc(targets, func(a, b srvTarget) int {
			return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.port, b.port))
		})
		for _, t := range targets {
			if !seen[t] {
				seen[t] = true
				groups[i] = append(groups[i], t)
			}
		}
	}
	return interleave(groups)
}

// fairHosts returns the addresses of answer in the order a cut keeps
// them: those of each picked source (answer.Selected, the policy's order)
// sorted, then taken from the sources in turn (interleave). Select lists
// the sources' addresses one after another, so cutting its list would
// answer the first sources only: with policy All, a cluster could ask for
// the name and get none of its own pods. An address several sources
// publish counts for the first.
func fairHosts(answer contract.Answer, bySource map[string]*contract.SourceHosts) []string {
	in := map[string]bool{}
	for _, h := range answer.Hosts {
		in[h] = true
	}
	groups := make([][]string, len(answer.Selected))
	for i, cluster := range answer.Selected {
		src := bySource[cluster]
		if src == nil {
			continue
		}
		hosts := src.Ready
		if answer.Fallback {
			hosts = slices.Concat(src.Ready, src.Unready)
		}
		for _, h := range hosts {
			if in[h] {
				delete(in, h)
				groups[i] = append(groups[i], h)
			}
		}
		slices.SortFunc(groups[i], compareAddrs)
	}
	return interleave(groups)
}

// compareAddrs orders addresses as numbers (10.0.0.2 before 10.0.0.10).
func compareAddrs(a, b string) int {
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	if errX != nil || errY != nil {
		return cmp.Compare(a, b)
	}
	return x.Compare(y)
}

// interleave returns the first of each group, then the second of each,
// and so on: round-robin over the groups, in their order.
func interleave[T any](groups [][]T) []T {
	var out []T
	for i := 0; ; i++ {
		more := false
		for _, g := range groups {
			if i < len(g) {
				out = append(out, g[i])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// multiName returns the multi-cluster name slice publishes, if it is one.
func (s *Syncer) multiName(slice *discoveryv1.EndpointSlice) (string, bool) {
	p, ok, _ := s.parse(slice)
	if !ok || !p.Kind.MultiCluster() {
		return "", false
	}
	return p.Name, true
}

// multiRecords computes the records of the multi-cluster name name from
// the slices in the cache.
func (s *Syncer) multiRecords(ctx context.Context, name string) (skydnsrecord.Set, error) {
	objs, err := s.indexer.ByIndex(byStoredName, name)
	if err != nil {
		return nil, fmt.Errorf("slices of %s: %w", name, err)
	}
	var parsed []contract.Parsed
	namespace := ""
	for _, obj := range objs {
		slice, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		// Each slice's problems are reported by its own sync.
		p, ok, _ := s.parse(slice)
		if !ok || !p.Kind.MultiCluster() || p.Name != name {
			continue
		}
		parsed = append(parsed, p)
		namespace = p.Namespace
	}
	if len(parsed) == 0 {
		return nil, nil
	}
	var self []string
	if parsed[0].Kind != contract.KindClusterSet {
		// An import's namespace is a workload cluster's, not the
		// GatewayDNS namespace a self marker names; no locality applies.
		self = s.self(ctx, namespace)
	}
	records, answer, problems := MultiRecords(name, parsed, self)
	for _, p := range problems {
		s.metrics.RefusedInputs.Inc()
		klog.FromContext(ctx).Error(p, "Multi-cluster name")
	}
	klog.FromContext(ctx).V(3).Info("Multi-cluster name", "name", name, "self", self, "selected", answer.Selected, "fallback", answer.Fallback)
	return records, nil
}

// self returns the Clusters of namespace this cluster is, from its self
// marker; none when there is none or it is refused.
func (s *Syncer) self(ctx context.Context, namespace string) []string {
	marker, err := s.lister.EndpointSlices(s.namespace).Get(contract.SelfSliceName(namespace))
	if err != nil {
		if !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Reading the self marker", "namespace", namespace)
		}
		return nil
	}
	self, err := contract.ParseSelf(marker)
	if err != nil {
		s.metrics.RefusedInputs.Inc()
		klog.FromContext(ctx).Error(err, "Refused the self marker")
		return nil
	}
	return self.Clusters
}

// noteSlice records what a slice key stands for (slice nil: gone;
// multiName: the multi-cluster name it publishes, if any) and queues the
// multi-cluster names whose records it changes: the name it had and has,
// and, for a self marker, every such name of its namespace.
func (s *Syncer) noteSlice(key string, slice *discoveryv1.EndpointSlice, multiName string) {
	s.seenMu.Lock()
	old := s.seen[key]
	s.seenMu.Unlock()
	now := s.remember(key, slice, multiName)

	names := map[string]bool{}
	for _, n := range []string{old.multiName, now.multiName} {
		if n != "" {
			names[n] = true
		}
	}
	for _, ns := range []string{old.selfNamespace, now.selfNamespace} {
		if ns == "" {
			continue
		}
		objs, _ := s.indexer.ByIndex(byRefNamespace, ns)
		for _, obj := range objs {
			if other, ok := obj.(*discoveryv1.EndpointSlice); ok {
				if n, ok := s.multiName(other); ok {
					names[n] = true
				}
			}
		}
	}
	for n := range names {
		s.queue.Add(nameKeyPrefix + n)
	}
}

// remember records what the slice at key (nil: gone) stands for and
// returns it.
func (s *Syncer) remember(key string, slice *discoveryv1.EndpointSlice, multiName string) seenSlice {
	now := seenSlice{multiName: multiName}
	if slice != nil {
		if ns, marker := slice.Annotations[contract.AnnotationSelfNamespace]; marker {
			now.selfNamespace = ns
		}
	}
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if now == (seenSlice{}) {
		delete(s.seen, key)
	} else {
		s.seen[key] = now
	}
	return now
}

// sliceKey is the queue key of a slice.
func sliceKey(slice *discoveryv1.EndpointSlice) string { return slice.Namespace + "/" + slice.Name }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// syncName makes the records of one multi-cluster name equal to what its
// slices and the self marker describe.
func (s *Syncer) syncName(ctx context.Context, name string) error {
	if err := skydnsrecord.ValidateName(name); err != nil {
		return errors.Join(fmt.Errorf("queue key of a multi-cluster name"), err)
	}
	s.reconcileMu.RLock()
	defer s.reconcileMu.RUnlock()
	owner := MultiOwner(name)
	dirs := map[string]bool{skydnsrecord.Key(name): true}
	for k := range s.store.OwnedBy(owner) {
		dirs[skydnsrecord.ParentKey(k)] = true
	}
	desired, err := s.multiRecords(ctx, name)
	if err != nil {
		return err
	}
	if !s.budget.admit(owner, len(desired)) {
		s.metrics.RefusedSlices.Inc()
		klog.FromContext(ctx).Error(nil, "Refused a multi-cluster name: its records would exceed the records all slices may publish",
			"name", name, "records", len(desired), "maxRecords", s.budget.max)
		desired = nil
	}
	for k := range desired {
		dirs[skydnsrecord.ParentKey(k)] = true
	}
	res, err := s.syncWithNames(ctx, owner, desired, dirs)
	if err != nil {
		return fmt.Errorf("sync records of %s: %w", name, err)
	}
	s.observe(ctx, res, "name", name)
	return nil
}

// syncWithNames makes the records of owner equal desired and the name
// record of every name at the key directories dirs match the records
// below it as they are with desired, all in one plan: a new name is one
// etcd round trip, not one for its records and one per name record.
// It holds nameMu from reading the leaves to writing (syncNameRecord).
func (s *Syncer) syncWithNames(ctx context.Context, owner string, desired skydnsrecord.Set, dirs map[string]bool) (store.Result, error) {
	s.nameMu.Lock()
	defer s.nameMu.Unlock()
	mine := map[string]skydnsrecord.Set{}
	for k, r := range desired {
		dir := skydnsrecord.ParentKey(k)
		if mine[dir] == nil {
			mine[dir] = skydnsrecord.Set{}
		}
		mine[dir][k] = r
	}
	writes := map[string]skydnsrecord.Set{owner: desired}
	for dir := range dirs {
		leaves := s.store.OwnedUnder(dir)
		maps.DeleteFunc(leaves, func(_ string, r skydnsrecord.Record) bool { return r.Owner == owner })
		maps.Copy(leaves, mine[dir])
		writes[nameOwnerPrefix+dir] = wantNameRecord(dir, leaves)
	}
	res, err := s.store.SyncOwners(ctx, writes)
	if err != nil {
		return res, err
	}
	// What etcd holds may differ from the plan (a key put by hand was
	// skipped): each name record is checked against the mirror, at no
	// etcd cost when it agrees.
	for _, dir := range sortedKeys(dirs) {
		if err := s.syncNameRecordLocked(ctx, dir); err != nil {
			return res, err
		}
	}
	return res, nil
}

// wantNameRecord is the name record of the name at key dir whose leaf
// records are leaves, as the set of its owner; nil for none.
func wantNameRecord(dir string, leaves skydnsrecord.Set) skydnsrecord.Set {
	if k, r, ok := nameRecord(dir, leaves); ok {
		return skydnsrecord.Set{k: r}
	}
	return nil
}

// syncNameRecord makes the name record of the name at key dir match the
// records below it. It holds nameMu from reading the leaves to writing.
func (s *Syncer) syncNameRecord(ctx context.Context, dir string) error {
	s.nameMu.Lock()
	defer s.nameMu.Unlock()
	return s.syncNameRecordLocked(ctx, dir)
}

// syncNameRecordLocked is syncNameRecord with nameMu held.
func (s *Syncer) syncNameRecordLocked(ctx context.Context, dir string) error {
	want := wantNameRecord(dir, s.store.OwnedUnder(dir))
	if s.beforeNameWrite != nil {
		s.beforeNameWrite()
	}
	res, err := s.store.SyncOwner(ctx, nameOwnerPrefix+dir, want)
	if err != nil {
		return fmt.Errorf("sync name record %s: %w", dir, err)
	}
	s.observe(ctx, res, "name", dir)
	return nil
}
