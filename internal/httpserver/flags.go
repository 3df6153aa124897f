package httpserver

import "flag"

// AddressFlag registers --http-address, the address of /healthz, /readyz
// and /metrics, on fs with p as its target and value as its default.
func AddressFlag(fs *flag.FlagSet, p *string, value string) {
	fs.StringVar(p, "http-address", value, "address of /healthz, /readyz and /metrics")
}
