package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xcc-dns/xcc-dns/internal/contract"
	"github.com/xcc-dns/xcc-dns/internal/guard"
	"github.com/xcc-dns/xcc-dns/internal/serve"
)

func init() { subcommands["corefile"] = runCorefile }

// runCorefile is `xcc-syncer corefile --out FILE [serve's flags]`: writes
// the file the DNS server's top-level Corefile imports (internal/guard),
// generated from the name grammar for the zone, grants, reverse CIDRs and
// clusterset zone serve has. It takes every flag of serve, so the chart passes it the very
// list serve gets and the two cannot disagree.
func runCorefile(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("corefile", flag.ExitOnError)
	var o serve.Options
	o.AddFlags(fs)
	out := fs.String("out", "-", "file to write; - writes to standard output")
	_ = fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	grants, err := contract.ParseGrants(o.NameGrants, o.Domain)
	if err != nil {
		return fmt.Errorf("--name-grants: %w", err)
	}
	cfg := guard.Config{Zone: o.Domain, Grants: grants, ReverseCIDRs: o.ReverseCIDRs, ClusterSetZone: o.ServedClusterSetZone()}
	if *out == "-" {
		return guard.Write(os.Stdout, cfg)
	}
	// Written whole and renamed: CoreDNS never reads half a file.
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".corefile-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	defer os.Remove(tmp.Name())
	err = errors.Join(guard.Write(tmp, cfg), tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), *out)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	return nil
}
