package state

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
)

const (
	// KindClusterSet is LabelKind's value on what the controller keeps of
	// a ClusterSet: the members it wrote and each member's last read.
	KindClusterSet = "clusterset"
	// AnnotationClusterSet names the ClusterSet ("<namespace>/<name>") a
	// ConfigMap of KindClusterSet is of: its name is only a hash.
	AnnotationClusterSet = "xcc-dns.io/clusterset"
	// clusterSetPrefix starts the name of a ClusterSet's ConfigMap; a hash
	// of the ClusterSet key follows.
	clusterSetPrefix = "xcc-dns-clusterset-"
	// clusterSetKey is the ConfigMap binaryData key of the kept ClusterSet:
	// JSON, gzipped.
	clusterSetKey = "clusterset.json.gz"
	// MaxClusterSetBytes bounds what is kept for one ClusterSet, packed,
	// below a ConfigMap's 1 MiB. Past it the largest last reads are left
	// out (SaveClusterSet); the members written are always kept.
	MaxClusterSetBytes = 900 << 10
)

// ClusterSet is what the controller keeps of one ClusterSet across a
// restart. Clusters says where the ClusterSet's objects are, so they can
// be removed when it is deleted or a member leaves while no controller
// runs; Members says what each member last exported, so a member
// unreachable at the start keeps its imports in the others. Neither can
// be read back from the members: a member's admin can write any object
// there.
type ClusterSet struct {
	// UID is the ClusterSet's: Members of another UID (one deleted and
	// made again under the name) are not its members' reads.
	UID string `json:"uid"`
	// Written maps the cluster id of every member holding objects of the
	// ClusterSet to its Cluster key ("<namespace>/<name>"), as the
	// controller kept it before it kept Clusters; read, never written.
	Written map[string]string `json:"written,omitempty"`
	// Clusters are the Clusters of the ClusterSet the controller knows of,
	// by Cluster key ("<namespace>/<name>"): the id each member joined
	// with, and whether it holds objects of the ClusterSet. Keyed by
	// Cluster, not by id, so a member that changes its id, or whose id
	// another asks for, is cleaned and keeps its id.
	Clusters map[string]Cluster `json:"clusters,omitempty"`
	// Members are the last complete read of each member, by cluster id.
	Members map[string]MemberRead `json:"members,omitempty"`
}

// Cluster is what the controller keeps of one Cluster of a ClusterSet.
type Cluster struct {
	// UID is the Cluster's: a Cluster deleted and made again under its
	// name is a new member and holds no id.
	UID string `json:"uid,omitempty"`
	// ID is the cluster id the Cluster holds as a member, "" when none.
	ID string `json:"id,omitempty"`
	// Written: the Cluster may hold objects of the ClusterSet, written
	// under WrittenID; its removal must reach it.
	Written   bool   `json:"written,omitempty"`
	WrittenID string `json:"writtenID,omitempty"`
}

// MemberRead is one member's last read as the aggregation and the
// imports' endpoints need it: its exports (with their Services) and the
// EndpointSlices of each exported Service, cut to the fields read.
type MemberRead struct {
	Exports []Export `json:"exports,omitempty"`
}

// Export is one ServiceExport of a member as aggregate.Export has it
// (the cluster is the member's id), with its Service's EndpointSlices.
type Export struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
	// Seen is the earliest time the controller vouches for
	// (aggregate.Export.Seen): when it first saw the export, kept so a
	// restart does not reorder precedence.
	Seen      time.Time          `json:"seen,omitzero"`
	OverLimit bool               `json:"overLimit,omitempty"`
	Service   *aggregate.Service `json:"service,omitempty"`
	// Labels and Annotations are the export's exportedLabels and
	// exportedAnnotations as read (the cache bounds them); the aggregator
	// checks them again when it takes them back.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Slices are the EndpointSlices of the exported Service with only
	// name, address type, ports and each endpoint's addresses,
	// conditions and hostname.
	Slices []discoveryv1.EndpointSlice `json:"slices,omitempty"`
}

// ClusterSets is where what the controller keeps of each ClusterSet is,
// by ClusterSet key.
type ClusterSets interface {
	// LoadClusterSet returns what SaveClusterSet last kept for key; nil
	// when nothing is kept, and an error wrapping ErrDamaged when what is
	// kept is not valid.
	LoadClusterSet(ctx context.Context, key string) (*ClusterSet, error)
	// SaveClusterSet keeps cs for key, leaving out the largest last reads
	// while it is too large (their cluster ids are returned); nothing to
	// keep (no member written, no read) forgets key.
	SaveClusterSet(ctx context.Context, key string, cs ClusterSet) (dropped []string, err error)
	// ClusterSetKeys lists the keys something is kept for.
	ClusterSetKeys(ctx context.Context) ([]string, error)
}

// Store is all the controller keeps.
type Store interface {
	Headless
	ClusterSets
}

var _ Store = (*ConfigMaps)(nil)

// clusterSetName is the ConfigMap name of what is kept for key.
func clusterSetName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return clusterSetPrefix + hex.EncodeToString(sum[:])[:20]
}

// ErrDamaged: what a ConfigMap holds does not decode or is not valid.
var ErrDamaged = errors.New("damaged")

// LoadClusterSet implements ClusterSets. A ConfigMap of another key (a
// hash collision, a hand edit) holds nothing of key.
func (s *ConfigMaps) LoadClusterSet(ctx context.Context, key string) (*ClusterSet, error) {
	name := clusterSetName(key)
	cm, err := s.get(ctx, name, AnnotationClusterSet, key)
	if cm == nil || err != nil {
		return nil, err
	}
	cs, err := DecodeClusterSet(cm.BinaryData[clusterSetKey])
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", s.Namespace, name, clusterSetKey, err)
	}
	return cs, nil
}

// SaveClusterSet implements ClusterSets: an update, or a create when there
// is none yet.
func (s *ConfigMaps) SaveClusterSet(ctx context.Context, key string, cs ClusterSet) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	name := clusterSetName(key)
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	if len(cs.Written) == 0 && len(cs.Members) == 0 && len(cs.Clusters) == 0 {
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete ConfigMap %s/%s: %w", s.Namespace, name, err)
		}
		return nil, nil
	}
	packed, dropped, err := PackClusterSet(cs)
	if errors.Is(err, ErrTooLarge) {
		// Stale is worse than none: an old list of members would send
		// the next controller's removal to the wrong ones.
		if derr := cms.Delete(ctx, name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			return dropped, fmt.Errorf("delete ConfigMap %s/%s: %w", s.Namespace, name, derr)
		}
	}
	if err != nil {
		return dropped, fmt.Errorf("keep ClusterSet %s: %w", key, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.Namespace,
			Labels:      map[string]string{contract.LabelManagedBy: contract.ManagedByValue, LabelKind: KindClusterSet},
			Annotations: map[string]string{AnnotationClusterSet: key},
		},
		BinaryData: map[string][]byte{clusterSetKey: packed},
	}
	return dropped, s.put(ctx, cm)
}

// ClusterSetKeys implements ClusterSets, from the ConfigMaps' annotation.
func (s *ConfigMaps) ClusterSetKeys(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list, err := s.Client.CoreV1().ConfigMaps(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelKind + "=" + KindClusterSet})
	if err != nil {
		return nil, fmt.Errorf("list ConfigMaps in %s: %w", s.Namespace, err)
	}
	var keys []string
	for _, cm := range list.Items {
		if key := cm.Annotations[AnnotationClusterSet]; key != "" && cm.Name == clusterSetName(key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// put writes cm, replacing whatever is there: the one controller that
// leads is the only writer, so no resourceVersion is needed.
func (s *ConfigMaps) put(ctx context.Context, cm *corev1.ConfigMap) error {
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write ConfigMap %s/%s: %w", s.Namespace, cm.Name, err)
	}
	if s.Written != nil {
		n := 0
		for _, b := range cm.BinaryData {
			n += len(b)
		}
		s.Written(cm.Labels[LabelKind], n)
	}
	return nil
}

// EncodeClusterSet is the stored form of cs: JSON with the exports and
// slices sorted by name, so equal contents encode equally whatever order
// the informers listed them in.
func EncodeClusterSet(cs ClusterSet) ([]byte, error) {
	members := make(map[string]MemberRead, len(cs.Members))
	for id, m := range cs.Members {
		exports := slices.SortedFunc(slices.Values(m.Exports), func(a, b Export) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		for i := range exports {
			exports[i].Slices = slices.SortedFunc(slices.Values(exports[i].Slices), func(a, b discoveryv1.EndpointSlice) int {
				return cmp.Compare(a.Name, b.Name)
			})
		}
		members[id] = MemberRead{Exports: exports}
	}
	cs.Members = members
	b, err := json.Marshal(cs)
	if err != nil {
		return nil, fmt.Errorf("encode ClusterSet: %w", err)
	}
	return b, nil
}

// PackClusterSet is the gzipped stored form of cs, at most
// MaxClusterSetBytes: while it is larger, the largest member's last read
// is left out, and its cluster id returned in dropped. ErrTooLarge when
// even the members written alone are larger.
func PackClusterSet(cs ClusterSet) (packed []byte, dropped []string, err error) {
	cs.Members = maps.Clone(cs.Members)
	sizes := map[string]int{}
	for id, m := range cs.Members {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, nil, fmt.Errorf("encode the last read of member %s: %w", id, err)
		}
		sizes[id] = len(b)
	}
	// Largest first, then by id, so the same input drops the same members.
	order := slices.SortedFunc(maps.Keys(cs.Members), func(a, b string) int {
		return cmp.Or(cmp.Compare(sizes[b], sizes[a]), cmp.Compare(a, b))
	})
	for {
		data, err := EncodeClusterSet(cs)
		if err != nil {
			return nil, dropped, err
		}
		packed, err := pack(data)
		if err != nil {
			return nil, dropped, err
		}
		if len(packed) <= MaxClusterSetBytes {
			return packed, dropped, nil
		}
		if len(order) == 0 {
			return nil, dropped, fmt.Errorf("%d bytes packed, more than %d: %w", len(packed), MaxClusterSetBytes, ErrTooLarge)
		}
		delete(cs.Members, order[0])
		dropped = append(dropped, order[0])
		order = order[1:]
	}
}

// DecodeClusterSet reads what PackClusterSet wrote; ErrDamaged when it
// does not unpack, decode or validate (Validate).
func DecodeClusterSet(packed []byte) (*ClusterSet, error) {
	var cs ClusterSet
	// Read no more than a ConfigMap can hold, unpacked tenfold.
	if err := unpack(packed, 10*MaxClusterSetBytes, &cs); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if err := cs.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return &cs, nil
}

// Validate checks what the controller relies on when it takes cs back:
// cluster ids that are DNS labels (aggregate refuses an empty one),
// Cluster keys of a namespace and a name, exports named, each once.
func (cs ClusterSet) Validate() error {
	for id, key := range cs.Written {
		if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
			return fmt.Errorf("written: cluster id %q: %s", id, errs[0])
		}
		if ns, name, ok := strings.Cut(key, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("written: member %s: Cluster key %q: want <namespace>/<name>", id, key)
		}
	}
	for key, c := range cs.Clusters {
		if ns, name, ok := strings.Cut(key, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("clusters: Cluster key %q: want <namespace>/<name>", key)
		}
		for _, id := range []string{c.ID, c.WrittenID} {
			if errs := validation.IsDNS1123Label(id); id != "" && len(errs) > 0 {
				return fmt.Errorf("clusters: %s: cluster id %q: %s", key, id, errs[0])
			}
		}
	}
	for id, m := range cs.Members {
		if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
			return fmt.Errorf("members: cluster id %q: %s", id, errs[0])
		}
		seen := map[aggregate.Key]bool{}
		for _, x := range m.Exports {
			k := aggregate.Key{Namespace: x.Namespace, Name: x.Name}
			if x.Namespace == "" || x.Name == "" || seen[k] {
				return fmt.Errorf("members: member %s: export %q unnamed or twice", id, x.Namespace+"/"+x.Name)
			}
			seen[k] = true
		}
	}
	return nil
}
