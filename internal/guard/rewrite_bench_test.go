package guard

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/contract"
)

// BenchmarkRewriteRegex is what the rewrite plugin does with each query
// that reaches it: FindStringSubmatch of each rule's regex on the name,
// in order, until one matches. rule-1 is the guard's first rule, the
// gateway wildcard's, which checks every label below the gateway;
// end-anchored is the rule the Corefile had for it before the guard,
// `\.(gateway\.[^.]+\.[^.]+\.clusters\.<zone>)\.$`, which checks nothing
// below it; rule-2 and rule-3 are the gateways' wildcard and the headless
// name; all-rules tries the guard's rules in turn, as the plugin does.
func BenchmarkRewriteRegex(b *testing.B) {
	const zone = "xcc.test"
	var rules []*regexp.Regexp
	for _, r := range Forward(zone, contract.Shapes(zone, contract.Grants{})).Rewrites {
		rules = append(rules, regexp.MustCompile(r.Regex))
	}
	endAnchored := regexp.MustCompile(`\.(gateway\.[^.]+\.[^.]+\.clusters\.xcc\.test)\.$`)
	for _, name := range []struct{ what, name string }{
		{"gateway", "kuard.gateway.cluster-a.dev-team.clusters.xcc.test."},
		{"other", "shop.dev-team.names.xcc.test."},
	} {
		tries := []struct {
			what  string
			rules []*regexp.Regexp
		}{{"end-anchored", []*regexp.Regexp{endAnchored}}}
		for i, r := range rules {
			tries = append(tries, struct {
				what  string
				rules []*regexp.Regexp
			}{fmt.Sprintf("rule-%d", i+1), []*regexp.Regexp{r}})
		}
		tries = append(tries, struct {
			what  string
			rules []*regexp.Regexp
		}{"all-rules", rules})
		for _, re := range tries {
			b.Run(name.what+"/"+re.what, func(b *testing.B) {
				for b.Loop() {
					for _, r := range re.rules {
						if r.FindStringSubmatch(name.name) != nil {
							break
						}
					}
				}
			})
		}
	}
}
