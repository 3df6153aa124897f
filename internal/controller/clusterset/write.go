package clusterset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/controller/lane"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/kubeclient"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/apply"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/write"
)

// writeMembers writes each member that was read: its MCS objects
// (package apply) and the contract slices serve answers the clusterset
// zone from. Each member's write runs in its lane (package lane), waited
// for a short while at most: one still running when the wait ends is
// reported writing, and its end syncs the set again. A member that was
// not read is not written; it keeps what it has.
func (c *Reconciler) writeMembers(ctx context.Context, key string, mem *setMemory, members []setMember,
	reads map[string]memberRead, agg aggregate.Result, ew eastWest) memberWrites {
	w := memberWrites{errs: map[string]error{}, writing: map[string]bool{}}
	endpoints := map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice{}
	for id, r := range reads {
		for k, s := range r.endpoints {
			if endpoints[k] == nil {
				endpoints[k] = map[string][]*discoveryv1.EndpointSlice{}
			}
			endpoints[k][id] = s
		}
	}
	logger := klog.FromContext(ctx)
	writtenNow := importsWritten(mem, members, reads, agg)
	versions := mem.versions.of(agg, endpoints)
	var ids, clusters []string
	var started []*lane.Write
	// all holds every error of each write, by index of started.
	all := make([]error, len(members))
	for _, m := range members {
		r := reads[m.ClusterID]
		if !writable(m, r) {
			continue
		}
		mem.written[m.cluster.Key()] = m.ClusterID
		ids, clusters = append(ids, m.ClusterID), append(clusters, m.cluster.Key())
		memo := mem.members[m.cluster.Key()]
		if memo == nil {
			memo = newMemberMemo()
			mem.members[m.cluster.Key()] = memo
		}
		started = append(started, c.submit(m.cluster.Key(), key, &all[len(started)], func(ctx context.Context) error {
			return timedWrite(m.cluster, workload.WriterClusterSet, func() error {
				return c.writeMember(klog.NewContext(ctx, logger), m, r, agg, endpoints, writtenNow, versions, memo, ew)
			})
		}))
	}
	for i, res := range c.lanes.Wait(ctx, started) {
		switch {
		case res.Backoff != nil:
			// Nothing of it runs: the member failed (for this set or
			// another reconciler) and its lane waits out the backoff.
			w.errs[ids[i]] = res.BackoffError()
		case !res.Ended:
			w.writing[ids[i]] = true
		default:
			// Ended: all[i] is the write's to read now.
			if err := writeError(res.Err, all[i]); err != nil {
				w.errs[ids[i]] = err
				continue
			}
			// Refused imports cost only themselves: the member's lane
			// does not back off, each waits out its own backoff
			// (apply.Settled), and the set is synced again when the
			// first is due.
			refused, retry := mem.members[clusters[i]].settled.Refused()
			if len(refused) > 0 {
				w.errs[ids[i]] = refusedError(refused)
				c.queue.AddAfter(key, time.Until(retry))
			}
		}
	}
	if now := importsWritten(mem, members, reads, agg); !maps.Equal(now, writtenNow) {
		// This sync's exports said some import was not written in every
		// member; it is now (or no longer), and only another sync
		// writes that (Ready).
		c.queue.Add(key)
	}
	return w
}

// written is what a sync knows of an import being written in every
// member that is written: what Ready on its exports says.
type written int8

const (
	// writtenNot: some member's last write did not write it (new, or
	// refused, or a write of the member failed since). The zero value.
	writtenNot written = iota
	writtenAll
	// writtenUnknown: the members this process wrote hold it, and some
	// member it has not written yet (since it started, or since the
	// member joined) may or may not: Ready stays as the export has it,
	// else a restart or a member read late would take every Ready back
	// to Pending and then write it again, for nothing that changed.
	writtenUnknown
)

// importsWritten says of each import of agg whether every member that is
// written holds it as its last write asked, with no error since
// (apply.Settled): what Ready on its exports says. Per import, so one
// import written, or one member behind on one import, changes only the
// exports of that import.
func importsWritten(mem *setMemory, members []setMember, reads map[string]memberRead, agg aggregate.Result) map[aggregate.Key]written {
	out := make(map[aggregate.Key]written, len(agg.Imports))
	var settled []*apply.Settled
	unknown := false
	for _, m := range members {
		if !writable(m, reads[m.ClusterID]) {
			continue
		}
		if memo := mem.members[m.cluster.Key()]; memo != nil && memo.ended.Load() {
			settled = append(settled, memo.settled)
		} else {
			unknown = true // no write of this process has ended there
		}
	}
	for _, imp := range agg.Imports {
		all := true
		for _, s := range settled {
			all = all && s.Holds(imp.Key)
		}
		switch {
		case !all:
			out[imp.Key] = writtenNot
		case unknown:
			out[imp.Key] = writtenUnknown
		default:
			out[imp.Key] = writtenAll
		}
	}
	return out
}

// maxRefusalsNamed is how many refused imports a member's status names.
const maxRefusalsNamed = 3

// refusedError says which imports a member refused, and why: the first
// few, in order.
func refusedError(refused map[aggregate.Key]error) error {
	keys := slices.SortedFunc(maps.Keys(refused), aggregate.CompareKeys)
	r := refusals{n: len(keys)}
	for _, k := range keys[:min(len(keys), maxRefusalsNamed)] {
		r.named = append(r.named, refused[k])
	}
	return r
}

// refusals is refusedError's: how many imports were refused, and the
// refusals of the first few, which it unwraps to. It is nothing but
// refusals (kubeclient.MemberFailure), so it backs off no lane.
type refusals struct {
	n     int
	named []error
}

func (r refusals) Error() string {
	return errors.Join(append([]error{fmt.Errorf("%d imports refused", r.n)}, r.named...)...).Error()
}

func (r refusals) Unwrap() []error { return r.named }

// writable reports whether the member m, read r, is written: read in
// full and answering, and its destination known (claimDestinations). An
// unreachable member would only cost each write its timeout.
func writable(m setMember, r memberRead) bool {
	return m.cluster != nil && r.synced && m.cluster.Unreachable() == "" && m.cluster.CutOff() == "" && !m.destUnknown
}

// timedWrite runs write, a write into cluster by writer, and records its
// duration and error in the cluster's write metrics.
func timedWrite(cluster *workload.Cluster, writer workload.Writer, write func() error) error {
	start := time.Now()
	err := write()
	cluster.NoteWrite(writer, time.Since(start), err)
	return err
}

// writeMember brings one member to its objects. The ClusterSetIPs are the
// member's API server's to allocate: a derived Service made in this
// write gets its address only then, so the member's objects are computed
// and written a second time with it.
//
// An object the member refuses costs only its import: the others are
// written, and so are the member's DNS slices, which answer only the
// ClusterSetIPs of derived Services the member holds now. Only a member
// that does not answer at all (apply.ErrNotAnswering) or cannot be listed
// is left as it is until the next sync.
func (c *Reconciler) writeMember(ctx context.Context, m setMember, r memberRead, agg aggregate.Result,
	endpoints map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice, imports map[aggregate.Key]written,
	versions map[aggregate.Key]uint64, memo *memberMemo, ew eastWest) error {
	defer memo.ended.Store(true)
	// Computed from the same as the last write that ended well, and
	// with the member holding what that write left: nothing to do.
	input := func() (memberInput, bool) { return c.memberInput(m, r, agg, versions, imports, memo, ew) }
	if memo.lastKnown {
		if in, ok := input(); ok && memo.last == in {
			c.cfg.Metrics.MemberWritesUnchanged.Inc()
			return nil
		}
	}
	memo.lastKnown = false
	settled, err := c.writeObjects(ctx, m, r, agg, endpoints, imports, versions, memo, ew)
	if err == nil && settled {
		memo.last, memo.lastKnown = input()
	}
	return err
}

// writeObjects is writeMember's write; settled says the member's
// ClusterIPs came to rest within its rounds (else the next write
// computes its objects again with the new ones).
func (c *Reconciler) writeObjects(ctx context.Context, m setMember, r memberRead, agg aggregate.Result,
	endpoints map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice, imports map[aggregate.Key]written,
	versions map[aggregate.Key]uint64, memo *memberMemo, ew eastWest) (settled bool, err error) {
	client, ok := memberClient(m)
	if !ok {
		return false, errors.New("its client has no Multi-Cluster Services API")
	}
	client = memo.exports.client(apply.Observed(client, c.seen(m.cluster)))
	// Everything is read from the member's informers; the controller's
	// own objects are listed only while those have not listed yet.
	existing, contractSlices, cached, err := c.ownObjects(ctx, m, client)
	if err != nil {
		return false, err
	}
	existing.Exports = memo.exports.over(r.own)
	ready := readyExports(existing.Exports, imports)
	ips := derivedClusterIPs(existing)
	var objs objects.Objects
	var errs []error
	for round := 0; round < 2; round++ {
		// From the caches, only the imports not settled since the last
		// write are built and planned; the others keep the addresses
		// they have. Listed (the caches not synced yet), every import is.
		settling := memo.settled.Begin(existing)
		in := objects.Input{Cluster: m.ClusterID, Namespaces: r.namespaces, Result: agg, AllowedCIDRs: c.cfg.AllowedCIDRs,
			Imports: importStates(agg, endpoints, ips, ready, versions), Limits: c.cfg.MemberLimits, Networks: ew.networks}
		if cached {
			in.Skip = settling.Settled
		}
		objs = objects.ComputeWith(in, memo.objects)
		if round > 0 {
			// The first round wrote the exports' status, which the
			// ClusterIPs do not change; the informer has not seen it yet.
			objs.Exports = nil
		}
		todo, todoExisting, same := settling.Split(objs, existing)
		if !cached {
			todo, todoExisting, same = objs, existing, nil
		}
		res, applyErr := apply.Apply(ctx, client, todo, todoExisting, metav1.Now())
		if applyErr != nil {
			errs = append(errs, applyErr)
		}
		if errors.Is(applyErr, apply.ErrNotAnswering) {
			memo.settled.Forget()
			return false, kubeclient.Join(errs...)
		}
		for _, k := range same {
			if v, ok := ips[k]; ok {
				res.ClusterIPs[k] = v
			}
		}
		changed := !maps.EqualFunc(res.ClusterIPs, ips, slices.Equal)
		// What the member holds now, and nothing it gave up.
		ips = res.ClusterIPs
		if cached || changed {
			// From the caches this costs no request: what was just
			// written is there (apply.Observed).
			if existing, contractSlices, cached, err = c.ownObjects(ctx, m, client); err != nil {
				memo.settled.Forget()
				return false, kubeclient.Join(append(errs, err)...)
			}
		}
		if applyErr == nil {
			// Listed and unchanged, existing is from before the write:
			// its imports are only planned again at the next.
			settling.Done(existing, res.Refused)
		} else {
			memo.settled.Forget()
		}
		if !changed {
			settled = true
			break
		}
	}
	for _, line := range objs.Refused {
		klog.FromContext(ctx).V(2).Info("Endpoint not imported", "member", m.ClusterID, "why", line)
	}
	errs = append(errs, c.writeContract(ctx, m, client, memo, objs, agg, endpoints, versions, ips, contractSlices, ew))
	// The member's exports reach the importers of other networks through
	// its east-west gateway once these are written.
	errs = append(errs, writeEastWest(ctx, m, ew, memo))
	return settled, kubeclient.Join(errs...)
}

// writeContract writes member m's contract slices of its objects objs,
// whose ClusterSetIPs are ips, given the slices it holds (held).
func (c *Reconciler) writeContract(ctx context.Context, m setMember, client apply.Member, memo *memberMemo, objs objects.Objects,
	agg aggregate.Result, endpoints map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice, versions map[aggregate.Key]uint64,
	ips map[aggregate.Key][]string, held []*discoveryv1.EndpointSlice, ew eastWest) error {
	reach := func(source string) bool { return ew.networks.Reaches(m.ClusterID, source) }
	want := c.clusterSetSlices(memo.dns, objs, agg, endpoints, versions, ips, held, reach)
	return c.writeClusterSetSlices(ctx, m.cluster.Key(), client.Slices(c.cfg.SliceNamespace), memo.dns, held, want)
}

// memberInput is what the write of member m, read r, is computed from
// (changes.go), with the controller's objects it holds now; ok is false
// when a write must not be skipped however it compares: those objects
// not read yet, an import refused that waits to be tried again, or
// east-west objects, whose gateway's state the input does not hold.
func (c *Reconciler) memberInput(m setMember, r memberRead, agg aggregate.Result, versions map[aggregate.Key]uint64,
	imports map[aggregate.Key]written, memo *memberMemo, ew eastWest) (memberInput, bool) {
	owned, ok := c.cfg.Workloads.Own(m.cluster)
	in := inputOf(m.ClusterID, agg, versions, imports, memo.exports.over(r.own), r.namespaces)
	in.own = owned.Total
	_, retry := memo.settled.Refused()
	return in, ok && retry.IsZero() && !ew.on && len(memo.eastWest) == 0
}

// ownObjects are the controller's objects in member m, from its
// informers (workload.Set.Own; cached), listed with client while those
// have not listed: its ServiceImports, derived Services and imported
// slices, and its contract slices.
func (c *Reconciler) ownObjects(ctx context.Context, m setMember, client apply.Member) (existing apply.Existing,
	contractSlices []*discoveryv1.EndpointSlice, cached bool, err error) {
	if existing, contractSlices, ok := c.ownedObjects(m.cluster); ok {
		return existing, contractSlices, true, nil
	}
	if existing, err = apply.ListOurs(ctx, client); err != nil {
		return existing, nil, false, err
	}
	if contractSlices, err = c.listClusterSetSlices(ctx, m.cluster.Key(), client); err != nil {
		return existing, nil, false, err
	}
	return existing, contractSlices, false, nil
}

// listClusterSetSlices lists the clusterset contract slices of the slice
// namespace of member client (of the Cluster key).
func (c *Reconciler) listClusterSetSlices(ctx context.Context, key string, client apply.Member) ([]*discoveryv1.EndpointSlice, error) {
	list, err := client.Slices(c.cfg.SliceNamespace).List(ctx, metav1.ListOptions{LabelSelector: contract.ClusterSetSelector()})
	if err != nil {
		return nil, fmt.Errorf("list clusterset EndpointSlices in %s/%s: %w", key, c.cfg.SliceNamespace, err)
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// memberClient is the apply.Member of a member's workload client, every
// call bounded by workload.RequestTimeout.
func memberClient(m setMember) (apply.Member, bool) {
	mcs, ok := m.cluster.MCS()
	if !ok {
		return apply.Member{}, false
	}
	return apply.Bounded(apply.NewMember(m.ClusterID, m.cluster.Client(), mcs), workload.RequestTimeout), true
}

// derivedClusterIPs are the ClusterIPs the member's derived Services have.
func derivedClusterIPs(existing apply.Existing) map[aggregate.Key][]string {
	out := map[aggregate.Key][]string{}
	for _, s := range existing.Services {
		if len(s.Spec.ClusterIPs) > 0 {
			out[aggregate.Key{Namespace: s.Namespace, Name: s.Labels[objects.LabelServiceName]}] = s.Spec.ClusterIPs
		}
	}
	return out
}

// importStates is what objects.Compute reads per import besides the
// aggregate: the sources' endpoints and their version, the member's
// ClusterIPs, and whether every member holds it (ready; Ready on its
// exports).
func importStates(agg aggregate.Result, endpoints map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice,
	ips map[aggregate.Key][]string, ready map[aggregate.Key]bool, versions map[aggregate.Key]uint64) map[aggregate.Key]objects.ImportState {
	out := make(map[aggregate.Key]objects.ImportState, len(agg.Imports))
	for _, imp := range agg.Imports {
		out[imp.Key] = objects.ImportState{Endpoints: endpoints[imp.Key], ClusterIPs: ips[imp.Key], Written: ready[imp.Key],
			Version: versions[imp.Key]}
	}
	return out
}

// readyExports says of each import whether Ready on the member's exports
// of it is True: written in every member, or not known to be
// (writtenUnknown) while the member's export of it (in exports) says
// Ready already. The member may have written that Ready itself; it is
// kept only until this process has written every member.
func readyExports(exports []*mcsv1beta1.ServiceExport, imports map[aggregate.Key]written) map[aggregate.Key]bool {
	out := make(map[aggregate.Key]bool, len(imports))
	for k, w := range imports {
		out[k] = w == writtenAll
	}
	for _, e := range exports {
		k := aggregate.Key{Namespace: e.Namespace, Name: e.Name}
		if imports[k] == writtenUnknown && meta.IsStatusConditionTrue(e.Status.Conditions, string(aggregate.ConditionReady)) {
			out[k] = true
		}
	}
	return out
}

// contractWant is what a member's clusterset contract slices should be:
// the slices of the imports built, and the names of the slices of the
// imports settled (dnsMemo), held as they are.
type contractWant struct {
	slices []*discoveryv1.EndpointSlice
	kept   map[string]bool
	built  []builtContract
	// next is the memo of the next write: the settled imports' so far.
	next map[aggregate.Key]*dnsKnown
}

// builtContract is one import whose contract slices were built, and from
// what.
type builtContract struct {
	imp       aggregate.Import
	endpoints map[string][]*discoveryv1.EndpointSlice
	version   uint64
	ips       []string
	names     []string
}

// clusterSetSlices are the contract slices of the member's imports: a
// ClusterSetIP import answers the member's own ClusterSetIPs, a Headless
// one every source's ready endpoints, checked as serve checks them. An
// import that memo (nil: none) holds settled, against held (the member's
// contract slices), is not built: its slices are kept as they are. A
// Headless import holds the sources the member reaches (reach) only: a
// pod of another network is not reachable at its address.
func (c *Reconciler) clusterSetSlices(memo *dnsMemo, objs objects.Objects, agg aggregate.Result,
	endpoints map[aggregate.Key]map[string][]*discoveryv1.EndpointSlice, versions map[aggregate.Key]uint64, ips map[aggregate.Key][]string,
	held []*discoveryv1.EndpointSlice, reach func(cluster string) bool) contractWant {
	have := make(map[string]*discoveryv1.EndpointSlice, len(held))
	for _, s := range held {
		have[s.Name] = s
	}
	want := contractWant{kept: map[string]bool{}, next: map[aggregate.Key]*dnsKnown{}}
	// Every import of the member is in Digests, built or skipped.
	for _, imp := range agg.Imports {
		if _, ok := objs.Digests[imp.Key]; !ok {
			continue
		}
		var importIPs []string
		eps, version := endpoints[imp.Key], versions[imp.Key]
		if imp.Type != aggregate.ImportHeadless {
			importIPs = ips[imp.Key]
		} else if part, partEps := reachable(imp, eps, reach); len(part.Clusters) < len(imp.Clusters) {
			// Some sources left out: not the import the version is of.
			imp, eps, version = part, partEps, 0
		}
		if k, ok := memo.settled(imp, eps, version, importIPs, have); ok {
			for name := range k.held {
				want.kept[name] = true
			}
			want.next[imp.Key] = k
			continue
		}
		sl := c.importSlices(imp, eps, importIPs)
		b := builtContract{imp: imp, endpoints: eps, version: version, ips: importIPs}
		for _, s := range sl {
			b.names = append(b.names, s.Name)
		}
		want.slices = append(want.slices, sl...)
		want.built = append(want.built, b)
	}
	return want
}

// reachable is imp with only the sources reach says the member reaches,
// and their endpoints; imp and endpoints as they are when it reaches all.
func reachable(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice,
	reach func(string) bool) (aggregate.Import, map[string][]*discoveryv1.EndpointSlice) {
	if !slices.ContainsFunc(imp.Clusters, func(id string) bool { return !reach(id) }) {
		return imp, endpoints
	}
	out := map[string][]*discoveryv1.EndpointSlice{}
	var clusters []string
	for _, id := range imp.Clusters {
		if reach(id) {
			clusters = append(clusters, id)
			out[id] = endpoints[id]
		}
	}
	imp.Clusters = clusters
	return imp, out
}

// importSlices are the contract slices of one import.
func (c *Reconciler) importSlices(imp aggregate.Import, endpoints map[string][]*discoveryv1.EndpointSlice, ips []string) []*discoveryv1.EndpointSlice {
	ci := contract.ClusterSetImport{Namespace: imp.Namespace, Name: imp.Name, Type: contract.ImportType(imp.Type)}
	if imp.Type == aggregate.ImportHeadless {
		for _, id := range imp.Clusters {
			eps := contract.ReadyEndpoints(endpoints[id], c.cfg.AllowedCIDRs, c.cfg.ClusterSetZone)
			ci.Sources = append(ci.Sources, contract.ClusterSetSource{Cluster: id, Endpoints: eps})
		}
	} else {
		ci.IPs = ips
		for _, p := range imp.Ports {
			ci.Ports = append(ci.Ports, contract.Port{Name: p.Name, Protocol: corev1Protocol(p.Protocol), Port: p.Port})
		}
	}
	out := contract.BuildClusterSet(ci, c.cfg.ClusterSetZone)
	for _, s := range out {
		s.Namespace = c.cfg.SliceNamespace
	}
	return out
}

// writeClusterSetSlices makes the member's slice namespace (client, of
// the Cluster key), holding existing, hold want, and no other clusterset
// slice; memo (nil: none) learns which held slices equal those built.
func (c *Reconciler) writeClusterSetSlices(ctx context.Context, key string, client apply.SliceClient, memo *dnsMemo,
	existing []*discoveryv1.EndpointSlice, want contractWant) error {
	// Only the controller's own clusterset slices are compared and
	// deleted, whatever the member's API server answered; labels and
	// annotations others put on them are kept.
	p := write.Diff(want.slices, existing, write.Kind[*discoveryv1.EndpointSlice]{
		Ours:  contract.IsOwnClusterSet,
		Same:  contract.SameSlice,
		Merge: contract.MergeSlice,
		Keep:  func(s *discoveryv1.EndpointSlice) bool { return want.kept[s.Name] },
	})
	same := make(map[string]*discoveryv1.EndpointSlice, len(p.Same))
	for _, s := range p.Same {
		same[s.Name] = s
	}
	if memo != nil {
		// A slice written is known equal once its next write finds it so.
		for _, b := range want.built {
			held := make(map[string]*discoveryv1.EndpointSlice, len(b.names))
			for _, name := range b.names {
				held[name] = same[name]
			}
			memo.know(want.next, b.imp, b.endpoints, b.version, b.ips, held)
		}
		memo.imports = want.next
	}
	var errs write.Errors
	failed := func(verb, name string, err error) {
		if err != nil {
			errs.Add(fmt.Errorf("%s EndpointSlice %s/%s in %s: %w", verb, c.cfg.SliceNamespace, name, key, err))
		}
	}
	for _, s := range p.NotOurs {
		failed("write", s.Name, write.NotOurs(s))
	}
	// A name taken by a slice of the controller's not seen yet is written
	// at the next sync; by any other, it is refused (write.Create).
	write.Each(len(p.Create), func(i int) {
		_, _, err := write.Create(ctx, client, p.Create[i], contract.IsOwnClusterSet)
		failed("write", p.Create[i].Name, err)
	})
	write.Each(len(p.Update), func(i int) {
		_, err := write.Update(ctx, client, p.Update[i])
		failed("write", p.Update[i].Name, err)
	})
	write.Each(len(p.Delete), func(i int) {
		failed("delete", p.Delete[i].Name, write.Delete(ctx, client, p.Delete[i]))
	})
	return errs.Err()
}

func corev1Protocol(p string) corev1.Protocol { return corev1.Protocol(p) }
