package corefile

import (
	"fmt"
	"strings"

	"github.com/coredns/caddy/caddyfile"
)

// envRefs open every substitution CoreDNS's Corefile parser makes:
// it replaces {$NAME} and {%NAME%} in any word (server block key,
// directive, argument, quoted or not, an import's path) with the
// environment variable NAME, whatever NAME holds (so {$NAME:default}
// reads a variable named "NAME:default"). A word holding either opening
// counts, closed or not, which errs on the side of refusing.
var envRefs = []struct{ start, form string }{{"{$", "{$...}"}, {"{%", "{%...%}"}}

// readsEnvironment refuses a Corefile that CoreDNS's parser would fill
// from the environment of the process parsing it. The Corefile is a
// workload cluster admin's text; parsed by explain or patch-corefile on
// the operator's machine, or by serve in its pod, the values would land
// in what is printed, in error messages and in the ConfigMap written
// back. The words are the parser's own (its lexer, before any
// substitution), so a form in a comment is no refusal. The message names
// the line, never the word, which may be anything.
func readsEnvironment(text string) error {
	d := caddyfile.NewDispenser(fileName, strings.NewReader(text))
	for d.Next() {
		for _, ref := range envRefs {
			if strings.Contains(d.Val(), ref.start) {
				return fmt.Errorf("the Corefile reads environment variables (%s on line %d): "+
					"xcc-dns does not parse such a Corefile, as its parse here would hold this machine's environment, not the one of the pods that run it; "+
					"write the value in the Corefile instead", ref.form, d.Line())
			}
		}
	}
	return nil
}
