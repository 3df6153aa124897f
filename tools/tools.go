//go:build tools

// Package tools records the tool modules this module pins; the Makefile
// builds each with `go build -C tools <package>`.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
)
