package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xcc-dns/xcc-dns/internal/api/v1alpha1"
)

// DefaultGatewaysTTL is the record TTL, in seconds, of a multi-cluster name
// whose slices set none (GatewayDNS spec.gatewaysTTL unset). A name stops
// answering a gateway that went unhealthy after detection + propagation +
// TTL: both DNS caches on the way (ours, and the cluster DNS's `cache 30`,
// which keeps an answer for min(TTL, 30) s) count the one TTL down, so
// neither holds the old answer longer than the TTL after serve changes it.
// 5 s is the lowest TTL the API accepts, as Lighthouse's; it costs each
// cluster DNS one miss per name and type every 5 s.
const DefaultGatewaysTTL = v1alpha1.DefaultGatewaysTTL

// Policy says which healthy sources of a multi-cluster name the DNS of
// each cluster answers. The values are those of the locality annotation.
type Policy string

const (
	// PolicyAll answers every healthy source.
	PolicyAll Policy = "all"
	// PolicyLocal answers the asking cluster's own source while it is
	// healthy, otherwise every healthy source.
	PolicyLocal Policy = "local"
	// PolicyFailover answers the first healthy source of Order only; when
	// none in Order is healthy, every healthy source not in Order.
	PolicyFailover Policy = "failover"
)

// MaxFailoverOrder bounds the clusters of a failover order (the API's).
const MaxFailoverOrder = v1alpha1.MaxFailoverOrder

// Locality is a GatewayDNS's policy as the slices of its multi-cluster
// names carry it. The zero value is PolicyAll.
type Locality struct {
	Policy Policy
	// Order is the failover order, cluster names; only with PolicyFailover.
	Order []string
}

// LocalityFromAPI turns spec.locality into what the slices carry. nil is
// PolicyAll. The API server validates the same rules; this refuses what it
// would have, so the controller never writes a slice serve refuses.
func LocalityFromAPI(l *v1alpha1.Locality) (Locality, error) {
	if l == nil {
		return Locality{Policy: PolicyAll}, nil
	}
	var loc Locality
	switch l.Policy {
	case "", v1alpha1.LocalityAll:
		loc.Policy = PolicyAll
	case v1alpha1.LocalityLocal:
		loc.Policy = PolicyLocal
	case v1alpha1.LocalityFailover:
		loc.Policy = PolicyFailover
	default:
		return Locality{}, fmt.Errorf("spec.locality.policy %q: want %s, %s or %s", l.Policy, v1alpha1.LocalityAll, v1alpha1.LocalityLocal, v1alpha1.LocalityFailover)
	}
	loc.Order = slices.Clone(l.FailoverOrder)
	return loc, loc.validate()
}

func (l Locality) validate() error {
	switch l.Policy {
	case PolicyAll, PolicyLocal:
		if len(l.Order) > 0 {
			return fmt.Errorf("a failover order is only for policy %s, not %s", PolicyFailover, l.Policy)
		}
	case PolicyFailover:
		if len(l.Order) == 0 {
			return fmt.Errorf("policy %s needs a failover order", PolicyFailover)
		}
	default:
		return fmt.Errorf("policy %q: want %s, %s or %s", l.Policy, PolicyAll, PolicyLocal, PolicyFailover)
	}
	if len(l.Order) > MaxFailoverOrder {
		return fmt.Errorf("failover order of %d clusters, more than %d", len(l.Order), MaxFailoverOrder)
	}
	seen := map[string]bool{}
	for _, c := range l.Order {
		if err := ValidateLabel(c); err != nil {
			return fmt.Errorf("failover order: cluster %q: %w", c, err)
		}
		if seen[c] {
			return fmt.Errorf("failover order: cluster %q twice", c)
		}
		seen[c] = true
	}
	return nil
}

// annotate writes l onto a slice's annotations.
func (l Locality) annotate(a map[string]string) {
	a[AnnotationLocality] = string(cmpPolicy(l.Policy))
	if len(l.Order) > 0 {
		a[AnnotationFailoverOrder] = strings.Join(l.Order, ",")
	}
}

func cmpPolicy(p Policy) Policy {
	if p == "" {
		return PolicyAll
	}
	return p
}

// parseLocality reads the locality annotations of a multi-cluster slice.
// No locality annotation is PolicyAll; anything it cannot read exactly is
// refused, never guessed.
func parseLocality(a map[string]string) (Locality, error) {
	var l Locality
	p, set := a[AnnotationLocality]
	if !set {
		p = string(PolicyAll)
	}
	l.Policy = Policy(p)
	if order, set := a[AnnotationFailoverOrder]; set {
		l.Order = strings.Split(order, ",")
	}
	if err := l.validate(); err != nil {
		return Locality{}, fmt.Errorf("annotations %s=%q %s=%q: %w", AnnotationLocality, a[AnnotationLocality], AnnotationFailoverOrder, a[AnnotationFailoverOrder], err)
	}
	return l, nil
}

// Equal reports whether two localities are the same policy.
func (l Locality) Equal(o Locality) bool {
	return cmpPolicy(l.Policy) == cmpPolicy(o.Policy) && slices.Equal(l.Order, o.Order)
}

// SourceHosts is one source cluster of a multi-cluster name: the hosts of
// its slices (every family), those of ready endpoints and the others.
type SourceHosts struct {
	Cluster        string
	Ready, Unready []string
}

// Healthy reports whether the source counts as healthy: it has a ready
// address or target.
func (s SourceHosts) Healthy() bool { return len(s.Ready) > 0 }

// Answer is what the DNS of one cluster answers for a multi-cluster name.
type Answer struct {
	// Hosts are the records of the name: addresses, or one CNAME target.
	Hosts []string
	// Selected are the source clusters the policy picked, in its order.
	Selected []string
	// Fallback is true when no source is healthy: every published source
	// is answered, ready or not, rather than none.
	Fallback bool
}

// Select applies the policy loc to the sources of a multi-cluster name, as
// the DNS of a cluster that is the Clusters self (empty when it is not one
// of the name's namespace, or not known) answers it:
//
//   - H are the healthy sources. When H is empty, every published source
//     is answered (Fallback): health reported wrongly everywhere at once,
//     such as the management cluster losing sight of all clusters, must
//     not take the name away.
//   - all: H. local: the sources of self in H, if any, else H.
//     failover: the first of Order in H; if none of Order is, H without
//     Order (every healthy source the order does not list).
//   - The records are the addresses of the selected sources. A name
//     cannot hold a CNAME beside addresses, and serve does not resolve a
//     load balancer's hostname itself (its addresses change behind it), so
//     a hostname source contributes only when no selected source has an
//     address: then the name is a CNAME to the first selected source's
//     first target, in the policy's order (by cluster name for all and
//     local).
//
// sources must be sorted by Cluster; Select does not change them.
func Select(loc Locality, sources []SourceHosts, self []string) Answer {
	var healthy []SourceHosts
	for _, s := range sources {
		if s.Healthy() {
			healthy = append(healthy, s)
		}
	}
	var a Answer
	var picked []SourceHosts
	switch {
	case len(healthy) == 0:
		a.Fallback = true
		for _, s := range sources {
			if len(s.Ready)+len(s.Unready) > 0 {
				picked = append(picked, SourceHosts{Cluster: s.Cluster, Ready: slices.Concat(s.Ready, s.Unready)})
			}
		}
	case cmpPolicy(loc.Policy) == PolicyLocal:
		for _, s := range healthy {
			if slices.Contains(self, s.Cluster) {
				picked = append(picked, s)
			}
		}
		if len(picked) == 0 {
			picked = healthy
		}
	case loc.Policy == PolicyFailover:
		for _, c := range loc.Order {
			if i := slices.IndexFunc(healthy, func(s SourceHosts) bool { return s.Cluster == c }); i >= 0 {
				picked = healthy[i : i+1]
				break
			}
		}
		if len(picked) == 0 {
			for _, s := range healthy {
				if !slices.Contains(loc.Order, s.Cluster) {
					picked = append(picked, s)
				}
			}
		}
	default:
		picked = healthy
	}
	seen := map[string]bool{}
	// cname is the CNAME target of the first picked hostname source.
	var cname string
	for _, s := range picked {
		a.Selected = append(a.Selected, s.Cluster)
		for _, h := range s.Ready {
			if _, err := netip.ParseAddr(h); err != nil {
				if cname == "" {
					cname = h
				}
				continue
			}
			if !seen[h] {
				seen[h] = true
				a.Hosts = append(a.Hosts, h)
			}
		}
	}
	if len(a.Hosts) == 0 && cname != "" {
		a.Hosts = []string{cname}
	}
	return a
}

// Answered returns the source clusters that the DNS of at least one
// cluster answers (for GatewayDNS status), given the Clusters each target
// cluster is (its self marker). A source answered nowhere is either
// unhealthy, not first in a failover order, or a hostname beside
// addresses.
func Answered(loc Locality, sources []SourceHosts, selves [][]string) map[string]bool {
	out := map[string]bool{}
	add := func(a Answer) {
		hosts := map[string]bool{}
		for _, h := range a.Hosts {
			hosts[h] = true
		}
		for _, s := range sources {
			if !slices.Contains(a.Selected, s.Cluster) {
				continue
			}
			for _, h := range slices.Concat(s.Ready, s.Unready) {
				if hosts[h] {
					out[s.Cluster] = true
				}
			}
		}
	}
	add(Select(loc, sources, nil))
	if cmpPolicy(loc.Policy) == PolicyLocal {
		for _, self := range selves {
			add(Select(loc, sources, self))
		}
	}
	return out
}

// Self is what the self marker says: the cluster holding it is the
// Clusters of Namespace (several when Clusters share one destination: they
// reach the same API server and slice namespace).
type Self struct {
	Namespace string
	Clusters  []string
}

// SelfSliceName is the name of the self marker of namespace in the slice
// namespace: serve finds it by name, so there is one per namespace.
func SelfSliceName(namespace string) string {
	sum := sha256.Sum256([]byte(namespace))
	suffix := "-" + hex.EncodeToString(sum[:])[:sliceNameHashChars]
	prefix := "self-" + namespace
	if max := maxSliceNameLength - len(suffix); len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-")
	}
	return prefix + suffix
}

// BuildSelf returns the self marker the controller writes into a target
// cluster: an EndpointSlice without endpoints that tells that cluster's
// serve which Clusters of namespace it is, so it can put its own gateway
// first (PolicyLocal). An EndpointSlice, not a ConfigMap, so that neither
// side needs a right it does not have already: serve reads and the
// controller writes EndpointSlices in the slice namespace. It has no
// hostname annotation, so it publishes no name. Without a namespace.
func BuildSelf(self Self) *discoveryv1.EndpointSlice {
	clusters := slices.Clone(self.Clusters)
	slices.Sort(clusters)
	clusters = slices.Compact(clusters)
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: SelfSliceName(self.Namespace),
			Labels: map[string]string{
				LabelManagedBy: ManagedByValue,
				LabelRecord:    string(KindSelf),
			},
			Annotations: map[string]string{
				AnnotationSelfNamespace: self.Namespace,
				AnnotationSelfClusters:  strings.Join(clusters, ","),
			},
		},
		AddressType: discoveryv1.AddressTypeFQDN,
	}
}

// ParseSelf reads a self marker. It is refused whole when its namespace
// is not the one its name is for, or a cluster is not a valid label.
func ParseSelf(slice *discoveryv1.EndpointSlice) (Self, error) {
	ns := slice.Annotations[AnnotationSelfNamespace]
	if err := ValidateLabel(ns); err != nil {
		return Self{}, fmt.Errorf("self marker %s: annotation %s: %w", slice.Name, AnnotationSelfNamespace, err)
	}
	if slice.Name != SelfSliceName(ns) {
		return Self{}, fmt.Errorf("self marker %s: named for another namespace than %q (want %s)", slice.Name, ns, SelfSliceName(ns))
	}
	s := Self{Namespace: ns}
	for c := range strings.SplitSeq(slice.Annotations[AnnotationSelfClusters], ",") {
		if err := ValidateLabel(c); err != nil {
			return Self{}, fmt.Errorf("self marker %s: annotation %s: %w", slice.Name, AnnotationSelfClusters, err)
		}
		s.Clusters = append(s.Clusters, c)
	}
	return s, nil
}
