package clusterset

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	xccv1alpha1 "github.com/xcc-dns/xcc-dns/internal/api/xccdns/v1alpha1"
	"github.com/xcc-dns/xcc-dns/internal/controller/mgmt"
	"github.com/xcc-dns/xcc-dns/internal/controller/workload"
	"github.com/xcc-dns/xcc-dns/internal/mcs/member"
	"github.com/xcc-dns/xcc-dns/internal/watch"
)

// setMember is one member of a ClusterSet and its connection; cluster is
// nil when the controller has no client for it (its kubeconfig Secret is
// missing or refused), which status says in access.
type setMember struct {
	member.Member
	cluster *workload.Cluster
	// uid is the Cluster's, for the id it holds.
	uid types.UID
	// registered is the Cluster's creation time, set by the management
	// API server: no export of the member is ranked older (seenOf).
	registered time.Time
	access     string
	// network is the Cluster's label xcc-dns.io/network: "" unset.
	network string
	// idKnown: the member's cluster id property has been read.
	idKnown bool
	// settled: so have those of every older selected Cluster, which
	// might ask for the same id; only then is the member's id held.
	settled bool
	// destUnknown: its slice namespace is not read yet, so whether another
	// ClusterSet holds its API server is not known; it is not written.
	destUnknown bool
}

// membership resolves which Clusters of cs's namespace are its members,
// with their cluster ids (package member), and connects to each for
// user. A member that cannot be reached is still a member: its last
// exports are kept. others are the Clusters (namespace/name) that
// another ClusterSet has.
//
// A ClusterSet being deleted keeps its members until its finalizer goes:
// a newer one that selects them too takes them only once the older's
// removal is done, so the removal never deletes what the newer wrote.
func (c *Reconciler) membership(cs *xccv1alpha1.ClusterSet, mem *setMemory, user string) (member.Result, []setMember, map[string]bool, error) {
	setObjs, err := c.informer.GetIndexer().ByIndex(cache.NamespaceIndex, cs.Namespace)
	if err != nil {
		return member.Result{}, nil, nil, fmt.Errorf("list ClusterSets in %q: %w", cs.Namespace, err)
	}
	var sets []member.ClusterSet
	for _, o := range setObjs {
		other, err := decode(o)
		if err != nil {
			continue
		}
		sets = append(sets, member.ClusterSet{Name: other.Name, Created: other.CreationTimestamp.Time, Selector: other.Spec.ClusterSelector,
			Deleting: other.DeletionTimestamp != nil})
	}
	clusterObjs, err := c.cfg.Clusters.GetIndexer().ByIndex(cache.NamespaceIndex, cs.Namespace)
	if err != nil {
		return member.Result{}, nil, nil, fmt.Errorf("list clusters in %q: %w", cs.Namespace, err)
	}
	access := map[string]setMember{}
	var clusters []member.Cluster
	for _, o := range clusterObjs {
		u, ok := watch.Unwrap(o).(*unstructured.Unstructured)
		if !ok || u.GetDeletionTimestamp() != nil {
			continue
		}
		mc := member.Cluster{Name: u.GetName(), Labels: u.GetLabels(), Created: u.GetCreationTimestamp().Time, Installed: true}
		if h, ok := mem.held[cs.Namespace+"/"+u.GetName()]; ok && h.uid == u.GetUID() {
			mc.HeldID = h.id
		}
		if selects(cs, u.GetLabels()) {
			sm, err := c.connect(cs.Namespace, u.GetName(), user)
			if err != nil {
				return member.Result{}, nil, nil, err
			}
			sm.uid, sm.registered = u.GetUID(), u.GetCreationTimestamp().UTC()
			sm.network = u.GetLabels()[xccv1alpha1.LabelNetwork]
			if sm.cluster != nil {
				if _, has, synced := sm.cluster.SliceNamespace(c.cfg.SliceNamespace); synced {
					mc.Installed = has
				}
				// Until its id property is known a member is not read:
				// taking its name meanwhile would rename its pods twice.
				mc.ClusterIDProperty, sm.idKnown = c.cfg.Workloads.ClusterProperty(sm.cluster)
			}
			access[mc.Name] = sm
		}
		clusters = append(clusters, mc)
	}
	settle(clusters, access)
	var mine member.Result
	others := map[string]bool{}
	for _, r := range member.Resolve(sets, clusters) {
		if r.Name == cs.Name {
			mine = r
			continue
		}
		for _, m := range r.Members {
			others[cs.Namespace+"/"+m.Cluster] = true
		}
	}
	members := make([]setMember, 0, len(mine.Members))
	for _, m := range mine.Members {
		sm := access[m.Cluster]
		sm.Member = m
		members = append(members, sm)
	}
	return mine, members, others, nil
}

// settle marks each selected Cluster (in access) settled when its id
// property and those of every older selected Cluster have been read:
// until then an older Cluster may still ask for the same id, and which
// of the two holds it would depend on whose property was read first.
func settle(clusters []member.Cluster, access map[string]setMember) {
	order := slices.Clone(clusters)
	slices.SortStableFunc(order, func(a, b member.Cluster) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	known := true
	for _, c := range order {
		sm, ok := access[c.Name]
		if !ok {
			continue
		}
		known = known && sm.idKnown
		sm.settled = known
		access[c.Name] = sm
	}
}

// holdIDs records the id each member of res holds once it is settled, and drops that of every other Cluster: a member keeps the id it
// joined with until it leaves or is refused. A member refused for asking for another member's
// id gets a Warning Event: it held one, so it was written under it, and
// its objects are now removed from every member.
func (c *Reconciler) holdIDs(cs *xccv1alpha1.ClusterSet, mem *setMemory, res member.Result, members []setMember) {
	keep := map[string]bool{}
	for _, m := range members {
		key := cs.Namespace + "/" + m.Cluster
		keep[key] = true
		// Until its property is read a member stands under its name for
		// now: that is no id it holds.
		if m.settled {
			mem.held[key] = heldID{uid: m.uid, id: m.ClusterID}
		}
	}
	for _, r := range res.Refused {
		key := cs.Namespace + "/" + r.Cluster
		if h, ok := mem.held[key]; ok && r.Reason == xccv1alpha1.ReasonClusterIDConflict {
			c.cfg.Recorder.Eventf(cs, corev1.EventTypeWarning, string(xccv1alpha1.ReasonClusterIDConflict),
				"Cluster %s, member with cluster id %q, refused: %s", r.Cluster, h.id, r.Message)
		}
	}
	for key := range mem.held {
		if !keep[key] {
			delete(mem.held, key)
		}
	}
}

// selects reports whether cs's selector picks a Cluster of these labels;
// a selector that does not parse picks none (member reports it).
func selects(cs *xccv1alpha1.ClusterSet, l map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(&cs.Spec.ClusterSelector)
	return err == nil && sel.Matches(labels.Set(l))
}

// connect returns the connection to the Cluster namespace/name for user,
// or why there is none.
func (c *Reconciler) connect(namespace, name, user string) (setMember, error) {
	acc, err := mgmt.Connect(c.cfg.Secrets, c.cfg.Workloads, namespace, name, user)
	if err != nil {
		return setMember{}, err
	}
	if acc.Cluster == nil {
		return setMember{access: fmt.Sprintf("%s: %s", acc.Reason, acc.Message)}, nil
	}
	return setMember{cluster: acc.Cluster}, nil
}
