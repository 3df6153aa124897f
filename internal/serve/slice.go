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
func SliceRecords(slice *discoveryv1.EndpointSlice, domain string) (skydnsrecord.Set, []error) {
	records, _, problems := sliceRecords(slice, domain)
	return records, problems
}

// sliceRecords is SliceRecords, and the multi-cluster name the slice
// publishes, if it is one: such a name's records are made from all its
// slices together (MultiRecords), never from one.
func sliceRecords(slice *discoveryv1.EndpointSlice, domain string) (skydnsrecord.Set, string, []error) {
	p, ok, problems := contract.Parse(slice, domain)
	if !ok {
		return nil, "", problems
	}
	if p.Kind.MultiCluster() {
		return nil, p.Name, problems
	}
	owner := Owner(slice.Namespace, slice.Name)
	records := make(skydnsrecord.Set, len(p.Hosts))
	for _, host := range p.Hosts {
		records[skydnsrecord.RecordKey(p.Name, owner, host)] = skydnsrecord.Record{Host: host, TTL: p.TTL, Owner: owner}
	}
	return records, "", problems
}
