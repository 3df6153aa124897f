package corefile

import "testing"

// TestImportGlobs: managed distributions (AKS, DigitalOcean) ship a Corefile
// that imports user snippets by glob from a mounted ConfigMap. The files are
// not here when patching; CoreDNS's parser treats a glob matching nothing as
// empty, so such a Corefile can still be patched.
func TestImportGlobs(t *testing.T) {
	const managed = `.:53 {
    errors
    ready
    health
    kubernetes cluster.local in-addr.arpa ip6.arpa {
      pods insecure
      fallthrough in-addr.arpa ip6.arpa
    }
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
    import custom/*.override
}
import custom/*.server
`
	got, action, err := Patch(managed, Options{ForwardTo: forwardTo})
	if err != nil || action != Added || got != managed+"\n"+blockFor {
		t.Fatalf("Patch = %q, %v:\n%s", action, err, got)
	}
}
