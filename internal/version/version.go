// Package version is the version and commit a binary was built from. The
// Makefile and the image builder (tools/image) stamp them with
// -ldflags "-X github.com/xcc-dns/xcc-dns/internal/version.Version=...";
// a plain `go build` leaves the defaults, which say so.
package version

import (
	"fmt"
	"runtime"
)

// Stamped at link time; variables, not constants, so -X can set them.
var (
	// Version is the release, the charts' appVersion.
	Version = "dev"
	// Commit is the git commit, with "-dirty" when the tree had changes.
	Commit = "unknown"
)

// String is the one-line form `xcc-syncer version` prints.
func String(program string) string {
	return fmt.Sprintf("%s %s (commit %s, %s, %s/%s)", program, Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
