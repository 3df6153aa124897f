package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/xcc-dns/xcc-dns/internal/version"
)

func init() { subcommands["version"] = runVersion }

// runVersion is `xcc-syncer version`: the version and commit stamped at
// build time, so an image's binary can say what it was built from.
func runVersion(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("version", flag.ExitOnError)
	_ = fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("version takes no arguments, got %q", fs.Args())
	}
	_, err := fmt.Fprintln(os.Stdout, version.String("xcc-syncer"))
	return err
}
