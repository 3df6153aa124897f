package objects

import (
	"fmt"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/xcc-dns/xcc-dns/internal/cidr"
	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/mcs/aggregate"
	"github.com/xcc-dns/xcc-dns/internal/printable"
)

const (
	// maxRefusedShown is how many refused addresses an export's Valid
	// message names; the rest are counted.
	maxRefusedShown = 3
	// maxRefusedText bounds the text of each one shown: the address is
	// the member's, of any length.
	maxRefusedText = 160
)

// ReasonPending is Ready's reason while the import is not yet written in
// every reachable member: the MCS API's word.
const ReasonPending = string(mcsv1beta1.ServiceExportReasonPending)

// exportStatuses are the conditions of the member's own exports, in the
// aggregator's order (namespace/name).
func exportStatuses(in Input) []ExportStatus {
	var out []ExportStatus
	for _, e := range in.Result.Exports {
		if e.Cluster != in.Cluster {
			continue
		}
		st := ExportStatus{Namespace: e.Namespace, Name: e.Name}
		refused := refusedAddresses(in.Imports[e.Key].Endpoints[in.Cluster], in.AllowedCIDRs)
		for _, c := range e.Conditions {
			msg := c.Message
			if c.Type == aggregate.ConditionValid && c.Status == aggregate.StatusTrue {
				msg += refused
			}
			mc := metav1.Condition{
				Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: string(c.Reason),
				Message: aggregate.CutMessage(msg), // as the cache keeps it (aggregate.ForCache)
			}
			if c.Type == aggregate.ConditionReady && c.Status == aggregate.StatusTrue && !in.Imports[e.Key].Written {
				mc.Status, mc.Reason = metav1.ConditionFalse, ReasonPending
				mc.Message = fmt.Sprintf("the import %s/%s is not yet written in every member", e.Namespace, e.Name)
			}
			st.Conditions = append(st.Conditions, mc)
		}
		if c := in.Networks.crossNetwork(in.Cluster, e.Key, func() aggregate.ImportType { return importType(in.Result, e.Key) }); c != nil {
			st.Conditions = append(st.Conditions, *c)
		}
		out = append(out, st)
	}
	return out
}

// refusedAddresses says, for the Valid message of an export, how many
// addresses of its ready endpoints (in, the member's own slices of the
// exported Service) no member imports (contract.EndpointAddress: cloud
// metadata, loopback, link-local, outside allowed, ...) and the first
// few, escaped and cut; "" when none is. Without it they were only
// logged by the controller, which the member's operator cannot read.
func refusedAddresses(in []*discoveryv1.EndpointSlice, allowed cidr.List) string {
	n := 0
	var shown []string
	for _, s := range sortedSlices(in) {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue // the whole slice is refused, not an address
		}
		for _, ep := range servingOnly(s).Endpoints {
			if !ptr.Deref(ep.Conditions.Ready, true) || ptr.Deref(ep.Conditions.Terminating, false) || len(ep.Addresses) == 0 {
				continue
			}
			if _, err := contract.EndpointAddress(s.AddressType, ep.Addresses[0], allowed); err != nil {
				n++
				if len(shown) < maxRefusedShown {
					shown = append(shown, printable.Cut(err.Error(), maxRefusedText))
				}
			}
		}
	}
	if n == 0 {
		return ""
	}
	msg := fmt.Sprintf("; %d endpoint addresses refused, not imported: %s", n, strings.Join(shown, "; "))
	if more := n - len(shown); more > 0 {
		msg += fmt.Sprintf("; and %d more", more)
	}
	return msg
}

// importStatus is the status of imp's ServiceImport in a member where the
// import has ips (ClusterSetIP only). EndpointSliceObjects is Present:
// the writer writes the slices of every import it writes, and says
// Absent itself when it cannot. cuts are the notes of the sources whose
// endpoints the member caps left out, added to Ready's message.
func importStatus(imp aggregate.Import, ips []string, cuts []string) mcsv1beta1.ServiceImportStatus {
	ready := importReady(imp, ips)
	if len(cuts) > 0 {
		ready.Message += "; " + strings.Join(cuts, "; ")
	}
	st := mcsv1beta1.ServiceImportStatus{
		EndpointSliceObjects: mcsv1beta1.EndpointSliceObjectsPresent,
		Conditions:           []metav1.Condition{ready},
	}
	for _, c := range imp.Clusters {
		st.Clusters = append(st.Clusters, mcsv1beta1.ClusterStatus{Cluster: c})
	}
	return st
}

// importReady is the Ready condition of imp's ServiceImport. A Headless
// import is usable once written; a ClusterSetIP import only once the
// member's API server has allocated its derived Service an address, which
// is then in spec.ips. A member always allocates one of its families to a
// PreferDualStack Service or refuses to create it, so the reason
// IPFamilyNotSupported has no case here.
func importReady(imp aggregate.Import, ips []string) metav1.Condition {
	c := metav1.Condition{
		Type:   string(mcsv1beta1.ServiceImportConditionReady),
		Status: metav1.ConditionTrue,
		Reason: string(mcsv1beta1.ServiceImportReasonReady),
	}
	derived := imp.Namespace + "/" + DerivedServiceName(imp.Namespace, imp.Name)
	switch {
	case imp.Type == aggregate.ImportHeadless:
		c.Message = "the Headless import is written in this cluster"
	case len(ips) == 0:
		c.Status, c.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceImportReasonPending)
		c.Message = fmt.Sprintf("awaiting the ClusterIP this cluster's API server allocates to the derived Service %s", derived)
	default:
		c.Message = fmt.Sprintf("ClusterSetIP %s, the ClusterIP of the derived Service %s", strings.Join(ips, ", "), derived)
	}
	return c
}

// importType is the type of the import of k in r; ClusterSetIP if there
// is none (an invalid export makes none). Asked only of a clusterset
// with networks.
func importType(r aggregate.Result, k aggregate.Key) aggregate.ImportType {
	for _, imp := range r.Imports {
		if imp.Key == k {
			return imp.Type
		}
	}
	return aggregate.ImportClusterSetIP
}
