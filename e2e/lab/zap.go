package lab

import "go.uber.org/zap"

// nopLogger keeps the etcd client's own logging out of the lab's output.
func nopLogger() *zap.Logger { return zap.NewNop() }
