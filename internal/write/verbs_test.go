package write_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// verbs are the write verbs of client-go's typed clients.
var verbs = map[string]bool{"Create": true, "Update": true, "UpdateStatus": true, "Delete": true, "Patch": true, "Apply": true, "ApplyStatus": true}

// management are the files that write into the management cluster, whose
// objects (status, the controller's state) are not a workload cluster's.
var management = map[string]bool{
	"controller/state/state.go":      true,
	"controller/state/clusterset.go": true,
	"controller/mgmt/status.go":      true,
	"controller/mgmt/finalizer.go":   true,
	"controller/discoverystatus.go":  true,
}

// The reconcilers plan; only package write calls a workload client's
// write verbs. A call of a verb is allowed in a method of the same name
// (a client that wraps another: bounded, observed, recorded), to package
// apply and eastwest (whose Apply plans the MCS objects, or an export's
// Gateway API objects, and calls package write), and
// in the files that write into the management cluster.
func TestOnlyPackageWriteCallsWriteVerbs(t *testing.T) {
	var bad []string
	for _, root := range []string{"../controller", "../mcs"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel("..", path)
			if management[filepath.ToSlash(rel)] {
				return nil
			}
			bad = append(bad, verbCalls(t, path)...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bad {
		t.Errorf("%s: a write verb called outside package write", b)
	}
}

// verbCalls are the positions of the write verb calls of the file at
// path, those of a method of the verb's own name left out.
func verbCalls(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !verbs[sel.Sel.Name] {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && (pkg.Name == "write" || pkg.Name == "apply" || pkg.Name == "eastwest" || pkg.Name == "slices" || pkg.Name == "maps") {
				return true
			}
			if fn.Recv != nil && fn.Name.Name == sel.Sel.Name {
				return true
			}
			out = append(out, fset.Position(call.Pos()).String())
			return true
		})
	}
	return out
}
