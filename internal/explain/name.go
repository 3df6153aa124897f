// Package explain answers "why does this name answer this, or nothing",
// the question `xcc-syncer explain NAME [TYPE]` asks of the management
// cluster: what the name is by the grammar of its zone (its shape and
// owner, or the rule that refuses it), the GatewayDNS or ClusterSet behind
// it with the status of every cluster it depends on, the one reason in
// words an operator can act on, and where serve stores its records.
//
// Classify and Build are pure; Read gathers the facts through a Reader,
// and a fact it cannot read (forbidden, not served) is reported as
// unread rather than failing the whole explanation.
package explain

import (
	"strings"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// Config is the grammar explain reads names by: the controller's and
// serve's --domain, --clusterset-zone and --name-grants.
type Config struct {
	Zone string
	// ClusterSetZone is the zone of the Multi-Cluster Services names;
	// empty: none.
	ClusterSetZone string
	Grants         contract.Grants
}

// Family is who publishes a name, which decides what is read for it.
type Family string

// Families of names: the subtree below the zone, or the clusterset zone.
const (
	FamilyNone       Family = ""           // refused, outside the zones, put by hand, the apex
	FamilyClusters   Family = "clusters"   // a cluster's gateway and api names: the GatewayDNS selecting the cluster
	FamilyGateways   Family = "gateways"   // a GatewayDNS's gateways across clusters
	FamilyNames      Family = "names"      // a name claimed with the fqdn annotation
	FamilyServices   Family = "services"   // a GatewayDNS's headless export
	FamilyClusterSet Family = "clusterset" // a ServiceImport of a ClusterSet
)

// Name is a query name read by the grammar.
type Name struct {
	// Name is canonical: lower case, without the final dot.
	Name string `json:"name"`
	// Type is the query type asked, upper case; empty: any.
	Type string `json:"type,omitempty"`
	// Zone is the zone the name is in; empty when in neither.
	Zone string `json:"zone,omitempty"`
	// Kind is the grammar's name of its shape, Shape how docs write it.
	Kind  string `json:"kind,omitempty"`
	Shape string `json:"shape,omitempty"`
	// Refused says which rule of the grammar refuses it (NXDOMAIN before
	// the etcd plugin); empty when not refused.
	Refused string `json:"refused,omitempty"`
	// Empty: an empty non-terminal, NODATA for every type.
	Empty bool `json:"empty,omitempty"`
	// Hand: a name of no shape, which only a record put by hand answers.
	Hand bool `json:"hand,omitempty"`
	// TypeRefused says why the type asked is answered NODATA by the guard
	// at a name of this shape; empty when it is not.
	TypeRefused string `json:"typeRefused,omitempty"`
	// Stored is the name whose etcd key the DNS server reads for it (for
	// the type asked, or A when none).
	Stored string `json:"stored,omitempty"`
	Family Family `json:"family,omitempty"`
	Owner  Owner  `json:"owner"`
}

// Owner is what the labels of a name say it belongs to.
type Owner struct {
	// Namespace of the management cluster: of the Cluster and the
	// GatewayDNS (a name of the clusters, gateways, names or services
	// subtree, or of a grant).
	Namespace  string `json:"namespace,omitempty"`
	Cluster    string `json:"cluster,omitempty"`
	GatewayDNS string `json:"gatewayDNS,omitempty"`
	// Pod is the pod label of a headless pod name.
	Pod string `json:"pod,omitempty"`
	// ServiceImport is the import, <ns>/<svc>, of a clusterset name;
	// ClusterID and Hostname the labels below it.
	ServiceImport string `json:"serviceImport,omitempty"`
	ClusterID     string `json:"clusterID,omitempty"`
	Hostname      string `json:"hostname,omitempty"`
}

// Classify reads name (any case, with or without the final dot) of query
// type qtype (empty: any) by the grammar of cfg's zones, as the DNS
// server's guard does.
func Classify(name, qtype string, cfg Config) Name {
	n := Name{Name: strings.TrimSuffix(strings.ToLower(name), "."), Type: strings.ToUpper(qtype)}
	zone := skydnsrecord.CanonicalName(cfg.Zone)
	var shapes []contract.Shape
	switch {
	case inZone(n.Name, zone):
		shapes = contract.Shapes(zone, cfg.Grants)
		n.Zone = zone
	case cfg.ClusterSetZone != "" && inZone(n.Name, skydnsrecord.CanonicalName(cfg.ClusterSetZone)):
		zone = skydnsrecord.CanonicalName(cfg.ClusterSetZone)
		shapes = contract.ClusterSetShapes()
		n.Zone = zone
	default:
		return n
	}
	v := contract.ClassifyQuery(n.Name, zone, shapes)
	if v.Refused {
		n.Refused = v.Why
		return n
	}
	n.Empty = v.Empty
	qt := n.Type
	if qt == "" {
		qt = "A"
	}
	if !v.Empty {
		n.Stored = v.StoredFor(qt)
	}
	if v.Shape == nil {
		n.Hand = !v.Empty
		return n
	}
	s := v.Shape
	n.Kind, n.Shape = s.Kind, shapeDoc(*s, zone)
	if n.Type != "" && !v.Empty && !v.ReadsEtcd(n.Type) {
		switch {
		case s.SRV:
			n.TypeRefused = "a name of this shape answers SRV only"
		case s.TXT:
			n.TypeRefused = "a name of this shape answers TXT only"
		default:
			n.TypeRefused = "SRV is answered only at _<port>._<proto> names and at a clusterset service's name"
		}
	}
	n.Owner, n.Family = owner(n.Name, zone, *s, cfg.Grants)
	return n
}

// inZone reports whether name is zone or below it.
func inZone(name, zone string) bool { return name == zone || strings.HasSuffix(name, "."+zone) }

// shapeDoc writes s as docs do: *.gateway.<cluster>.<ns>.clusters.xcc.test.
func shapeDoc(s contract.Shape, zone string) string {
	parts := make([]string, 0, len(s.Labels)+2)
	if s.Wildcard {
		parts = append(parts, "*")
	}
	for _, l := range s.Labels {
		parts = append(parts, l.Text)
	}
	return strings.Join(append(parts, zone), ".")
}

// owner reads the variable labels of name, of shape s, into an Owner:
// the labels of the shape are matched from the right, so the labels a
// wildcard name has below its shape are left out.
func owner(name, zone string, s contract.Shape, grants contract.Grants) (Owner, Family) {
	rel := strings.Split(strings.TrimSuffix(name, "."+zone), ".")
	rel = rel[len(rel)-len(s.Labels):]
	vars := map[string]string{}
	for i, l := range s.Labels {
		if l.Class == contract.LabelName {
			vars[l.Text] = rel[i]
		}
	}
	var o Owner
	var f Family
	switch top := rel[len(rel)-1]; {
	case strings.HasPrefix(s.Kind, "granted name of "):
		for _, g := range grants.List() {
			if strings.HasSuffix(name, "."+g.Suffix) {
				o.Namespace = g.Namespace
			}
		}
		f = FamilyNames
	case vars["<svc>"] != "":
		o = Owner{ServiceImport: vars["<ns>"] + "/" + vars["<svc>"], ClusterID: vars["<clusterid>"], Hostname: vars["<hostname>"]}
		f = FamilyClusterSet
	case top == "clusters" || top == "gateways" || top == "names" || top == "services":
		o = Owner{Namespace: vars["<ns>"], Cluster: vars["<cluster>"], GatewayDNS: vars["<gatewaydns>"], Pod: vars["<pod>"]}
		f = Family(top)
	}
	return o, f
}
