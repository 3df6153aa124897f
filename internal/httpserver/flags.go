package httpserver

import "flag"

// AddressFlag registers --http-address, the address of /healthz, /readyz
// and /metrics, on fs with p as its target and value as its default;
// ready says when the role's /readyz answers 200.
func AddressFlag(fs *flag.FlagSet, p *string, value, ready string) {
	fs.StringVar(p, "http-address", value, "address of /healthz, /readyz (200 "+ready+") and /metrics")
}
