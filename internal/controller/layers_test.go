package controller

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path every package of the project starts with.
const module = "github.com/xcc-dns/xcc-dns/internal/"

// below says, of each package of the write and read path, which of the
// project's packages it may import: the layering of docs/architecture.md,
// from the bottom. A package not listed may import any.
var below = map[string][]string{
	"printable":  {},
	"kubeconfig": {},
	"kubeclient": {"printable"},
	// The rules every write into a workload cluster follows.
	"write": {"kubeclient", "printable"},
	// The MCS domain, pure but for apply's calls through write.
	"mcs/aggregate": {},
	"mcs/objects":   {"cidr", "contract", "mcs/aggregate", "owned", "printable", "skydnsrecord", "api/v1alpha1"},
	"mcs/eastwest":  {"mcs/aggregate", "mcs/objects", "printable", "write"},
	"mcs/apply":     {"kubeclient", "printable", "mcs/aggregate", "mcs/objects", "owned", "write", "cidr", "contract", "skydnsrecord", "api/v1alpha1"},
	// The engine both reconcilers share.
	"controller/lane": {"kubeclient", "printable"},
	// The connections and caches: they read for both reconcilers and
	// know neither's domain; the kinds of the writer's own objects are
	// the writer's (workload.OwnKind), and what a cached ServiceExport
	// keeps is the reader's (workload.Config.ExportCache).
	"controller/workload": {"contract", "kubeclient", "kubeconfig", "printable", "watch", "cidr", "owned", "skydnsrecord", "api/v1alpha1"},
	"controller/desired":  {"api/v1alpha1", "cidr", "contract", "kubeconfig", "owned", "skydnsrecord"},
}

// Each package imports only what is below it: no writer depends on a
// reconciler, the connections know no reconciler's domain, and the rules
// of writing depend on nothing but the client errors.
func TestLayers(t *testing.T) {
	for pkg, allowed := range below {
		for _, imp := range imports(t, filepath.Join("..", filepath.FromSlash(pkg))) {
			if !slices.Contains(allowed, imp) {
				t.Errorf("internal/%s imports internal/%s, which is not below it (docs/architecture.md)", pkg, imp)
			}
		}
	}
}

// imports are the project's packages the non-test files of dir import,
// relative to internal/.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if rel, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out
}
