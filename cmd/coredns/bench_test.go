package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// wildcardGuard are the expressions of the Corefile's template for
	// names with an `any` or `*` label.
	wildcardGuard = []string{`^(\*|any)\.`, `\.(\*|any)\.`}
	// oneExpressionGuard is the same test in one expression, for comparison.
	oneExpressionGuard = `(^|\.)(\*|any)\.`
)

// anyTypeMatches returns the `match` expressions of the shipped Corefile's
// `template ANY ANY` blocks in their order: the ones the template plugin
// tries on an A query before passing it on (the others stop at the type).
func anyTypeMatches(tb testing.TB) []string {
	tb.Helper()
	text, err := os.ReadFile("Corefile")
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	anyType := false
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "template":
			anyType = f[2] == "ANY"
		case len(f) >= 2 && f[0] == "match" && anyType:
			out = append(out, f[1:]...)
		}
	}
	return out
}

// BenchmarkTemplateMatch is the template plugin's work on an A query that
// misses the cache and goes on to the etcd plugin: every ANY-type block's
// expression tried against the name, with the wildcard-label guard as
// shipped, without it, and with it as one expression.
func BenchmarkTemplateMatch(b *testing.B) {
	shipped := anyTypeMatches(b)
	without := slices.DeleteFunc(slices.Clone(shipped), func(e string) bool { return slices.Contains(wildcardGuard, e) })
	if len(without) != len(shipped)-len(wildcardGuard) {
		b.Fatalf("the Corefile's templates %q lack the guard %q", shipped, wildcardGuard)
	}
	for _, bc := range []struct {
		what  string
		exprs []string
	}{
		{"shipped", shipped},
		{"without-guard", without},
		{"one-expression-guard", append([]string{oneExpressionGuard}, without...)},
	} {
		var res []*regexp.Regexp
		for _, e := range bc.exprs {
			res = append(res, regexp.MustCompile(e))
		}
		// Names as the template plugin sees them: below gateway. already
		// rewritten onto the gateway.
		for _, q := range []struct{ what, name string }{
			{"gateway", "gateway.cluster-0042.dev-team.clusters.xcc.test."},
			{"api", "api.cluster-0042.dev-team.clusters.xcc.test."},
		} {
			b.Run(bc.what+"/"+q.what, func(b *testing.B) {
				for b.Loop() {
					for _, re := range res {
						if re.MatchString(q.name) {
							b.Fatalf("%s matches %s", re, q.name)
						}
					}
				}
			})
		}
	}
}
