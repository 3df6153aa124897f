// Command image builds the xcc-dns container images without a container
// daemon and pushes them: each binary is cross-compiled static, put as the
// only layer on an empty base, and the images of every platform are joined
// in one OCI image index, written as an OCI image layout.
//
//	image build -src <repo> -out bin/images -version 0.1.0 -commit <sha> xcc-syncer coredns
//	image push  -layouts bin/images -registry registry.example.com/xcc-dns -tag 0.1.0 xcc-syncer coredns
//
// It is a module of its own so that go-containerregistry's dependencies
// never move the pins of the main module.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `usage: image <build|push> [flags] <binary>...

binaries: %s
Run "image <build|push> -h" for the flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "build" && args[0] != "push") {
		fmt.Fprintf(os.Stderr, usage, strings.Join(binaryNames(), ", "))
		os.Exit(2)
	}
	fs := flag.NewFlagSet(args[0], flag.ExitOnError)
	switch args[0] {
	case "build":
		var o buildOptions
		var platforms string
		fs.StringVar(&o.Src, "src", ".", "root of the xcc-dns main module")
		fs.StringVar(&o.Out, "out", "bin/images", "directory of the OCI image layouts, one per binary")
		fs.StringVar(&o.Version, "version", "", "version stamped into the binaries and labels, and the layout's tag (the charts' appVersion)")
		fs.StringVar(&o.Commit, "commit", "", "git commit stamped into the binaries and labels")
		fs.StringVar(&o.Source, "source", defaultSource, "org.opencontainers.image.source label")
		fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list, one image per platform in each index")
		_ = fs.Parse(args[1:])
		ps, err := parsePlatforms(platforms)
		if err != nil {
			return err
		}
		o.Platforms = ps
		o.Binaries = fs.Args()
		_, err = build(ctx, o)
		return err
	default:
		var o pushOptions
		fs.StringVar(&o.Layouts, "layouts", "bin/images", "directory of the OCI image layouts written by build")
		fs.StringVar(&o.Registry, "registry", "", "registry and path the images go to, e.g. registry.example.com/xcc-dns")
		fs.StringVar(&o.Tag, "tag", "", "tag of every image (the charts' appVersion)")
		fs.BoolVar(&o.Insecure, "insecure", false, "talk plain HTTP to the registry (loopback and private addresses already do)")
		_ = fs.Parse(args[1:])
		o.Binaries = fs.Args()
		return push(ctx, o)
	}
}
