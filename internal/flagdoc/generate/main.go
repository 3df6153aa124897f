// Command generate writes the flag tables of the READMEs from the flag
// sets of the xcc-syncer subcommands (run by make generate, from the
// repository's root).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/xcc-dns/xcc-dns/internal/controller"
	"github.com/xcc-dns/xcc-dns/internal/flagdoc"
	"github.com/xcc-dns/xcc-dns/internal/serve"
)

// tables lists each generated table: the file, the command it documents
// and that command's flags.
var tables = []struct {
	file, command string
	add           func(*flag.FlagSet)
}{
	{"README.md", "xcc-syncer serve", func(fs *flag.FlagSet) { new(serve.Options).AddFlags(fs) }},
	{"internal/controller/README.md", "xcc-syncer controller", func(fs *flag.FlagSet) { new(controller.Options).AddFlags(fs) }},
}

func main() {
	for _, t := range tables {
		if err := write(t.file, t.command, t.add); err != nil {
			fmt.Fprintln(os.Stderr, "generate flag tables:", err)
			os.Exit(1)
		}
	}
}

func write(file, command string, add func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	add(fs)
	doc, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := flagdoc.Replace(doc, command, flagdoc.Table(fs))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return os.WriteFile(file, out, 0o644)
}
