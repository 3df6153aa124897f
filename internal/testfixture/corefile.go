package testfixture

import (
	"bytes"
	_ "embed"
	"os"
	"path/filepath"
	"testing"

	"github.com/xcc-dns/xcc-dns/internal/guard"
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
// relative to the main module's root (e.g. "charts/xcc-dns-workload/files/Corefile"). The
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

// ShippedCorefile is the workload chart's files/Corefile, the top-level
// Corefile of our DNS server; it imports the guard file (GuardEnv).
func ShippedCorefile(t testing.TB) string {
	t.Helper()
	return string(RepoFile(t, "charts/xcc-dns-workload/files/Corefile"))
}

// GuardEnv writes the guard file of cfg into a directory of the test, as
// `xcc-syncer corefile` does at pod start, and sets the environment the
// shipped Corefile reads it and its zone from (XCC_GUARD, XCC_ZONE).
func GuardEnv(t testing.TB, cfg guard.Config) {
	t.Helper()
	var b bytes.Buffer
	if err := guard.Write(&b, cfg); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "guard.conf")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XCC_GUARD", path)
	t.Setenv("XCC_ZONE", cfg.Zone)
}
