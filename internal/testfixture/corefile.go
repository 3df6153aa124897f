package testfixture

import (
	"bytes"
	_ "embed"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module is the main module's path, as its go.mod names it.
const module = "github.com/xcc-dns/xcc-dns"

// KubeadmCorefile is the Corefile kubeadm installs in kube-system/coredns,
// the one patch-corefile patches. The main module's tests read it from
// kubeadm.Corefile only; the e2e module, which cannot import this one,
// keeps the walkthrough's (e2e/lab/seed.go).
//
//go:embed kubeadm.Corefile
var KubeadmCorefile string

// RepoFile returns the contents of a file of this repository, path
// relative to the main module's root (e.g. "cmd/coredns/Corefile"). The
// root is the first directory above the test's working directory (its
// package's) whose go.mod is the main module's.
func RepoFile(t testing.TB, path string) []byte {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module "+module+"\n")) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of %s above the working directory", module)
		}
		dir = parent
	}
}

// ShippedCorefile is cmd/coredns/Corefile, the Corefile of our DNS server
// as the workload chart ships it.
func ShippedCorefile(t testing.TB) string {
	t.Helper()
	return string(RepoFile(t, "cmd/coredns/Corefile"))
}

// WithReverse appends to the shipped Corefile the server block the
// workload chart renders for its value reverseCIDRs (comma-separated).
func WithReverse(corefile string, cidrs string) string {
	var keys []string
	for c := range strings.SplitSeq(cidrs, ",") {
		keys = append(keys, c+":{$DNS_PORT}")
	}
	return corefile + "\n# Reverse zones of the reverse CIDRs: PTR records only (the xcc-reverse snippet).\n" +
		strings.Join(keys, " ") + " {\n    import xcc-reverse\n}\n"
}
