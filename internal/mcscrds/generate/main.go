// Command generate writes the MCS CRDs into the workload chart (run by
// make generate, from the repository's root).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/xcc-dns/xcc-dns/internal/mcscrds"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate MCS CRDs:", err)
		os.Exit(1)
	}
}

func run() error {
	version, err := mcscrds.ModuleVersion()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(mcscrds.Dir, 0o755); err != nil {
		return err
	}
	for _, f := range mcscrds.Files(version) {
		if err := os.WriteFile(filepath.Join(mcscrds.Dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
