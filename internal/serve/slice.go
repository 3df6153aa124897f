package serve

import (
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// Owner is the owner recorded in every record made from the slice
// namespace/name: the records of one slice are found by it.
func Owner(namespace, name string) string {
	return "EndpointSlice " + namespace + "/" + name
}

// SliceRecords returns the records the slice describes, keyed by etcd key.
// What a slice may publish, and what refuses all or part of it, is the
// contract's (contract.Parse): every problem is returned so the caller can
// report it, and the slice's valid addresses are still published.
func SliceRecords(slice *discoveryv1.EndpointSlice, zone string) (skydnsrecord.Set, []error) {
	records, _, problems := sliceRecords(slice, zone, contract.Grants{})
	return records, problems
}

// sliceRecords is SliceRecords, and the multi-cluster name the slice
// publishes, if it is one: such a name's records are made from all its
// slices together (MultiRecords), never from one. A headless slice has
// records of its own too: those of its cluster's names.
func sliceRecords(slice *discoveryv1.EndpointSlice, zone string, grants contract.Grants) (skydnsrecord.Set, string, []error) {
	p, ok, problems := contract.ParseGranted(slice, zone, grants)
	if !ok {
		return nil, "", problems
	}
	records, multiName := parsedRecords(p, Owner(slice.Namespace, slice.Name))
	return records, multiName, problems
}

// parsedRecords is sliceRecords of a slice already read (contract.Parsed).
func parsedRecords(p contract.Parsed, owner string) (skydnsrecord.Set, string) {
	if p.Kind == contract.KindHeadless {
		return headlessSliceRecords(p, owner), p.Name
	}
	if p.Kind.MultiCluster() {
		return nil, p.Name
	}
	records := make(skydnsrecord.Set, len(p.Hosts))
	for _, host := range p.Hosts {
		records[skydnsrecord.RecordKey(p.Name, owner, host)] = skydnsrecord.Record{Host: host, TTL: p.TTL, Owner: owner}
	}
	return records, ""
}

// readSlice is what contract.ParseGranted read of one object of the
// informer's cache. An object there never changes (an update is a new
// object), so while the cache holds the same one, its reading stands.
type readSlice struct {
	obj      *discoveryv1.EndpointSlice
	parsed   contract.Parsed
	ok       bool
	problems []error
}

// parse reads slice once per object: the slice's own sync, the sync of
// the multi-cluster name it is a source of and the reconcile all take
// that one reading. Callers do not change what it returns.
func (s *Syncer) parse(slice *discoveryv1.EndpointSlice) (contract.Parsed, bool, []error) {
	key := sliceKey(slice)
	s.readMu.Lock()
	r, hit := s.read[key]
	s.readMu.Unlock()
	if hit && r.obj == slice {
		return r.parsed, r.ok, r.problems
	}
	var p contract.Parsed
	var ok bool
	var problems []error
	switch {
	case !contract.IsClusterSet(slice):
		p, ok, problems = contract.ParseGranted(slice, s.zone, s.grants)
	case s.clusterSetZone != "":
		p, ok, problems = contract.ParseClusterSet(slice, s.clusterSetZone)
	}
	// A clusterset slice while the clusterset zone is off publishes
	// nothing, and is no problem: the controller writes them regardless.
	s.readMu.Lock()
	s.read[key] = readSlice{obj: slice, parsed: p, ok: ok, problems: problems}
	s.readMu.Unlock()
	return p, ok, problems
}

// forget drops the reading of the slice at key, which is gone.
func (s *Syncer) forget(key string) {
	s.readMu.Lock()
	delete(s.read, key)
	s.readMu.Unlock()
}

// headlessSliceRecords are the records of the names of one cluster that a
// headless slice gives on its own: <cluster>.X with every pod's address
// and <pod>.<cluster>.X with that pod's. They are published whatever the
// source's health, as the gateway name of a cluster is; health only
// chooses among the clusters for X itself.
func headlessSliceRecords(p contract.Parsed, owner string) skydnsrecord.Set {
	records := make(skydnsrecord.Set, 2*len(p.Pods))
	cluster := contract.HeadlessClusterName(p.Name, p.Source)
	for _, pod := range p.Pods {
		records[skydnsrecord.RecordKey(cluster, owner, pod.Host)] = skydnsrecord.Record{Host: pod.Host, Port: NoSRVPort, TTL: p.TTL, Owner: owner}
		if pod.Label != "" {
			name := contract.HeadlessPodName(p.Name, p.Source, pod.Label)
			records[skydnsrecord.RecordKey(name, owner, pod.Host)] = skydnsrecord.Record{Host: pod.Host, Port: NoSRVPort, TTL: p.TTL, Owner: owner}
		}
	}
	return records
}

// NoSRVPort is the port of the address records of headless names. The etcd
// plugin answers an SRV query from every address record below the name,
// with a target made from the record's key (a leaf such as
// _5f0c....<name>, which names nothing); it skips records of port -1 (as
// the kubernetes plugin marks endpoints without ports). So SRV of a
// per-cluster or per-pod name, or of the name across clusters, is NODATA
// rather than junk; only _<port>._<proto> names answer SRV.
const NoSRVPort = -1
