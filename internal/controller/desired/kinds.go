package desired

import "github.com/xcc-dns/xcc-dns/internal/contract"

// kind is one kind of name a GatewayDNS publishes. Its add reads the
// clusters Compute admitted (computation.admitted) and adds the kind's
// slices to the Result, and to each cluster's status entry what the kind
// says of it. Every kind has this one signature, so a new kind of name
// is one more entry in kinds, with its table test.
type kind struct {
	kind contract.Kind
	add  func(*computation)
}

// kinds are the kinds of name in the order Compute adds them: a kind may
// read what an earlier one left in an entry (the gateways name reads the
// gateway name's addresses), and the notes of an entry's message come in
// this order.
//
// The reverse names are none of them: serve derives each PTR from the
// A/AAAA records it publishes (serve.WithReverseRecords), and what a
// cluster claims for them is read from its status entry (ClusterClaims).
var kinds = []kind{
	{contract.KindAPI, addAPI},
	{contract.KindGateway, addGateway},
	{contract.KindGateways, addGateways},
	{contract.KindHeadless, addHeadless},
	{contract.KindName, addNames},
}
