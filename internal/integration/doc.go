// Package integration holds tests that follow a record across packages,
// from the management cluster's objects to a DNS answer, in one process.
// It has no code of its own.
package integration
