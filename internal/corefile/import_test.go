package corefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

// TestImportOfLocalFilesRefused: a Corefile is a workload cluster admin's
// text; an import of a path that names files of the machine patching it
// (the operator's kubeconfig, /etc/passwd) would read them into the
// parse, and its errors (an unknown directive named by its text) into
// what patch-corefile prints. Such an import is refused, naming its
// line, never the files' content; an import that names a snippet of the
// Corefile, or a glob matching nothing here, is not.
func TestImportOfLocalFilesRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(secret, []byte("SECRET-TOKEN abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{secret, filepath.Join(dir, "kube*"), `"` + secret + `"`} {
		corefile := ".:53 {\n    errors\n    import " + pattern + "\n    forward . /etc/resolv.conf\n}\n"
		_, _, err := Patch(corefile, Options{ForwardTo: forwardTo})
		if err == nil || !strings.Contains(err.Error(), "line 3") || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Patch of a Corefile importing %s: %v; want a refusal naming line 3, not the file's content", pattern, err)
		}
		if err := Validate(corefile, ""); err == nil || !strings.Contains(err.Error(), "line 3") || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Validate of a Corefile importing %s: %v; want a refusal naming line 3", pattern, err)
		}
	}
	snippet := "(common) {\n    errors\n}\n.:53 {\n    import common\n    forward . /etc/resolv.conf\n}\n"
	if _, _, err := Patch(snippet, Options{ForwardTo: forwardTo}); err != nil {
		t.Errorf("a snippet's import: %v", err)
	}
}
