package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
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
		return []string{strings.TrimPrefix(skydnsrecord.CanonicalName(h), "*.")}, nil
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
// records of its named ports (srvRecords); at most
// contract.MaxRecordsPerName of each.
func MultiRecords(name string, parsed []contract.Parsed, self []string) (skydnsrecord.Set, contract.Answer, []error) {
	var problems []error
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
	if len(parsed) > 0 && parsed[0].Kind == contract.KindHeadless {
		at = contract.HeadlessAllName(name)
		if len(answer.Hosts) > contract.MaxRecordsPerName {
			problems = append(problems, fmt.Errorf("name %s: %d addresses, more than %d; answering the first in the policy's order", name, len(answer.Hosts), contract.MaxRecordsPerName))
			answer.Hosts = answer.Hosts[:contract.MaxRecordsPerName]
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
		problems = append(problems, srvRecords(records, name, owner, ttl, parsed, answer)...)
	}
	return records, answer, problems
}

// srvRecords adds to records the SRV records of the headless name name:
// for each named port, one per pod of the sources answer picked (their
// ready pods; every pod when no source is healthy) that has a name of its
// own, target that name. At most contract.MaxRecordsPerName per SRV name,
// the first in the policy's order.
func srvRecords(records skydnsrecord.Set, name, owner string, ttl uint32, parsed []contract.Parsed, answer contract.Answer) []error {
	var problems []error
	count := map[string]int{}
	for _, cluster := range answer.Selected {
		for _, p := range parsed {
			if p.Source != cluster {
				continue
			}
			for _, port := range p.Ports {
				srv := contract.HeadlessSRVName(name, port)
				for _, pod := range p.Pods {
					if pod.Label == "" || (!pod.Ready && !answer.Fallback) {
						continue
					}
					target := contract.HeadlessPodName(name, cluster, pod.Label)
					key := skydnsrecord.RecordKey(srv, owner, target+":"+strconv.Itoa(int(port.Port)))
					if _, dup := records[key]; dup {
						continue
					}
					if count[srv] == contract.MaxRecordsPerName {
						problems = append(problems, fmt.Errorf("name %s: more than %d SRV records; answering the first in the policy's order", srv, contract.MaxRecordsPerName))
						count[srv]++
					}
					if count[srv] > contract.MaxRecordsPerName {
						continue
					}
					count[srv]++
					records[key] = skydnsrecord.Record{Host: target, Port: int(port.Port), TTL: ttl, Owner: owner}
				}
			}
		}
	}
	return problems
}

// multiName returns the multi-cluster name slice publishes, if it is one.
func (s *Syncer) multiName(slice *discoveryv1.EndpointSlice) (string, bool) {
	p, ok, _ := contract.ParseGranted(slice, s.domain, s.grants)
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
		p, ok, _ := contract.ParseGranted(slice, s.domain, s.grants)
		if !ok || !p.Kind.MultiCluster() || p.Name != name {
			continue
		}
		parsed = append(parsed, p)
		namespace = p.Namespace
	}
	if len(parsed) == 0 {
		return nil, nil
	}
	self := s.self(ctx, namespace)
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
	res, err := s.store.SyncOwner(ctx, owner, desired)
	if err != nil {
		return fmt.Errorf("sync records of %s: %w", name, err)
	}
	s.observe(ctx, res, "name", name)
	for k := range desired {
		dirs[skydnsrecord.ParentKey(k)] = true
	}
	for _, dir := range sortedKeys(dirs) {
		if err := s.syncNameRecord(ctx, dir); err != nil {
			return err
		}
	}
	return nil
}

// syncNameRecord makes the name record of the name at key dir match the
// records below it.
func (s *Syncer) syncNameRecord(ctx context.Context, dir string) error {
	var want skydnsrecord.Set
	if k, r, ok := nameRecord(dir, s.store.OwnedUnder(dir)); ok {
		want = skydnsrecord.Set{k: r}
	}
	res, err := s.store.SyncOwner(ctx, nameOwnerPrefix+dir, want)
	if err != nil {
		return fmt.Errorf("sync name record %s: %w", dir, err)
	}
	s.observe(ctx, res, "name", dir)
	return nil
}
