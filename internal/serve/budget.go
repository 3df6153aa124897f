package serve

import "sync"

// DefaultMaxRecords bounds the records every slice of the namespace
// together may publish. A cluster of 10,000 gateways holds about 43,000
// keys; the bound is there so that a flood of slices cannot fill etcd's
// quota and stop every other record from being written.
const DefaultMaxRecords = 200_000

// budget admits each slice's records while the total stays within max.
// Slices are admitted as they are synced; a full reconcile admits them
// oldest first, so new slices cannot push out ones already served.
type budget struct {
	mu    sync.Mutex
	max   int
	used  map[string]int // owner -> records admitted
	total int
}

func newBudget(max int) *budget {
	return &budget{max: max, used: map[string]int{}}
}

// admit reports whether owner may publish n records, counting what it
// published before as free. A refused owner holds nothing afterwards.
func (b *budget) admit(owner string, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= b.used[owner]
	delete(b.used, owner)
	if n == 0 {
		return true
	}
	if b.total+n > b.max {
		return false
	}
	b.used[owner] = n
	b.total += n
	return true
}

// reset forgets every admission, before a full reconcile admits again.
func (b *budget) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.used)
	b.total = 0
}
