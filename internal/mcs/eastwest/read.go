package eastwest

import (
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/mcs/objects"
	"github.com/xcc-dns/xcc-dns/internal/printable"
)

// maxAddresses bounds the gateway addresses taken: the member's word,
// and every importer of another network gets each one per import.
const maxAddresses = 16

// setPrefix begins the name of an export's ListenerSet.
const setPrefix = "xcc-"

// Ref names the operator's east-west Gateway in a member.
type Ref struct{ Namespace, Name string }

// SetName is the name of the controller's ListenerSet of export svc, in
// the export's namespace.
func SetName(svc string) string { return setPrefix + svc }

// SetLabels are the labels of the controller's ListenerSet of export svc:
// those of the controller's objects, as the importers' objects have.
func SetLabels(svc string) map[string]string {
	return map[string]string{objects.LabelManagedBy: objects.ManagedByValue, objects.LabelServiceName: svc}
}

// Result is what importers of other networks get of one member's gateway.
type Result struct {
	Gateway objects.Gateway
	// Refused says, per export, which of its ports get no listener port
	// and why: the export's CrossNetwork condition.
	Refused map[aggregate.Key][]string
}

// Read is what the importers of other networks get of the gateway ref of
// one member, read there as gw (nil: none) with the ListenerSets sets, for
// the member's exports and their import ports.
func Read(ref Ref, gw *gatewayv1.Gateway, sets []*gatewayv1.ListenerSet, exports map[aggregate.Key][]aggregate.Port) Result {
	out := Result{Gateway: objects.Gateway{Ports: map[aggregate.Key][]objects.GatewayPort{}}, Refused: map[aggregate.Key][]string{}}
	if gw != nil && gw.Namespace == ref.Namespace && gw.Name == ref.Name {
		out.Gateway.Programmed = current(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed), gw.Generation)
		out.Gateway.Addresses = addresses(gw.Status.Addresses)
	}
	for k, ports := range exports {
		set := ownSet(ref, k, sets)
		for _, p := range ports {
			if KindOf(p) == KindNone {
				out.Refused[k] = append(out.Refused[k], fmt.Sprintf("port %s (%s %d) does not cross networks: only TCP does", p.Name, p.Protocol, p.Port))
			}
		}
		if set == nil {
			out.Refused[k] = append(out.Refused[k], fmt.Sprintf("no ListenerSet %s/%s of the gateway %s/%s yet", k.Namespace, SetName(k.Name), ref.Namespace, ref.Name))
			continue
		}
		if c := meta(set.Status.Conditions, string(gatewayv1.ListenerSetConditionAccepted)); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != set.Generation {
			out.Refused[k] = append(out.Refused[k], "ListenerSet not Accepted by the gateway: "+message(c))
			continue
		}
		gp, refused := setPorts(set, ports)
		if len(gp) > 0 {
			out.Gateway.Ports[k] = gp
		}
		out.Refused[k] = append(out.Refused[k], refused...)
	}
	for k, r := range out.Refused {
		if len(r) == 0 {
			delete(out.Refused, k)
		}
	}
	return out
}

// ownSet is the controller's ListenerSet of export k whose parent is
// ref, nil if there is none: a tenant's ListenerSet is never used.
func ownSet(ref Ref, k aggregate.Key, sets []*gatewayv1.ListenerSet) *gatewayv1.ListenerSet {
	for _, s := range sets {
		if s.Namespace != k.Namespace || s.Name != SetName(k.Name) || s.Labels[objects.LabelManagedBy] != objects.ManagedByValue ||
			s.Labels[objects.LabelServiceName] != k.Name || !parentIs(ref, s) {
			continue
		}
		return s
	}
	return nil
}

// Owned are the controller's ListenerSets among sets, by export,
// whatever their parent: after the operator names another Gateway, those
// of the old one are still the controller's to remove.
func Owned(sets []*gatewayv1.ListenerSet) map[aggregate.Key]*gatewayv1.ListenerSet {
	out := map[aggregate.Key]*gatewayv1.ListenerSet{}
	for _, s := range sets {
		svc := s.Labels[objects.LabelServiceName]
		if s.Labels[objects.LabelManagedBy] == objects.ManagedByValue && svc != "" && s.Name == SetName(svc) {
			out[aggregate.Key{Namespace: s.Namespace, Name: svc}] = s
		}
	}
	return out
}

// Holds reports whether held, a ListenerSet as read, is want's as
// written: its spec and labels.
func Holds(held *gatewayv1.ListenerSet, want *Objects) bool {
	return held != nil && want != nil && want.ListenerSet != nil &&
		equality.Semantic.DeepEqual(held.Spec, want.ListenerSet.Spec) &&
		equality.Semantic.DeepEqual(held.Labels, want.ListenerSet.Labels)
}

// parentIs reports whether s's parent is the Gateway ref.
func parentIs(ref Ref, s *gatewayv1.ListenerSet) bool {
	p := s.Spec.ParentRef
	ns := s.Namespace
	if p.Namespace != nil {
		ns = string(*p.Namespace)
	}
	return string(p.Name) == ref.Name && ns == ref.Namespace &&
		(p.Kind == nil || *p.Kind == "Gateway") && (p.Group == nil || *p.Group == gatewayv1.GroupName)
}

// wantProtocol is the listener protocol of each kind.
var wantProtocol = map[Kind]gatewayv1.ProtocolType{
	KindHTTP: gatewayv1.HTTPProtocolType, KindTLS: gatewayv1.TLSProtocolType, KindTCP: gatewayv1.TCPProtocolType,
}

// setPorts are the gateway ports of the import ports whose listener in
// set is of the right protocol, accepted, programmed and not conflicted
// for the set's generation, sorted by name; and why the others are not.
func setPorts(set *gatewayv1.ListenerSet, ports []aggregate.Port) ([]objects.GatewayPort, []string) {
	var out []objects.GatewayPort
	var refused []string
	for _, p := range ports {
		kind := KindOf(p)
		if kind == KindNone {
			continue
		}
		name := ListenerName(p)
		i := slices.IndexFunc(set.Spec.Listeners, func(l gatewayv1.ListenerEntry) bool { return string(l.Name) == name })
		if i < 0 {
			refused = append(refused, fmt.Sprintf("listener %s: not in the ListenerSet yet", name))
			continue
		}
		l := set.Spec.Listeners[i]
		if l.Protocol != wantProtocol[kind] {
			refused = append(refused, fmt.Sprintf("listener %s: protocol %s, want %s", name, l.Protocol, wantProtocol[kind]))
			continue
		}
		if why := listenerNotReady(set, name); why != "" {
			refused = append(refused, fmt.Sprintf("listener %s: %s", name, why))
			continue
		}
		out = append(out, objects.GatewayPort{Name: p.Name, Protocol: p.Protocol, Port: l.Port})
	}
	slices.SortFunc(out, func(a, b objects.GatewayPort) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		return int(a.Port - b.Port)
	})
	return out, refused
}

// listenerNotReady says why listener name of set is not ready, "" when
// it is: Accepted, Programmed, not Conflicted, for the set's generation.
func listenerNotReady(set *gatewayv1.ListenerSet, name string) string {
	i := slices.IndexFunc(set.Status.Listeners, func(l gatewayv1.ListenerEntryStatus) bool { return string(l.Name) == name })
	if i < 0 {
		return "no status from the gateway yet"
	}
	conds := set.Status.Listeners[i].Conditions
	if c := meta(conds, string(gatewayv1.ListenerEntryConditionConflicted)); c != nil && c.Status != metav1.ConditionFalse {
		return "Conflicted: " + message(c)
	}
	for _, t := range []string{string(gatewayv1.ListenerEntryConditionAccepted), string(gatewayv1.ListenerEntryConditionProgrammed)} {
		if !current(conds, t, set.Generation) {
			return "not " + t + ": " + message(meta(conds, t))
		}
	}
	return ""
}

// addresses are the IP addresses among a Gateway's status addresses, at
// most maxAddresses, each once.
func addresses(in []gatewayv1.GatewayStatusAddress) []string {
	var out []string
	for _, a := range in {
		if a.Type != nil && *a.Type != gatewayv1.IPAddressType {
			continue
		}
		ip, err := netip.ParseAddr(a.Value)
		if err != nil || slices.Contains(out, ip.String()) {
			continue
		}
		if out = append(out, ip.String()); len(out) == maxAddresses {
			break
		}
	}
	return out
}

// current reports whether condition t is True for generation gen.
func current(conds []metav1.Condition, t string, gen int64) bool {
	c := meta(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// meta is condition t of conds, nil if absent.
func meta(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// maxMessage bounds a gateway's message quoted: the member's word.
const maxMessage = 256

// message is c's message, one printable line bounded as every text of a
// member is (printable.Cut), or what is missing.
func message(c *metav1.Condition) string {
	if c == nil {
		return "no condition yet"
	}
	return fmt.Sprintf("%s (%s)", c.Status, printable.Cut(c.Reason+": "+c.Message, maxMessage))
}
