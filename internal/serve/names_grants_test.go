package serve

import (
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/skydnsrecord"
)

// serve checks the operator's grants again: a slice publishes a granted
// name only for the namespace it is granted to, and only when serve has
// the grant too.
func TestSliceRecordsNameGrants(t *testing.T) {
	grants, err := contract.ParseGrants("dev-team=shop.xcc.test", skydnsrecord.DefaultDomain)
	if err != nil {
		t.Fatal(err)
	}
	addrs := contract.Addresses{IPv4: []string{"10.1.0.1"}}
	for _, tt := range []struct {
		ns, hostname string
		grants       contract.Grants
		want         string // the multi-cluster name; "": refused
	}{
		{"dev-team", "cart.shop.xcc.test", grants, "cart.shop.xcc.test"},
		{"dev-team", "cart.shop.xcc.test", contract.Grants{}, ""},
		{"other", "cart.shop.xcc.test", grants, ""},
		{"dev-team", "a.cart.shop.xcc.test", grants, ""},
		{"dev-team", "web.dev-team.names.xcc.test", grants, "web.dev-team.names.xcc.test"},
		{"dev-team", "web.other.names.xcc.test", grants, ""},
	} {
		src := contract.Source{Namespace: tt.ns, GatewayDNS: "gw", Cluster: "cluster-a", Kind: contract.KindName, Hostname: tt.hostname}
		slice := contract.Build(src, addrs)[0]
		slice.Namespace = DefaultNamespace
		records, name, problems := sliceRecords(slice, skydnsrecord.DefaultDomain, tt.grants)
		if name != tt.want || len(records) != 0 || (tt.want == "") != (len(problems) > 0) {
			t.Errorf("%s from %s (grants %q): name %q records %v problems %v; want name %q", tt.hostname, tt.ns, tt.grants.String(), name, records, problems, tt.want)
		}
	}
}
