package coredns

import (
	"slices"
	"testing"
)

// TestDirectivesFollowUpstream checks that this build runs its plugins in
// CoreDNS's own order but for one deliberate exception: cache before rewrite.
func TestDirectivesFollowUpstream(t *testing.T) {
	pos := map[string]int{}
	for i, d := range Upstream {
		pos[d] = i
	}
	for _, d := range Directives {
		if _, ok := pos[d]; !ok {
			t.Fatalf("%q is not a CoreDNS directive", d)
		}
	}
	if slices.Index(Directives, "cache") > slices.Index(Directives, "rewrite") {
		t.Errorf("cache runs after rewrite: every cache hit would pay the rewrite rule")
	}
	for i, a := range Directives {
		for _, b := range Directives[i+1:] {
			if a == "cache" && b == "rewrite" {
				continue
			}
			if pos[a] > pos[b] {
				t.Errorf("%s runs before %s here, after it in CoreDNS", a, b)
			}
		}
	}
}
