// Package e2e holds the end-to-end tests: one lab (see package lab) shared
// by every test, and a real DNS client asking cluster-b's cluster DNS what
// a pod in cluster-b would ask.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/xcc-dns/xcc-dns/e2e/lab"
)

const labStartTimeout = 10 * time.Minute

// theLab is the lab every test uses.
var theLab *lab.Lab

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "xcc-dns-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: create lab dir:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), labStartTimeout)
	defer cancel()
	began := time.Now()
	theLab, err = lab.Start(ctx, lab.Options{Dir: dir, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: lab did not start:", err)
		fmt.Fprintln(os.Stderr, "e2e: files and logs kept in", dir)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: lab started in %s\n", time.Since(began).Round(100*time.Millisecond))
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAILED; last lines of every process's log:\n%s\n", theLab.Tails())
	}
	theLab.Stop()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: files and logs kept in", dir)
	} else {
		os.RemoveAll(dir)
	}
	return code
}
